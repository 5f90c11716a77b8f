"""The `split`, `train-baseline` and `rarify` commands: rarified test sets and the baseline that guides them.

Commands of `python -m bertram_experiments`, registered on its `app.app`; each imports its step when it runs, so
`--help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from spacy_bertram.project_support import (
    FORCE_HELP,
    GPU_HELP,
    check_gpu,
    check_made_by,
    check_max_zipf,
    check_output_dir,
    count_range,
    echo_json,
    number_in,
    run_checked,
    setup_logging,
)

from ..app import app
from ..outputs import BASELINE_OUTPUTS, RARIFY_OUTPUTS, SPLIT_DOCBINS, SPLIT_OUTPUTS, SPLIT_RECORDS
from .seed_sets import parse_seeds


@app.command("split")
def split_cmd(
    dataset: str = typer.Argument(..., help="bbc, rotten_tomatoes, ag_news, dbpedia, mnli, or a JSONL path"),
    output_dir: Path = typer.Argument(..., help="where train/dev/test_candidates.jsonl and train/dev.spacy go"),
    assets: Optional[Path] = typer.Option(None, help="assets directory (default: ./assets)"),
    max_words: int = typer.Option(
        120, **count_range("words", low=0), help="keep the first N words of each text (0: all)"
    ),
    max_train: Optional[int] = typer.Option(None, **count_range("items"), help="at most N training texts (stratified)"),
    max_dev: Optional[int] = typer.Option(None, **count_range("items"), help="at most N dev texts"),
    max_test: Optional[int] = typer.Option(None, **count_range("items"), help="at most N test candidates"),
    dev_fraction: float = typer.Option(
        0.1, parser=number_in(0, 1, high_open=True), help="share of the training part used as dev"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the split, the sampling and the augmentation"),
    candidates_from: str = typer.Option(
        "test",
        help="test candidates from the dataset's test split ('test') or from the training texts that train and "
        "dev did not draw ('unused-train': same train and dev, so the same classifier; many more candidates)",
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Split a dataset; the training DocBin gets the baseline's mask / "w / w" augmentation."""
    run_checked(check_output_dir, output_dir, SPLIT_OUTPUTS, command="split", force=force)
    from .baseline import make_splits

    echo_json(
        run_checked(
            make_splits,
            dataset,
            output_dir,
            assets=assets,
            max_words=max_words,
            max_train=max_train,
            max_dev=max_dev,
            max_test=max_test,
            dev_fraction=dev_fraction,
            seed=seed,
            candidates_from=candidates_from,
        )
    )


@app.command("train-baseline")
def train_baseline_cmd(
    splits_dir: Path = typer.Argument(..., help="output of `split` (train.spacy, dev.spacy)"),
    output_dir: Path = typer.Argument(..., help="trained pipelines: OUTPUT/model-best, model-last"),
    config: Path = typer.Option(Path("configs/textcat_minilm.cfg"), help="pipeline config to start from"),
    base_model: str = typer.Option("default", help="encoder name or path ('default': MiniLM)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    seed: int = typer.Option(0, **count_range("seed"), help="spaCy's training seed"),
    max_steps: int = typer.Option(300, **count_range("steps"), help="training steps"),
    eval_frequency: int = typer.Option(100, **count_range("steps"), help="steps between dev evaluations"),
    batch_size: int = typer.Option(1000, **count_range("batch"), help="padded words per batch"),
    learn_rate: float = typer.Option(1e-4, parser=number_in(0, low_open=True), help="Adam learning rate"),
    no_freeze: bool = typer.Option(
        False,
        "--no-freeze",
        help="train the embedding layer too (frozen by default: injected vectors stay in its space)",
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Train the rarification baseline (embedding layer frozen) with `spacy train`."""
    run_checked(check_output_dir, output_dir, BASELINE_OUTPUTS, command="train-baseline", force=force, replaces=True)
    run_checked(check_made_by, splits_dir, "SPLITS_DIR", "split", SPLIT_DOCBINS)
    run_checked(check_gpu, gpu_id)
    from .baseline import train_baseline

    setup_logging()
    info = run_checked(
        train_baseline,
        splits_dir / "train.spacy",
        splits_dir / "dev.spacy",
        output_dir,
        base_config=config,
        base_model=base_model,
        gpu_id=gpu_id,
        seed=seed,
        max_steps=max_steps,
        eval_frequency=eval_frequency,
        batch_size=batch_size,
        learn_rate=learn_rate,
        freeze=not no_freeze,
        force=force,
    )
    echo_json(info)


@app.command("rarify")
def rarify_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline (e.g. .../model-best)"),
    splits_dir: Path = typer.Argument(..., help="output of `split`"),
    output_dir: Path = typer.Argument(..., help="train/dev/test.spacy + test.jsonl + rarify.json"),
    counts: Path = typer.Option(..., help="word counts: prepare's counts.tsv, its directory, or contexts.sqlite"),
    max_zipf: float = typer.Option(
        2.0,
        help="a substitute is rare below this wordfreq Zipf (2: "
        "'fewer than 100 in WWC' as the paper puts it; 3: its '-1000' variant) and needs 2+ wordpieces",
    ),
    max_candidates: Optional[int] = typer.Option(None, **count_range("items"), help="at most N test candidates"),
    max_masks: int = typer.Option(5, **count_range("words"), help="words masked per item at most"),
    misspelling_rate: float = typer.Option(
        0.1, parser=number_in(0, 1), help="share of substitutions that are misspellings"
    ),
    seed: str = typer.Option(
        "0",
        help="rarification seed(s), comma-separated (0,1,2): they share one masking "
        "pass; the first seed's set goes to OUTPUT_DIR, each further seed N's to OUTPUT_DIR/seed-N",
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    wordnet_dir: Optional[Path] = typer.Option(None, help="directory with the WordNet 3.0 dict files"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bars"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Build the rarified test set (resumes an interrupted run)."""
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(parse_seeds, seed)
    run_checked(check_output_dir, output_dir, RARIFY_OUTPUTS, command="rarify", force=force)
    run_checked(check_made_by, splits_dir, "SPLITS_DIR", "split", SPLIT_RECORDS)
    run_checked(check_gpu, gpu_id)
    from .rarify_step import run_rarification

    setup_logging()
    echo_json(
        run_checked(
            run_rarification,
            model_dir,
            splits_dir,
            output_dir,
            counts,
            max_zipf=max_zipf,
            max_candidates=max_candidates,
            max_masks=max_masks,
            misspelling_rate=misspelling_rate,
            seed=seed,
            gpu_id=gpu_id,
            wordnet_dir=wordnet_dir,
            progress=not no_progress,
        )
    )
