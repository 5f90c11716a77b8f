"""`python -m spacy_bertram COMMAND` (console script: `spacy-bertram COMMAND`).

Corpus and BERTRAM (the training package's own commands, registered here):
  prepare         corpus -> word counts + SQLite context store
  targets         training words and their targets (embedding rows / OTA)
  train           the three BERTRAM training stages -> a model directory
  vectors         a vector table: BERTRAM vectors for a whole vocabulary, on a Dask cluster
Rarification and evaluation (paper section 4):
  split           dataset -> train / dev / test candidates + the augmented training DocBin
  train-baseline  the masked / "w / w"-augmented transformer textcat, embeddings frozen
  rarify          the rarified test set, guided by the trained baseline
  evaluate        baseline vs +BERTRAM (replace / slash / slash in-domain) on All / WN / Msp
  pool            the evaluate results of several sets pooled (datasets x thresholds x seeds)
  similarity      word similarity (Spearman) of BERTRAM vs the subword mean, with contexts
  intrinsic       the same on real rare words (CRW, Card-660, Chimeras), with bootstrap CIs
  report          the markdown report of a project run
  assemble        the baseline + bertram pipeline, ready for `spacy package`

Every step that runs a model takes `--gpu-id` the spaCy way (-1: CPU).
Errors in the input (missing files, empty datasets, unknown labels, WordNet not
installed) end the command with a one-line message and exit code 1.
"""
import json
import logging
import sys
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(
    name="spacy-bertram",
    help=__doc__.split("\n\n")[0] + "\n\nBERTRAM for spaCy transformer pipelines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PASSTHROUGH = {
    "context_settings": {"allow_extra_args": True, "ignore_unknown_options": True},
    "add_help_option": False,
}
GPU_HELP = "GPU id (spaCy's --gpu-id); -1 for the CPU"


def _fail(err: BaseException) -> None:
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(code=1)


def _setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")


def _echo_json(data: dict) -> None:
    typer.echo(json.dumps(data, indent=1, default=str))


def _run_checked(function, *args, **kwargs):
    """Run a step; input errors become `error: ...` and exit code 1."""
    from .wordnet import WordNetMissingError

    try:
        return function(*args, **kwargs)
    except (ValueError, WordNetMissingError, FileNotFoundError, OSError) as err:
        _fail(err)


# ---------------------------------------------------------------------------
# Registered from the training package (argparse there; arguments pass through)


@app.command("prepare", help="Count words and collect contexts (run with --help for options).", **PASSTHROUGH)
def prepare_cmd(ctx: typer.Context) -> None:
    from .training.prepare import main as prepare_main

    raise typer.Exit(code=prepare_main(list(ctx.args)) or 0)


@app.command("targets", help="Training words and their targets (run with --help for options).", **PASSTHROUGH)
def targets_cmd(ctx: typer.Context) -> None:
    from .training.cli import main as training_main

    raise typer.Exit(code=training_main(["targets", *ctx.args]) or 0)


@app.command("train", help="Train BERTRAM: the three stages (run with --help for options).", **PASSTHROUGH)
def train_cmd(ctx: typer.Context) -> None:
    from .training.cli import main as training_main

    raise typer.Exit(code=training_main(["train", *ctx.args]) or 0)


@app.command("vectors")
def vectors_cmd(
    model: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    store: Path = typer.Argument(..., help="contexts.sqlite from `prepare` (its counts select the words)"),
    output: Path = typer.Argument(..., help="the vector table directory (table.json + vectors.safetensors)"),
    min_count: int = typer.Option(1, help="words with at least this many corpus occurrences"),
    max_count: Optional[int] = typer.Option(None, help="and fewer than this many (e.g. the rare-word threshold); default: no bound"),
    words: Optional[Path] = typer.Option(None, help="a word list (one per line): only these words (within the count range)"),
    min_contexts: int = typer.Option(1, help="skip words with fewer store contexts (the component infers those from the doc)"),
    max_contexts: int = typer.Option(8, help="store contexts per word (as the component's max_contexts)"),
    shard_size: int = typer.Option(256, help="words per shard: the unit of work, of writing and of resuming"),
    workers: Optional[int] = typer.Option(None, help="local Dask workers (default: one per core); 0: no Dask, in this process"),
    scheduler: Optional[str] = typer.Option(None, help="address of a running Dask scheduler, e.g. tcp://10.0.0.1:8786 (model and store at the same paths on every worker)"),
    gpu_id: str = typer.Option("-1", "--gpu-id", "-g", help="-1: CPU; a GPU id, or ids like 0,1 for one dask-cuda worker per GPU"),
    token_budget: int = typer.Option(0, help="encoder tokens per call (0: the device's default)"),
    no_progress: bool = typer.Option(False, "--no-progress"),
) -> None:
    """Infer every selected word's vector from its store contexts into a vector table.

    Runs on Dask distributed; a killed run resumes where it stopped when re-run.
    """
    from .vectors import build_vector_table

    _setup_logging()
    try:
        gpu_ids = [int(g) for g in gpu_id.split(",") if g.strip() and int(g) >= 0]
    except ValueError:
        _fail(ValueError(f"--gpu-id must be -1, an id or ids like 0,1, not {gpu_id!r}"))
    _echo_json(_run_checked(build_vector_table, model, store, output, min_count=min_count, max_count=max_count,
                            word_list=words, min_contexts=min_contexts, max_contexts=max_contexts,
                            shard_size=shard_size, workers=workers, scheduler=scheduler, gpu_ids=gpu_ids,
                            token_budget=token_budget, progress=not no_progress))


