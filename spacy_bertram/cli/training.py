"""The corpus and BERTRAM commands of `python -m spacy_bertram` (registered on `app.app`).

  prepare   corpus -> word counts + SQLite context store
  texts-store  your own texts -> a context store for the component, grown later with --add
  targets   training words and their targets (embedding rows / OTA)
  train     the BERTRAM training stages -> a model directory
  vectors   a vector table: BERTRAM vectors for a whole vocabulary, on a Dask cluster

Each command imports its step when it runs, so `--help` stays fast.
"""

import functools
import inspect
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple

import typer

from .app import (
    FORCE_FILE_HELP,
    FORCE_HELP,
    GPU_HELP,
    MultiValueCommand,
    app,
    check_gpu,
    check_lang,
    check_model,
    check_store,
    number_in,
    echo_json,
    fail,
    run_checked,
    setup_logging,
)
from ..bounds import count_range
from ..model.config import MIN_SEQ_LENGTH, MODES, BertramConfig
from ..model.encoder import check_base_model
from ..errors import Errors
from ..pipeline.table_files import check_table_output
from ..context_store import DEFAULT_WINDOW, open_context_store
from ..rarity.frequencies import DEFAULT_MAX_ZIPF
from ..types import DEFAULT_CONTEXTS_PER_WORD
from ..training.settings import (
    DEFAULT_HELD_OUT,
    DEFAULT_MAX_CONTEXTS,
    DEFAULT_MIN_COUNT,
    DEFAULT_RARE_MAX_CONTEXTS,
    OTASettings,
    RunOptions,
    TrainingData,
    TrainSettings,
    VectorSelection,
    check_encoder_settings,
    check_multi_piece_words,
    check_prepare_run,
    check_targets_output,
    check_train_output,
    check_rare_settings,
    check_vector_request,
    check_vector_settings,
    check_word_limits,
    check_workers,
    prepare_settings,
    target_settings,
    read_word_list,
)

TRAIN = TrainSettings()
NETWORK = TRAIN.network
DATA = TrainingData()
OTA = OTASettings()


