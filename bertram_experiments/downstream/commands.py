"""The `evaluate`, `evaluate-originals`, `pool` and `assemble` commands: the baseline against BERTRAM-enhanced
pipelines on the rarified sets (and on the originals), pooled, and the pipeline ready for `spacy package`.

Commands of `python -m bertram_experiments`, registered on its `app.app`; each imports its step when it runs, so
`--help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from spacy_bertram import INJECTION_MODES
from spacy_bertram.project_support import (
    DEFAULT_CONTEXTS,
    DEFAULT_CONTEXTS_PER_WORD,
    DEFAULT_INJECTION,
    DEFAULT_MAX_ZIPF,
    FORCE_HELP,
    GPU_HELP,
    INT8_ENCODER_HELP,
    MAX_ZIPF_HELP,
    check_gpu,
    check_injection,
    check_made_by,
    check_max_zipf,
    check_model,
    check_output_dir,
    check_store,
    count_range,
    echo_json,
    fail,
    run_checked,
    setup_logging,
)

from ..app import app
from ..bootstrap import DEFAULT_RESAMPLES
from ..errors import Errors
from ..outputs import ASSEMBLE_OUTPUTS, EVALUATE_OUTPUTS, METRICS_FILE, POOL_OUTPUTS, RARIFIED_ITEMS, SET_OUTPUTS

CONTEXTS_PER_WORD_HELP = "contexts the bertram component gathers per rare word"


def split_systems(systems: str) -> List[str]:
    return [s.strip() for s in systems.split(",") if s.strip()]


@app.command("evaluate")
def evaluate_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    rarified_dir: Path = typer.Argument(..., help="output of `rarify`"),
    output_dir: Path = typer.Argument(..., help="metrics.json, predictions.jsonl, accuracy_by_frequency.png"),
    bertram: Optional[Path] = typer.Option(None, help="trained BERTRAM model directory"),
    context_store: Optional[Path] = typer.Option(None, help="contexts.sqlite from `prepare`"),
    systems: str = typer.Option(
        "all",
        help="comma-separated systems, or 'all': baseline, original, masked, "
        "oracle_INJ, bertram_INJ_CTX (INJ: replace, slash, recentre; CTX: form, doc, store; for slash and recentre "
        "also indomain (the set's own texts as a store), stores (indomain, then the general store), memory, and with "
        "--dictionary-store storesgcide (stores, then definitions))",
    ),
    max_zipf: float = typer.Option(DEFAULT_MAX_ZIPF, help=MAX_ZIPF_HELP),
    contexts_per_word: int = typer.Option(
        DEFAULT_CONTEXTS_PER_WORD, **count_range("contexts"), help=CONTEXTS_PER_WORD_HELP
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    seed_sets: bool = typer.Option(
        True,
        "--seed-sets/--no-seed-sets",
        help="also evaluate the further seeds' sets that RARIFIED_DIR/rarify.json lists (into OUTPUT_DIR/seed-N)",
    ),
    bootstrap_resamples: int = typer.Option(
        DEFAULT_RESAMPLES, **count_range("resamples"), help="resamples for the paired bootstrap CIs"
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    dictionary_store: Optional[Path] = typer.Option(
        None,
        help="definition store for bertram_slash_gcide and bertram_INJ_storesgcide (GCIDE "
        "only: `dictionary OUT --sources gcide --no-gcide-wordnet-senses`)",
    ),
    definitions_per_word: Optional[int] = typer.Option(
        None,
        **count_range("contexts"),
        help="definitions bertram_INJ_storesgcide adds after the two stores at most (default: 2)",
    ),
    int8_encoder: bool = typer.Option(False, "--int8-encoder", help=INT8_ENCODER_HELP),
) -> None:
    """Accuracy, gold-label log-probability and paired bootstrap CIs vs the baseline on the rarified test set."""
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_output_dir, output_dir, EVALUATE_OUTPUTS, command="evaluate", force=force, marked=[METRICS_FILE])
    run_checked(check_made_by, rarified_dir, "RARIFIED_DIR", "rarify", RARIFIED_ITEMS)
    if bertram is not None:
        run_checked(check_model, bertram, "--bertram")
    if context_store is not None:
        run_checked(check_store, context_store, "--context-store")
    run_checked(check_gpu, gpu_id)
    from .downstream import DEFAULT_SYSTEMS, evaluate_systems

    setup_logging()
    chosen = list(DEFAULT_SYSTEMS) if systems.strip() == "all" else split_systems(systems)
    metrics = run_checked(
        evaluate_systems,
        model_dir,
        rarified_dir,
        output_dir,
        bertram_path=bertram,
        context_store=context_store,
        systems=chosen,
        max_zipf=max_zipf,
        contexts_per_word=contexts_per_word,
        gpu_id=gpu_id,
        seed_sets=seed_sets,
        n_resamples=bootstrap_resamples,
        dictionary_store=dictionary_store,
        int8_encoder=int8_encoder,
        **({} if definitions_per_word is None else {"definitions_per_word": definitions_per_word}),
    )
    echo_json(
        {
            "n_items": metrics["n_items"],
            "seed_sets": metrics.get("seed_sets", []),
            "accuracy_all": {s: a["All"]["accuracy"] for s, a in metrics["accuracy"].items()},
        }
    )


@app.command("evaluate-originals")
def evaluate_originals_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    splits_dir: Path = typer.Argument(..., help="output of `split` (test_candidates.jsonl)"),
    output_dir: Path = typer.Argument(..., help="metrics.json, predictions.jsonl"),
    bertram: Path = typer.Option(..., help="trained BERTRAM model directory"),
    systems: str = typer.Option(
        "baseline, bertram_replace_doc, bertram_slash_doc, bertram_recentre_doc",
        help="comma-separated systems (see evaluate)",
    ),
    max_zipf: float = typer.Option(DEFAULT_MAX_ZIPF, help=MAX_ZIPF_HELP),
    contexts_per_word: int = typer.Option(
        DEFAULT_CONTEXTS_PER_WORD, **count_range("contexts"), help=CONTEXTS_PER_WORD_HELP
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    bootstrap_resamples: int = typer.Option(
        DEFAULT_RESAMPLES, **count_range("resamples"), help="resamples for the paired bootstrap CIs"
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Do no harm: every original test text, stock vs with bertram (accuracy, log p(gold), paired CIs)."""
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(
        check_output_dir, output_dir, SET_OUTPUTS, command="evaluate-originals", force=force, marked=[METRICS_FILE]
    )
    run_checked(check_made_by, splits_dir, "SPLITS_DIR", "split", ("test_candidates.jsonl",))
    run_checked(check_gpu, gpu_id)
    from .downstream import evaluate_originals

    setup_logging()
    metrics = run_checked(
        evaluate_originals,
        model_dir,
        splits_dir,
        output_dir,
        bertram,
        systems=split_systems(systems),
        max_zipf=max_zipf,
        contexts_per_word=contexts_per_word,
        gpu_id=gpu_id,
        n_resamples=bootstrap_resamples,
    )
    echo_json(
        {
            "n_items": metrics["n_items"],
            "mean_injected_per_doc": metrics["mean_injected_per_doc"],
            "accuracy_all": {s: a["All"]["accuracy"] for s, a in metrics["accuracy"].items()},
        }
    )