# ---------------------------------------------------------------------------
# Rarification and evaluation


@app.command("split")
def split_cmd(
    dataset: str = typer.Argument(..., help="bbc, rotten_tomatoes, ag_news, dbpedia, mnli, or a JSONL path"),
    output_dir: Path = typer.Argument(..., help="where train/dev/test_candidates.jsonl and train/dev.spacy go"),
    assets: Optional[Path] = typer.Option(None, help="assets directory (default: ./assets)"),
    max_words: int = typer.Option(120, help="keep the first N words of each text (0: all)"),
    max_train: Optional[int] = typer.Option(None, help="at most N training texts (stratified)"),
    max_dev: Optional[int] = typer.Option(None, help="at most N dev texts"),
    max_test: Optional[int] = typer.Option(None, help="at most N test candidates"),
    dev_fraction: float = typer.Option(0.1, help="share of the training part used as dev"),
    seed: int = typer.Option(0),
) -> None:
    """Split a dataset; the training DocBin gets the baseline's mask / "w / w" augmentation."""
    from .baseline import make_splits

    _echo_json(_run_checked(make_splits, dataset, output_dir, assets=assets, max_words=max_words,
                            max_train=max_train, max_dev=max_dev, max_test=max_test,
                            dev_fraction=dev_fraction, seed=seed))


