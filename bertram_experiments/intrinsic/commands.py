"""The `similarity` and `intrinsic` commands: word-level scores on word-similarity sets and on real rare words.

Commands of `python -m bertram_experiments`, registered on its `app.app`; each imports its step when it runs, so
`--help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from spacy_bertram.project_support import (
    FORCE_FILE_HELP,
    GPU_HELP,
    check_gpu,
    check_model,
    check_output_file,
    check_store,
    count_range,
    echo_json,
    run_checked,
    setup_logging,
)

from ..app import app
from ..rare_word_folds import parse_fold


@app.command("similarity")
def similarity_cmd(
    pairs: Path = typer.Argument(..., help="TSV of word, rare word, human score (a header line is skipped)"),
    contexts: Path = typer.Argument(
        ..., help="a directory of <rare word>.txt files (one context per line) or contexts.sqlite"
    ),
    bertram: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    max_contexts: int = typer.Option(16, **count_range("contexts"), help="contexts per rare word"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Spearman's rho between human scores and cosines in the encoder's input-embedding space."""
    if output is not None:
        run_checked(check_output_file, output, command="similarity", force=force)
    run_checked(check_model, bertram, "BERTRAM")
    if not contexts.is_dir():
        run_checked(check_store, contexts, "CONTEXTS")
    run_checked(check_gpu, gpu_id)
    from .similarity_eval import evaluate_similarity_files

    setup_logging()
    metrics = run_checked(
        evaluate_similarity_files, pairs, contexts, bertram, output=output, max_contexts=max_contexts, gpu_id=gpu_id
    )
    echo_json(metrics["results"])


@app.command("intrinsic")
def intrinsic_cmd(
    model: Path = typer.Argument(..., metavar="MODEL", help="trained BERTRAM model directory"),
    crw: Optional[Path] = typer.Option(
        None,
        help="CRW directory: pairs.tsv (word, rare word, score; no header) "
        "and contexts/<rare word>.txt (one sentence per line)",
    ),
    card: Optional[Path] = typer.Option(
        None,
        help="Card-660 pairs TSV (word, word, score; no header), or its "
        "directory; only pairs of two single alphabetic words are kept",
    ),
    chimera: Optional[Path] = typer.Option(
        None, help="Chimeras directory with dataset.l{2,4,6}.fixed.{train,test}.txt (whichever exist)"
    ),
    store: Optional[Path] = typer.Option(
        None,
        help="contexts.sqlite (or a directory of <word>.txt files): "
        "contexts for Card-660's second words; without it Card-660 is "
        "scored form only",
    ),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    bootstrap: int = typer.Option(
        2000,
        **count_range("resamples"),
        help="paired bootstrap resamples for the 95% CI of each system's difference to the baseline",
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the bootstrap's random generator"),
    skip_missing: bool = typer.Option(
        False, "--skip-missing", help="skip sets whose path does not exist (and say so) instead of failing"
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    dictionary: Optional[Path] = typer.Option(
        None,
        help="a definition store from `dictionary`: adds bertram_dict "
        "and bertram_both for CRW and Card-660, and their coverage",
    ),
    fold: Optional[str] = typer.Option(
        None,
        help="score one fold of the rare words only, I/K (e.g. 0/2; split by "
        "rare word with a fixed seed; Chimeras by item)",
    ),
    context_window: Optional[int] = typer.Option(
        None,
        **count_range("window"),
        help="also fed_window: CRW's contexts cut to this many "
        "tokens on each side of the word, as the component cuts a doc's",
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Spearman on real rare words (CRW, Card-660, Chimeras): subword mean vs BERTRAM, paired bootstrap CIs."""
    if fold is not None:
        run_checked(parse_fold, fold)
    if output is not None:
        run_checked(check_output_file, output, command="intrinsic", force=force)
    run_checked(check_model, model)
    if store is not None and not store.is_dir():
        run_checked(check_store, store, "--store")
    run_checked(check_gpu, gpu_id)
    from .intrinsic import evaluate_intrinsic, format_table

    setup_logging()
    metrics = run_checked(
        evaluate_intrinsic,
        model,
        crw=crw,
        card=card,
        chimera=chimera,
        store=store,
        output=output,
        n_resamples=bootstrap,
        seed=seed,
        gpu_id=gpu_id,
        skip_missing=skip_missing,
        dictionary=dictionary,
        fold=fold,
        context_window=context_window,
    )
    typer.echo(format_table(metrics), nl=False)