@app.command("prepare")
def prepare_cmd(
    paths: List[Path] = typer.Argument(
        ...,
        help='corpus files/directories (.jsonl: a "text" field per line, .spacy: a DocBin, other files: one text '
        "per line; .gz/.bz2/.xz read), then the output directory (the embedded corpus: assets/corpus OUTPUT)",
    ),
    min_count: int = typer.Option(
        DEFAULT_MIN_COUNT, **count_range("occurrences"), help="training words: at least this many occurrences"
    ),
    max_contexts: int = typer.Option(
        DEFAULT_MAX_CONTEXTS, **count_range("contexts"), help="contexts kept per training word"
    ),
    rare_max_contexts: int = typer.Option(
        DEFAULT_RARE_MAX_CONTEXTS, **count_range("contexts", low=0), help="contexts kept per rarer word (0: none)"
    ),
    max_rare_words: Optional[int] = typer.Option(
        None, **count_range("words", low=0), help="contexts for at most this many rarer words (default: all)"
    ),
    context_words: int = typer.Option(
        DEFAULT_WINDOW, **count_range("window"), help="words kept on each side of an occurrence"
    ),
    cased: bool = typer.Option(False, "--cased", help="keep case (for cased encoders)"),
    skip_bad_files: bool = typer.Option(False, "--skip-bad-files", help="warn and skip binary/non-UTF-8 files"),
    exclude: Optional[List[str]] = typer.Option(
        None,
        "--exclude",
        help="leave out the corpus files whose name matches this glob (repeatable), e.g. "
        "--exclude wordnet.txt: a store without WordNet's glosses, for evaluating on items drawn from WordNet",
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the context sampling"),
    scheduler: Optional[str] = typer.Option(
        None, help="run on the Dask cluster at this address (corpus files at the same path on every worker)"
    ),
    workers: Optional[int] = typer.Option(
        None,
        **count_range("workers"),
        help="run on a local Dask cluster of N processes (default, or 0: no Dask, one process)",
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Count words and collect contexts for BERTRAM training (contexts.sqlite, counts.tsv, prepare.json)."""
    setup_logging()
    *corpus, output = paths
    if not corpus:  # one path is not taken as the output: the store would land in a corpus directory
        # A path that exists is a corpus (the example gives it a new output), else the output meant.
        example = (
            (str(output), f"{output.stem or 'corpus'}_prepared") if output.exists() else ("assets/corpus", str(output))
        )
        fail(ValueError(Errors.E206.format(path=str(output), corpus=example[0], output=example[1])))
    run_checked(check_workers, workers, scheduler)
    settings = prepare_settings(
        min_count, max_contexts, rare_max_contexts, max_rare_words, context_words, lowercase=not cased, seed=seed
    )
    run_checked(check_prepare_run, output, settings, force=force)
    from ..training.corpus import check_corpus_paths, exclude_files  # light: no torch

    run_checked(check_corpus_paths, corpus)
    if exclude:
        corpus = run_checked(exclude_files, corpus, exclude)
    from ..training.prepare import prepare

    from ..training.distributed import optional_client

    with optional_client(scheduler, workers) as client:
        result = run_checked(
            prepare,
            corpus,
            output,
            max_contexts=max_contexts,
            context_words=context_words,
            min_count=min_count,
            rare_max_contexts=rare_max_contexts,
            max_rare_words=max_rare_words,
            lowercase=not cased,
            errors="skip" if skip_bad_files else "raise",
            seed=seed,
            client=client,
            force=force,
        )
    echo_json(asdict(result))


@app.command("texts-store")
def texts_store_cmd(
    paths: List[Path] = typer.Argument(
        ...,
        help='your texts: .txt (one text per line), .jsonl (a "text" field per line), .spacy (DocBin), '
        ".txt/.jsonl compressed (.gz, .bz2, .xz), directories of them, or - for stdin's lines; then the store "
        "file (OUTPUT.sqlite)",
    ),
    add: bool = typer.Option(
        False, "--add", help="add the texts to the store OUTPUT (it must exist): counts grow, contexts stay a sample"
    ),
    max_contexts: Optional[int] = typer.Option(
        None, **count_range("contexts"), help="contexts kept per word (a new store: 16; --add: the store's)"
    ),
    context_words: Optional[int] = typer.Option(
        None,
        **count_range("window"),
        help=f"words kept on each side of an occurrence (a new store: {DEFAULT_WINDOW}; --add: the store's)",
    ),
    cased: bool = typer.Option(False, "--cased", help="keep case (for cased encoders; --add: the store's casing)"),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the context sampling"),
    force: bool = typer.Option(
        False, "--force", help=FORCE_FILE_HELP + " (without --add; a store of your texts is rebuilt from these alone)"
    ),
) -> None:
    """A context store of your own texts (no labels) for the bertram component; --add grows it in place.

    Every word is counted and keeps a uniform sample of its distinct contexts over all texts added so far;
    chain the store before a general one in the component's contexts (docs/configuration.md).
    """
    *texts, output = paths
    if not texts:
        fail(ValueError(Errors.E089.format(path=str(output))))
    from ..training.text_store import add_texts, check_store_output, read_texts  # light: sqlite3 and tqdm

    run_checked(check_store_output, output, add=add, force=force)
    stream = run_checked(read_texts, texts)
    result = run_checked(
        add_texts,
        output,
        stream,
        max_contexts=max_contexts,
        window=context_words,
        lowercase=False if cased else (None if add else True),
        seed=seed,
        replace=not add,
        force=force,
    )
    echo_json(result)


def _with_options(shared: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command `shared`'s parameters before its own; it gets `shared(**those)` as its first argument.

    typer reads a command's options from its signature: commands that share a
    dozen options would otherwise declare each of them again.
    """
    shared_params = list(inspect.signature(shared).parameters.values())

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        own = list(inspect.signature(command).parameters.values())[1:]

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            return command(shared(**{p.name: kwargs.pop(p.name) for p in shared_params}), **kwargs)

        signature = inspect.Signature([*shared_params, *own], return_annotation=None)
        run.__signature__ = signature  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in (*shared_params, *own)}
        return run

    return decorate


@dataclass(frozen=True)
class WordsAndTargets:
    """What `targets` and `train` both take from the command line: store, output, training words, targets."""

    contexts: Path
    output: Path
    base_model: str
    min_count: int
    max_words: Optional[int]
    multi_piece_words: int
    multi_piece_min_zipf: float
    held_out: float
    seed: int
    gpu_id: int
    ota: OTASettings
    scheduler: Optional[str]
    workers: Optional[int]
    progress: bool
    force: bool


def _words_and_targets(
    contexts: Path = typer.Argument(..., help="context store: contexts.sqlite or the `prepare` output directory"),
    output: Path = typer.Argument(..., help="output directory (train: OUTPUT/model is the trained model)"),
    base_model: str = typer.Option("default", help="encoder name or path ('default': MiniLM)"),
    min_count: int = typer.Option(
        DEFAULT_MIN_COUNT, **count_range("occurrences"), help="training words' minimum frequency"
    ),
    max_words: Optional[int] = typer.Option(
        None, **count_range("words"), help="at most this many (most frequent) training words"
    ),
    multi_piece_words: int = typer.Option(
        DATA.multi_piece_words,
        **count_range("words", low=0),
        help="then this many of wordfreq's most "
        "frequent words the encoder cuts into 2+ wordpieces (OTA targets; "
        "corpus contexts where the store has some)",
    ),
    multi_piece_min_zipf: float = typer.Option(
        DATA.multi_piece_min_zipf,
        help="... at this Zipf frequency or "
        "above (the rare-word rule's default threshold: never a word the "
        "component infers)",
    ),
    held_out: float = typer.Option(
        DEFAULT_HELD_OUT, parser=number_in(0, 0.5, low_open=True, high_open=True), help="fraction of words held out"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the word split, OTA and training"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    ota_steps: int = typer.Option(OTA.steps, **count_range("steps", low=0), help="OTA: Adam steps per word"),
    ota_batch: int = typer.Option(OTA.batch_words, **count_range("batch"), help="OTA: words per batch"),
    ota_neighbours: int = typer.Option(
        OTA.neighbours, **count_range("window", low=0), help="OTA: random tokens on each side of the word"
    ),
    scheduler: Optional[str] = typer.Option(
        None,
        help="compute OTA targets and the encoder-state cache on the "
        "Dask cluster at this address (the encoder at the same path on every "
        "worker); the model is the one process's",
    ),
    workers: Optional[int] = typer.Option(
        None,
        **count_range("workers"),
        help="... on a local Dask cluster of N processes (default, or 0: no Dask, one process)",
    ),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bars"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> WordsAndTargets:
    """The options `targets` and `train` share, declared once (`_with_options` adds them to both)."""
    ota = OTASettings(steps=ota_steps, batch_words=ota_batch, neighbours=ota_neighbours, seed=seed)
    return WordsAndTargets(
        contexts,
        output,
        base_model,
        min_count,
        max_words,
        multi_piece_words,
        multi_piece_min_zipf,
        held_out,
        seed,
        gpu_id,
        ota,
        scheduler,
        workers,
        not no_progress,
        force,
    )


def _check_words_and_targets(args: WordsAndTargets) -> None:
    """The shared options' values: what `targets` and `train` check first, before importing torch."""
    check_word_limits(args.min_count, args.max_words, args.held_out)
    check_multi_piece_words(args.multi_piece_words, args.multi_piece_min_zipf)
    check_workers(args.workers, args.scheduler)
    if (args.scheduler or args.workers) and args.gpu_id >= 0:
        raise ValueError(Errors.E290.format(gpu_id=args.gpu_id))


@app.command("targets")
@_with_options(_words_and_targets)
def targets_cmd(
    args: WordsAndTargets,
    from_targets: Optional[Path] = typer.Option(
        None,
        help="select from this target set instead of building one: "
        "its held-out words, its first --max-words corpus words and first "
        "--multi-piece-words wordfreq words (a learning curve's smaller sets)",
    ),
) -> None:
    """Training words and their targets (embedding rows, or one-token approximation)."""
    run_checked(_check_words_and_targets, args)
    if from_targets is None:
        settings = target_settings(
            args.base_model,
            args.min_count,
            args.max_words,
            args.held_out,
            args.seed,
            args.multi_piece_words,
            args.multi_piece_min_zipf,
            args.ota,
        )
    else:  # a selection records what it selected
        settings = {"selected": {"max_corpus_words": args.max_words, "max_multi_piece_words": args.multi_piece_words}}
    run_checked(check_targets_output, args.output, settings, force=args.force)
    if from_targets is None:  # the encoder builds the targets
        run_checked(check_base_model, args.base_model)
    run_checked(check_store, args.contexts, "CONTEXTS", words=True)
    run_checked(check_gpu, args.gpu_id)
    from ..model.encoder import load_encoder
    from ..device import select_device
    from ..training.distributed import optional_client
    from ..training.targets import TargetSet, build_targets

    setup_logging()

    def build():
        source = open_context_store(args.contexts)
        if from_targets is not None:
            chosen = TargetSet.load(from_targets).select(args.max_words, args.multi_piece_words)
            chosen.info["n_with_contexts"] = sum(1 for word in chosen.words if source.contexts(word, 1))
            chosen.save(Path(args.output))
            return chosen
        device = select_device(args.gpu_id)
        encoder, tokenizer = load_encoder(args.base_model, device=device)  # the cached copy for the device
        with optional_client(args.scheduler, args.workers) as client:
            targets = build_targets(
                source,
                encoder,
                tokenizer,
                args.base_model,
                args.min_count,
                args.max_words,
                args.held_out,
                args.seed,
                args.ota,
                device,
                args.progress,
                args.multi_piece_words,
                args.multi_piece_min_zipf,
                client,
            )
        targets.save(Path(args.output))
        return targets

    targets = run_checked(build)
    typer.echo(json.dumps({"words": len(targets), "held_out": sum(targets.held_out), **targets.info}))


@app.command("train", cls=MultiValueCommand)
@_with_options(_words_and_targets)
def train_cmd(
    args: WordsAndTargets,
    mode: str = typer.Option(NETWORK.mode, help="network mode: " + ", ".join(MODES)),
    read_layer: int = typer.Option(NETWORK.read_layer, help="inplace: encoder layer read (-1 last, -2 the one before)"),
    subword_share: float = typer.Option(
        NETWORK.subword_share,
        parser=number_in(0, 1),
        help="weight of the subword mean in the output mix (0: BERTRAM's own vector)",
    ),
    own_embedding_for_one_piece: bool = typer.Option(
        NETWORK.own_embedding_for_one_piece,
        help="a one-wordpiece word without contexts keeps the encoder's embedding "
        "(off: the reference's, every word its form vector)",
    ),
    inplace_mask_fraction: float = typer.Option(
        TRAIN.inplace_mask_fraction,
        parser=number_in(0, 1, high_open=True),
        help="inplace: share of training rows that read the mask instead of the word (context-only learning)",
    ),
    targets: Optional[Path] = typer.Option(None, help="a target directory made by `targets` (else built here)"),
    no_subword_mean: bool = typer.Option(False, "--no-subword-mean", help="paper form: n-grams only"),
    epochs: Tuple[int, int, int] = typer.Option(
        TRAIN.epochs, **count_range("steps", low=0), help="epochs of stages 1 2 3 (inplace: the first)"
    ),
    lr: Tuple[float, float, float] = typer.Option(
        TRAIN.lr, parser=number_in(0, low_open=True), help="learning rate of stages 1 2 3"
    ),
    batch_words: Tuple[int, int, int] = typer.Option(
        TRAIN.batch_words, **count_range("batch"), help="words per batch in stages 1 2 3"
    ),
    warmup: float = typer.Option(
        TRAIN.warmup, parser=number_in(0, 1, high_open=True), help="share of each stage's steps spent warming up the lr"
    ),
    min_contexts: int = typer.Option(
        TRAIN.min_contexts, **count_range("contexts"), help="contexts per word per step, at least"
    ),
    max_contexts: int = typer.Option(
        NETWORK.max_contexts, **count_range("contexts"), help="contexts per word per step, at most (and at inference)"
    ),
    pool_contexts: int = typer.Option(TRAIN.pool_contexts, **count_range("contexts"), help="contexts kept per word"),
    max_seq_length: int = typer.Option(
        NETWORK.max_seq_length,
        **count_range("tokens", low=MIN_SEQ_LENGTH),
        help="encoder window per context (special tokens included)",
    ),
    ngram_min_count: int = typer.Option(
        TRAIN.ngram_min_count, **count_range("occurrences"), help="n-grams seen fewer times share the UNK row"
    ),
    ngram_style: str = typer.Option(
        TRAIN.ngram_style,
        help="the n-gram table: ours, or reference (the reference implementation's: <S> ends, its order)",
    ),
    mimicking: str = typer.Option(
        NETWORK.mimicking, help="attentive mimicking: softmax, or linear (the reference implementation's)"
    ),
    context_rows: str = typer.Option(
        NETWORK.context_rows, help="how a context becomes an encoder row: matched, or reference (the reference's)"
    ),
    shallow_gate: str = typer.Option(
        NETWORK.shallow_gate, help="shallow: per_context, or after (the reference's gate after mimicking)"
    ),
    add_quotes: bool = typer.Option(NETWORK.add_quotes, help='add: wrap the form vector in quotes ([CLS] " v " :)'),
    no_reuse: bool = typer.Option(False, "--no-reuse", help="re-encode contexts every epoch (slow; for comparison)"),
    cache_mb: float = typer.Option(
        TRAIN.cache_memory_mb, parser=number_in(0), help="encoder states kept in memory (MB)"
    ),
    no_ablation: bool = typer.Option(False, "--no-ablation", help="skip the other form variant"),
    keep_cache: bool = typer.Option(False, "--keep-cache", help="keep the encoder-state cache files"),
    restart: bool = typer.Option(
        False,
        "--restart",
        help="if OUTPUT holds a run with other settings, remove its "
        "files and start over (without it: an error; same settings always resume)",
    ),
    definitions: Optional[Path] = typer.Option(
        None, help="a definition store from `dictionary`: each training word's context pool begins with its definitions"
    ),
    definitions_per_word: int = typer.Option(
        DATA.definitions_per_word, **count_range("contexts"), help="with --definitions: definitions per training word"
    ),
    path_mix: Tuple[float, float, float] = typer.Option(
        TRAIN.path_mix,
        help="inplace: shares of the paths each step trains a word on: spelling alone, contexts alone, both",
    ),
    no_path_mix: bool = typer.Option(
        False, "--no-path-mix", help="inplace: draw any of a word's rows each step (the earlier default), not one path"
    ),
    path_phases: bool = typer.Option(
        TRAIN.path_phases,
        "--path-phases",
        help="inplace: the reference's stage order "
        "instead of --path-mix: the steps in thirds, contexts alone, then the "
        "spelling alone, then both",
    ),
    rank_weight: float = typer.Option(
        TRAIN.rank_weight,
        help="weight of the ranking term (target above its "
        "nearest whole-word embeddings) beside the mimicking loss; 0: off",
    ),
    rank_temperature: float = typer.Option(TRAIN.rank_temperature, help="the ranking term's softmax temperature"),
    rank_negatives: int = typer.Option(
        TRAIN.rank_negatives, **count_range("words"), help="the ranking term's nearest whole words per word"
    ),
) -> None:
    """Train BERTRAM: the training stages, validation and the form ablation (resumes if interrupted)."""
    run_checked(_check_words_and_targets, args)
    if mode not in MODES:
        fail(ValueError(Errors.E156.format(setting="--mode", choices=", ".join(MODES), value=mode)))
    run_checked(check_train_output, args.output, args.force)

    def configure() -> Tuple[TrainSettings, TrainingData]:  # their own checks, before anything is imported
        network = BertramConfig(
            base_model=args.base_model,
            mode=mode,
            use_subword_mean=not no_subword_mean,
            read_layer=read_layer,
            subword_share=subword_share,
            own_embedding_for_one_piece=own_embedding_for_one_piece,
            max_contexts=max_contexts,
            max_seq_length=max_seq_length,
            mimicking=mimicking,
            context_rows=context_rows,
            shallow_gate=shallow_gate,
            add_quotes=add_quotes,
        )
        settings = TrainSettings(
            network=network,
            inplace_mask_fraction=inplace_mask_fraction,
            epochs=tuple(epochs),
            lr=tuple(lr),
            batch_words=tuple(batch_words),
            warmup=warmup,
            min_contexts=min_contexts,
            pool_contexts=pool_contexts,
            ngram_min_count=ngram_min_count,
            ngram_style=ngram_style,
            seed=args.seed,
            reuse_states=not no_reuse,
            cache_memory_mb=cache_mb,
            path_mix=None if no_path_mix else path_mix,
            path_phases=path_phases,
            rank_weight=rank_weight,
            rank_temperature=rank_temperature,
            rank_negatives=rank_negatives,
        )
        data = TrainingData(
            min_count=args.min_count,
            max_words=args.max_words,
            multi_piece_words=args.multi_piece_words,
            multi_piece_min_zipf=args.multi_piece_min_zipf,
            held_out_fraction=args.held_out,
            targets=targets,
            ota=args.ota,
            definitions=definitions,
            definitions_per_word=definitions_per_word,
        )
        return settings, data

    settings, data = run_checked(configure)
    run_checked(check_encoder_settings, settings.network, files_here_only=True)
    run_checked(check_store, args.contexts, "CONTEXTS", words=True)
    if definitions is not None:
        from ..dictionary.store import check_definition_store  # sqlite3 alone

        run_checked(check_definition_store, definitions)
    run_checked(check_gpu, args.gpu_id)
    from ..training.distributed import optional_client
    from ..training.run import train

    setup_logging()
    with optional_client(args.scheduler, args.workers) as client:
        options = RunOptions(
            gpu_id=args.gpu_id,
            ablation=not no_ablation,
            keep_cache=keep_cache,
            restart=restart,
            force=args.force,
            progress=args.progress,
            client=client,
        )
        metrics = run_checked(train, args.contexts, args.output, settings, data, options)
    typer.echo(json.dumps({"baseline": metrics["baseline"], "final": metrics["final"], "model": metrics["model"]}))


@app.command("vectors")
def vectors_cmd(
    model: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    store: Path = typer.Argument(
        ..., help="a context store from `prepare` or `texts-store` (its counts select the words)"
    ),
    output: Path = typer.Argument(..., help="the vector table directory (table.json + vectors.safetensors)"),
    then_store: Optional[List[Path]] = typer.Option(
        None,
        "--then-store",
        help="a store read after STORE for the contexts a word lacks there (repeat for more, in order), as the "
        "component's chained store sources: your texts' store as STORE, a general one here; the words still come "
        "from STORE",
    ),
    min_count: int = typer.Option(
        1, **count_range("occurrences"), help="words with at least this many corpus occurrences"
    ),
    max_count: Optional[int] = typer.Option(
        None,
        **count_range("occurrences"),
        help="and fewer than this many (e.g. the rare-word threshold); default: no bound",
    ),
    words: Optional[Path] = typer.Option(
        None, help="a word list (one per line): only these words (within the count range)"
    ),
    min_contexts: int = typer.Option(
        1,
        **count_range("contexts", low=0),
        help="skip words with fewer store contexts (the component infers those from the doc)",
    ),
    rare_only: bool = typer.Option(
        False,
        "--rare-only",
        help="keep only the tokens of the selected words the bertram component's default rare-word rule calls rare "
        "(what rare-words says; a hyphen-joined word's rare parts): the component looks up no others. The "
        "summary's not_rare counts the words dropped",
    ),
    max_zipf: Optional[float] = typer.Option(
        None, help=f"with --rare-only: override the rule's max_zipf (default {DEFAULT_MAX_ZIPF})"
    ),
    lang: Optional[str] = typer.Option(
        None, help="with --rare-only: the pipeline's language, whose wordfreq frequencies the rule reads (default en)"
    ),
    max_contexts: int = typer.Option(
        DEFAULT_CONTEXTS_PER_WORD,
        **count_range("contexts"),
        help="store contexts per word (as the component's contexts_per_word)",
    ),
    shard_size: int = typer.Option(
        256, **count_range("words"), help="words per shard: the unit of work, of writing and of resuming"
    ),
    workers: Optional[int] = typer.Option(
        None, **count_range("workers"), help="local Dask workers (default: one per core); 0: no Dask, in this process"
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    scheduler: Optional[str] = typer.Option(
        None,
        help="address of a running Dask scheduler, e.g. "
        "tcp://10.0.0.1:8786 (model and store at the same paths on every worker)",
    ),
    gpu_id: str = typer.Option(
        "-1", "--gpu-id", "-g", help="-1: CPU; a GPU id, or ids like 0,1 for one dask-cuda worker per GPU"
    ),
    token_budget: int = typer.Option(
        0, **count_range("tokens", low=0), help="encoder tokens per call (0: the device's default)"
    ),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bars"),
) -> None:
    """Infer every selected word's vector from its store contexts into a vector table.

    Runs on Dask distributed; a killed run resumes where it stopped when re-run.
    """
    run_checked(
        check_vector_settings,
        min_count,
        max_count,
        max_contexts,
        token_budget,
        shard_size,
        workers,
        scheduler,
        min_contexts,
    )
    run_checked(check_rare_settings, rare_only, max_zipf, lang)
    if lang is not None:
        run_checked(check_lang, lang)
    try:
        gpu_ids = [int(g) for g in gpu_id.split(",") if g.strip() and int(g) >= 0]
    except ValueError:
        fail(ValueError(Errors.E208.format(gpu_id=gpu_id)))
    run_checked(check_table_output, output, command="vectors", force=force)
    run_checked(check_model, model)
    run_checked(check_store, store, "STORE", words=True)
    then_store = list(then_store or [])
    for path in then_store:
        run_checked(check_store, path, "--then-store")
    if words is not None:  # read again by the step: a list is small
        run_checked(read_word_list, words)
    selection = VectorSelection(
        then_stores=tuple(then_store),
        min_count=min_count,
        max_count=max_count,
        word_list=words,
        min_contexts=min_contexts,
        rare_only=rare_only,
        max_zipf=max_zipf,
        lang=lang,
        max_contexts=max_contexts,
    )
    request = run_checked(selection.request, model, store)
    run_checked(check_vector_request, output, request, force)  # other settings than the output's, named
    if scheduler is None or workers == 0:  # a scheduler's workers have their own GPUs; the others are here
        run_checked(check_gpu, *gpu_ids)
    from ..training.vectors import build_vector_table

    setup_logging()
    echo_json(
        run_checked(
            build_vector_table,
            model,
            store,
            output,
            **asdict(selection),
            shard_size=shard_size,
            workers=workers,
            scheduler=scheduler,
            gpu_ids=gpu_ids,
            token_budget=token_budget,
            progress=not no_progress,
            force=force,
        )
    )