@app.command("train-baseline")
def train_baseline_cmd(
    splits_dir: Path = typer.Argument(..., help="output of `split` (train.spacy, dev.spacy)"),
    output_dir: Path = typer.Argument(..., help="trained pipelines: OUTPUT/model-best, model-last"),
    config: Path = typer.Option(Path("configs/textcat_minilm.cfg"), help="pipeline config to start from"),
    base_model: str = typer.Option("default", help="encoder name or path ('default': MiniLM)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    seed: int = typer.Option(0),
    max_steps: int = typer.Option(300, help="training steps"),
    eval_frequency: int = typer.Option(100, help="steps between dev evaluations"),
    batch_size: int = typer.Option(1000, help="padded words per batch"),
    learn_rate: float = typer.Option(1e-4),
    no_freeze: bool = typer.Option(False, "--no-freeze", help="train the embedding layer too (not the paper's setting)"),
) -> None:
    """Train the rarification baseline (embedding layer frozen) with `spacy train`."""
    from .baseline import train_baseline

    _setup_logging()
    info = _run_checked(train_baseline, splits_dir / "train.spacy", splits_dir / "dev.spacy", output_dir,
                        base_config=config, base_model=base_model, gpu_id=gpu_id, seed=seed,
                        max_steps=max_steps, eval_frequency=eval_frequency, batch_size=batch_size,
                        learn_rate=learn_rate, freeze=not no_freeze)
    _echo_json(info)


@app.command("rarify")
def rarify_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline (e.g. .../model-best)"),
    splits_dir: Path = typer.Argument(..., help="output of `split`"),
    output_dir: Path = typer.Argument(..., help="train/dev/test.spacy + test.jsonl + rarify.json"),
    counts: Path = typer.Option(..., help="word counts: prepare's counts.tsv, its directory, or contexts.sqlite"),
    threshold: float = typer.Option(100, help="rare = fewer occurrences than this in the corpus"),
    max_candidates: Optional[int] = typer.Option(None, help="at most N test candidates"),
    max_masks: int = typer.Option(5, help="words masked per item at most"),
    misspelling_rate: float = typer.Option(0.1, help="share of substitutions that are misspellings"),
    seed: str = typer.Option("0", help="rarification seed(s), comma-separated (0,1,2): they share one masking "
                             "pass; the first seed's set goes to OUTPUT_DIR, each further seed N's to OUTPUT_DIR/seed-N"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    wordnet_dir: Optional[Path] = typer.Option(None, help="directory with the WordNet 3.0 dict files"),
    no_progress: bool = typer.Option(False, "--no-progress"),
) -> None:
    """Build the rarified test set (resumes an interrupted run)."""
    from .rarify_step import run_rarification

    _setup_logging()
    _echo_json(_run_checked(run_rarification, model_dir, splits_dir, output_dir, counts, threshold=threshold,
                            max_candidates=max_candidates, max_masks=max_masks,
                            misspelling_rate=misspelling_rate, seed=seed, gpu_id=gpu_id,
                            wordnet_dir=wordnet_dir, progress=not no_progress))


@app.command("evaluate")
def evaluate_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    rarified_dir: Path = typer.Argument(..., help="output of `rarify`"),
    output_dir: Path = typer.Argument(..., help="metrics.json, predictions.jsonl, accuracy_by_frequency.png"),
    bertram: Optional[Path] = typer.Option(None, help="trained BERTRAM model directory"),
    context_store: Optional[Path] = typer.Option(None, help="contexts.sqlite from `prepare`"),
    systems: str = typer.Option(",".join(["baseline", "bertram_replace", "bertram_slash", "bertram_slash_indomain"]),
                                help="comma-separated systems"),
    threshold: float = typer.Option(100, help="rare = fewer occurrences than this in the store's corpus"),
    max_contexts: int = typer.Option(8, help="contexts per rare word"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    seed_sets: bool = typer.Option(True, "--seed-sets/--no-seed-sets",
                                   help="also evaluate the further seeds' sets that RARIFIED_DIR/rarify.json lists "
                                   "(into OUTPUT_DIR/seed-N)"),
    bootstrap_resamples: int = typer.Option(10000, help="resamples for the paired bootstrap CIs"),
) -> None:
    """Accuracy, gold-label log-probability and paired bootstrap CIs vs the baseline on the rarified test set."""
    from .pipeline_eval import evaluate_systems

    _setup_logging()
    metrics = _run_checked(evaluate_systems, model_dir, rarified_dir, output_dir, bertram_path=bertram,
                           context_store=context_store, systems=[s.strip() for s in systems.split(",") if s.strip()],
                           threshold=threshold, max_contexts=max_contexts, gpu_id=gpu_id, seed_sets=seed_sets,
                           n_resamples=bootstrap_resamples)
    _echo_json({"n_items": metrics["n_items"], "seed_sets": metrics.get("seed_sets", []),
                "accuracy_all": {s: a["All"]["accuracy"] for s, a in metrics["accuracy"].items()}})


@app.command("pool")
def pool_cmd(
    metrics_dirs: List[Path] = typer.Argument(..., help="evaluate output dirs (each with predictions.jsonl); "
                                              "the seed sets their metrics.json lists are included"),
    output: Path = typer.Option(Path("metrics/pooled"), help="directory for pooled.json and pooled.md"),
    bootstrap_resamples: int = typer.Option(10000, help="resamples for the paired bootstrap CIs"),
    seed: int = typer.Option(0, help="seed of the bootstrap resampling"),
) -> None:
    """Pool per-item results of several rarified sets: the same figures as evaluate, with
    test texts resampled as clusters, stratified by groups of sets sharing texts."""
    from .evaluation.pooling import pool_files, pooled_markdown

    result = _run_checked(pool_files, metrics_dirs, output, n_resamples=bootstrap_resamples, seed=seed)
    typer.echo("\n".join(pooled_markdown(result, per_set=False)))


@app.command("similarity")
def similarity_cmd(
    pairs: Path = typer.Argument(..., help="TSV of word, rare word, human score (a header line is skipped)"),
    contexts: Path = typer.Argument(..., help="a directory of <rare word>.txt files (one context per line) or contexts.sqlite"),
    bertram: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    max_contexts: int = typer.Option(16, help="contexts per rare word"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
) -> None:
    """Spearman's rho between human scores and cosines in the encoder's input-embedding space."""
    from .similarity_eval import evaluate_similarity_files

    _setup_logging()
    metrics = _run_checked(evaluate_similarity_files, pairs, contexts, bertram, output=output,
                           max_contexts=max_contexts, gpu_id=gpu_id)
    _echo_json(metrics["results"])


@app.command("intrinsic")
def intrinsic_cmd(
    model: Path = typer.Argument(..., metavar="MODEL", help="trained BERTRAM model directory"),
    crw: Optional[Path] = typer.Option(None, help="CRW directory: pairs.tsv (word, rare word, score; no header) "
                                                  "and contexts/<rare word>.txt (one sentence per line)"),
    card: Optional[Path] = typer.Option(None, help="Card-660 pairs TSV (word, word, score; no header), or its "
                                                   "directory; only pairs of two single alphabetic words are kept"),
    chimera: Optional[Path] = typer.Option(None, help="Chimeras directory with dataset.l{2,4,6}.fixed.{train,test}.txt "
                                                      "(whichever exist)"),
    store: Optional[Path] = typer.Option(None, help="contexts.sqlite (or a directory of <word>.txt files): "
                                                    "contexts for Card-660's second words; without it Card-660 is "
                                                    "scored form only"),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    bootstrap: int = typer.Option(2000, help="paired bootstrap resamples for the 95% CI of each system's "
                                             "difference to the baseline"),
    seed: int = typer.Option(0, help="seed of the bootstrap's random generator"),
    skip_missing: bool = typer.Option(False, "--skip-missing",
                                      help="skip sets whose path does not exist (and say so) instead of failing"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
) -> None:
    """Spearman on real rare words (CRW, Card-660, Chimeras): subword mean vs BERTRAM, paired bootstrap CIs."""
    from .evaluation.intrinsic import evaluate_intrinsic, format_table

    _setup_logging()
    metrics = _run_checked(evaluate_intrinsic, model, crw=crw, card=card, chimera=chimera, store=store,
                           output=output, n_resamples=bootstrap, seed=seed, gpu_id=gpu_id,
                           skip_missing=skip_missing)
    typer.echo(format_table(metrics), nl=False)


@app.command("report")
def report_cmd(
    output: Path = typer.Argument(..., help="the markdown file"),
    datasets: str = typer.Option("bbc", help="comma-separated dataset names; those not evaluated are listed as not run"),
    corpus_dir: Path = typer.Option(Path("corpus"), help="holds NAME/splits and NAME/rarified"),
    training_dir: Path = typer.Option(Path("training"), help="holds NAME/baseline"),
    metrics_dir: Path = typer.Option(Path("metrics"), help="holds NAME/metrics.json"),
    bertram_dir: Optional[Path] = typer.Option(None, help="BERTRAM training output (metrics.json)"),
    prepare_dir: Optional[Path] = typer.Option(None, help="prepare output (prepare.json)"),
    pooled: Optional[Path] = typer.Option(None, help="pooled.json of the pool step: its table comes first"),
) -> None:
    """Write the markdown report."""
    from .report import write_report

    names = [d.strip() for d in datasets.split(",") if d.strip()]
    path = _run_checked(write_report, output, names, corpus_dir=corpus_dir, training_dir=training_dir,
                        metrics_dir=metrics_dir, bertram_dir=bertram_dir, prepare_dir=prepare_dir,
                        pooled=pooled)
    typer.echo(Path(path).read_text(encoding="utf8"))


@app.command("assemble")
def assemble_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    bertram: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    output_dir: Path = typer.Argument(..., help="OUTPUT/pipeline and OUTPUT/code.py for `spacy package`"),
    injection: str = typer.Option("slash", help="slash or replace"),
    threshold: float = typer.Option(100),
    max_contexts: int = typer.Option(8),
    name: str = typer.Option("textcat_bertram"),
    version: str = typer.Option("0.1.0"),
    vector_table: Optional[Path] = typer.Option(None, help="a table from `vectors`, shipped inside the pipeline"),
) -> None:
    """Save the baseline textcat with the bertram component as one pipeline."""
    from .pipeline_eval import assemble_pipeline

    path = _run_checked(assemble_pipeline, model_dir, bertram, output_dir, injection=injection,
                        threshold=threshold, max_contexts=max_contexts, name=name, version=version,
                        vector_table=vector_table)
    typer.echo(str(path))


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    app(args=argv, prog_name="spacy-bertram")


if __name__ == "__main__":
    main(sys.argv[1:])