@app.command("pool")
def pool_cmd(
    metrics_dirs: List[Path] = typer.Argument(
        ...,
        help="evaluate output dirs (each with predictions.jsonl); the seed sets their metrics.json lists are included",
    ),
    output: Path = typer.Option(Path("metrics/pooled"), help="directory for pooled.json and pooled.md"),
    bootstrap_resamples: int = typer.Option(
        DEFAULT_RESAMPLES, **count_range("resamples"), help="resamples for the paired bootstrap CIs"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the bootstrap resampling"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Pool per-item results of several rarified sets: the same figures as evaluate, with
    test texts resampled as clusters, stratified by groups of sets sharing texts."""
    run_checked(check_output_dir, output, POOL_OUTPUTS, command="pool", force=force)
    from .pooling import pool_files, pooled_markdown

    result = run_checked(pool_files, metrics_dirs, output, n_resamples=bootstrap_resamples, seed=seed)
    typer.echo("\n".join(pooled_markdown(result, per_set=False)))


@app.command("assemble")
def assemble_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    bertram: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    output_dir: Path = typer.Argument(..., help="OUTPUT/pipeline and OUTPUT/code.py for `spacy package`"),
    injection: str = typer.Option(
        DEFAULT_INJECTION, help="how the transformer takes the vectors: " + ", ".join(INJECTION_MODES)
    ),
    max_zipf: float = typer.Option(DEFAULT_MAX_ZIPF, help=MAX_ZIPF_HELP),
    contexts_per_word: int = typer.Option(
        DEFAULT_CONTEXTS_PER_WORD, **count_range("contexts"), help=CONTEXTS_PER_WORD_HELP
    ),
    name: str = typer.Option("textcat_bertram", help="the pipeline's meta name"),
    contexts: str = typer.Option(
        DEFAULT_CONTEXTS,
        help="the bertram component's contexts: none (the spelling "
        "alone), doc (the doc's own sentences); a packaged pipeline carries no store",
    ),
    version: str = typer.Option("0.1.0", help="the pipeline's meta version"),
    vector_table: Optional[Path] = typer.Option(None, help="a table from `vectors`, shipped inside the pipeline"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Save the baseline textcat with the bertram component as one pipeline."""
    run_checked(check_injection, injection)
    if contexts not in ("none", "doc"):
        fail(
            ValueError(
                Errors.E156.format(
                    setting="--contexts",
                    choices="'none', 'doc' (a packaged pipeline carries no context store)",
                    value=contexts,
                )
            )
        )
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_output_dir, output_dir, ASSEMBLE_OUTPUTS, command="assemble", force=force, replaces=True)
    run_checked(check_model, bertram, "BERTRAM")
    from ..pipelines import assemble_pipeline

    path = run_checked(
        assemble_pipeline,
        model_dir,
        bertram,
        output_dir,
        injection=injection,
        max_zipf=max_zipf,
        contexts_per_word=contexts_per_word,
        name=name,
        contexts=contexts,
        version=version,
        vector_table=vector_table,
        force=force,
    )
    typer.echo(str(path))
