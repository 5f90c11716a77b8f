"""The `synonym-recovery` command: how close each system's vector for a rare synonym comes to the replaced
word's embedding.

Commands of `python -m bertram_experiments`, registered on its `app.app`; each imports its step when it runs, so
`--help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from spacy_bertram.project_support import (
    DEFAULT_MAX_ZIPF,
    FORCE_FILE_HELP,
    GPU_HELP,
    INT8_ENCODER_HELP,
    MAX_ZIPF_HELP,
    check_gpu,
    check_made_by,
    check_max_zipf,
    check_model,
    check_output_file,
    check_store,
    count_range,
    run_checked,
    setup_logging,
)

from ..app import app
from ..rare_word_folds import parse_fold
from ..outputs import RARIFIED_ITEMS


@app.command("synonym-recovery")
def synonym_recovery_cmd(
    model: Path = typer.Argument(..., metavar="MODEL", help="trained BERTRAM model directory"),
    rarified: Optional[List[Path]] = typer.Option(
        None,
        metavar="DIR",
        help="a rarify output (test.jsonl; its further seeds' sets too); repeat the option for more sets",
    ),
    wordnet: bool = typer.Option(
        False,
        "--wordnet",
        help="also WordNet synonym pairs: a rare lemma and a frequent one-wordpiece lemma of one synset",
    ),
    store: Optional[Path] = typer.Option(
        None, help="contexts.sqlite from `prepare`: adds the systems with store contexts"
    ),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    fold: Optional[str] = typer.Option(
        None, help="score one fold of the rare words only, I/K (e.g. 0/2; split by rare word with a fixed seed)"
    ),
    bootstrap: int = typer.Option(
        2000, **count_range("resamples"), help="paired bootstrap resamples (of original words) for the 95% CIs"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the pair sample and of the bootstrap"),
    max_pairs: int = typer.Option(
        2000, **count_range("items"), help="at most N pairs per source (rarified, WordNet): a seeded sample"
    ),
    max_zipf: float = typer.Option(DEFAULT_MAX_ZIPF, help=MAX_ZIPF_HELP),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    wordnet_dir: Optional[Path] = typer.Option(None, help="directory with the WordNet 3.0 dict files"),
    context_window: Optional[int] = typer.Option(
        None,
        **count_range("window"),
        help="words on each side of the rare word in its text (the "
        "text systems; default: the component's context_window)",
    ),
    int8_encoder: bool = typer.Option(False, "--int8-encoder", help=INT8_ENCODER_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Cosine, rank and hits@10 of the replaced word's embedding for each system's vector of a rare
    synonym: subword mean vs BERTRAM (form, text, store contexts), paired bootstrap CIs."""
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    if fold is not None:
        run_checked(parse_fold, fold)
    if output is not None:
        run_checked(check_output_file, output, command="synonym-recovery", force=force)
    for directory in rarified or []:
        run_checked(check_made_by, directory, "--rarified", "rarify", RARIFIED_ITEMS)
    run_checked(check_model, model)
    if store is not None:
        run_checked(check_store, store, "--store")
    run_checked(check_gpu, gpu_id)
    from .recovery import format_markdown
    from .systems import evaluate_synonym_recovery

    setup_logging()
    metrics = run_checked(
        evaluate_synonym_recovery,
        model,
        rarified=rarified or [],
        wordnet=wordnet,
        store=store,
        output=output,
        fold=fold,
        n_resamples=bootstrap,
        seed=seed,
        max_pairs=max_pairs,
        max_zipf=max_zipf,
        gpu_id=gpu_id,
        wordnet_dir=wordnet_dir,
        context_window=context_window,
        int8_encoder=int8_encoder,
    )
    typer.echo("\n".join(format_markdown(metrics)))
