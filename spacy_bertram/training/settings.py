"""The settings and defaults the training commands share, with no torch import.

`training/commands.py` reads its options' defaults from here, so `--help`
needs neither torch nor transformers; `stages.py`, `ota.py`, `targets.py`
and `store_builder.py` import them from here.
"""

from __future__ import annotations

import importlib.util
import hashlib
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..bounds import check_count
from ..model.config import MODE_TRAITS, BertramConfig, check_read_layer
from ..model.encoder import check_base_model, encoder_layer_count
from ..model.inputs import NGRAM_STYLES
from ..rarity.frequencies import DEFAULT_MAX_ZIPF, check_max_zipf
from ..errors import Errors
from ..context_store import STORE_FILE, open_context_store
from ..fileio import check_output_dir
from ..model.files import check_model_dir, model_fingerprint
from ..pipeline.table_files import META_FILE, PLAN_FILE, SHARDS_DIR, TABLE_ENTRIES
from ..types import DEFAULT_CONTEXTS_PER_WORD, DEFAULT_TOKEN_BUDGET, PathLike

#: Training words occur at least this often (prepare and targets).
DEFAULT_MIN_COUNT = 100
#: Share of the training words held out for validation.
DEFAULT_HELD_OUT = 0.05
#: Contexts kept per training word / per rarer word in the context store.
DEFAULT_MAX_CONTEXTS = 64
DEFAULT_RARE_MAX_CONTEXTS = 16

#: What `train` writes into its output directory (and `--restart` removes); anything else is left alone.
TARGETS_DIR = "targets"
MODEL_DIR = "model"
METRICS_FILE = "metrics.json"
PROGRESS_FILE = "progress.json"
CHECKPOINTS_DIR = "checkpoints"
CACHE_DIR = "cache"
RUN_FILES = (PROGRESS_FILE, METRICS_FILE, CHECKPOINTS_DIR, CACHE_DIR, TARGETS_DIR, MODEL_DIR)
#: The directories of model saves (`storage.save_bertram`): the final model and the finished stages'.
MODEL_DIRS = (MODEL_DIR, "stage*", "ablation-*")
TRAIN_OUTPUTS = (*RUN_FILES, *MODEL_DIRS[1:])
#: What the state cache writes in CACHE_DIR.
CACHE_FILES = ("states-*.npy", "states-*.json")
#: What `targets` writes (it replaces the directory as a whole) and what `prepare` writes.
TARGET_FILES = ("targets.json", "targets.safetensors")
PREPARE_FILES = (STORE_FILE, "counts.tsv", "prepare.json")
#: What `vectors` writes (the table replaces the directory as a whole; pipeline/table_files.py).
VECTORS_OUTPUTS = TABLE_ENTRIES
#: `vectors --rare-only`: the language of the blank pipeline the rule is built in (wordfreq's), as `rare-words`'.
DEFAULT_LANG = "en"


#: The packages Dask's runs import (the `dask` extra: pip install 'spacy-bertram[dask]').
DASK_PACKAGES = ("dask", "distributed")


def check_workers(workers: Optional[int], scheduler: Optional[str] = None, *, dask_by_default: bool = False) -> None:
    """`--workers` and `--scheduler`, before any work: a negative worker count would start a Dask cluster of no
    workers that waits forever, and a run that needs Dask (a scheduler, workers; with `dask_by_default`, as
    `vectors`, anything but `--workers 0`) without the extra installed failed once its work had begun."""
    if workers is not None and workers < 0:
        raise ValueError(Errors.E268.format(workers=workers))
    if workers is not None:
        check_count(workers, "--workers", "workers")
    needs_dask = workers != 0 if dask_by_default else bool(scheduler or workers)
    if needs_dask and not dask_installed():
        raise ValueError(Errors.E267)


def dask_installed() -> bool:
    """Whether Dask distributed can be imported, found without importing it (that takes seconds)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in DASK_PACKAGES)
    except (ImportError, ValueError):  # a package that hides itself, or one removed from sys.modules
        return False


#: Training needs at least this many training words (the held-out ones among them).
MIN_TRAINING_WORDS = 20


def check_word_limits(min_count: int, max_words: Optional[int], held_out_fraction: float = DEFAULT_HELD_OUT) -> None:
    """The training-word settings, before the store is opened: a cap below what training needs would
    later read as "too few frequent words", and a NaN fraction would pass `fraction >= 0.5`."""
    check_count(min_count, "--min-count", "occurrences")
    if max_words is not None and max_words < MIN_TRAINING_WORDS:
        raise ValueError(Errors.E256.format(max_words=max_words, MIN_TRAINING_WORDS=MIN_TRAINING_WORDS))
    if max_words is not None:
        check_count(max_words, "--max-words", "words")
    if not 0.0 < held_out_fraction < 0.5:
        raise ValueError(Errors.E052.format(setting="held_out_fraction", bounds="in (0, 0.5)", value=held_out_fraction))


def check_multi_piece_words(multi_piece_words: int, multi_piece_min_zipf: float) -> None:
    """The extra multi-piece words: a count and a threshold on wordfreq's Zipf scale."""
    check_count(multi_piece_words, "--multi-piece-words", "words", low=0)
    check_max_zipf(multi_piece_min_zipf, "--multi-piece-min-zipf")


#: `prepare`'s count settings: their kind of count (`bounds.COUNT_BOUNDS`) and the least value where it is not the
#: kind's (0: no rarer words' contexts, no cap on the rarer words).
PREPARE_COUNTS: Dict[str, Tuple[str, Optional[int]]] = {
    "min_count": ("occurrences", None),
    "max_contexts": ("contexts", None),
    "context_words": ("window", None),
    "rare_max_contexts": ("contexts", 0),
    "max_rare_words": ("words", 0),
}


def check_prepare_settings(**values: Optional[int]) -> None:
    """`prepare`'s count settings, before the corpus is read and before anything is written (the
    command checks them before it imports its step, which loads torch)."""
    for name, value in values.items():
        if value is not None:
            kind, low = PREPARE_COUNTS[name]
            check_count(value, "--" + name.replace("_", "-"), kind, low)


def read_word_list(path: PathLike) -> List[str]:
    """Words of a file, one per line (a tab and anything after it is ignored; '#' lines skipped): read
    here, without torch, so that `vectors --words` refuses a missing or empty list at once."""
    try:
        lines = Path(path).read_text(encoding="utf8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(Errors.E259.format(path=str(path), err=err)) from err
    words = [line.split("\t")[0].strip() for line in lines if line.strip() and not line.startswith("#")]
    if not words:
        raise ValueError(Errors.E260.format(path=str(path)))
    return words


def check_vector_settings(
    min_count: int,
    max_count: Optional[int],
    max_contexts: int,
    token_budget: int,
    shard_size: int,
    workers: Optional[int],
    scheduler: Optional[str] = None,
    min_contexts: int = 1,
) -> None:
    """`vectors`' settings, before the model is loaded (the command checks them before importing torch)."""
    check_count(min_contexts, "--min-contexts", "contexts", low=0)
    check_count(min_count, "--min-count", "occurrences")
    if max_count is not None:
        check_count(max_count, "--max-count", "occurrences")
    if max_count is not None and max_count <= min_count:
        raise ValueError(Errors.E261.format(max_count=max_count, min_count=min_count))
    check_count(max_contexts, "--max-contexts", "contexts")
    if token_budget < 0:
        raise ValueError(Errors.E263.format(token_budget=token_budget))
    check_count(token_budget, "--token-budget", "tokens", low=0)
    check_count(shard_size, "--shard-size", "words")
    check_workers(workers, scheduler, dask_by_default=True)  # in this process only with --workers 0


def changed_settings(old: Any, new: Dict[str, Any], prefix: str = "") -> str:
    """The settings that differ, `key: old -> new` (nested keys dotted), instead of the whole record."""
    if not isinstance(old, dict):
        return f"recorded: {old!r}"
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        before, after = old.get(key, "(unset)"), new.get(key, "(unset)")
        if isinstance(before, dict) and isinstance(after, dict):
            nested = changed_settings(before, after, f"{prefix}{key}.")
            changes += [nested] if nested else []
        elif before != after:
            changes.append(f"{prefix}{key}: {before!r} -> {after!r}")
    return "; ".join(changes)


def store_summary(store: Any) -> Dict[str, Any]:
    """What a vector table records of a store it read (a `ContextStore`): enough to tell another store apart."""
    return {k: store.meta.get(k) for k in ("total_words", "vocab_size", "seed", "window", "lowercase")}


def summary_of_store(path: PathLike) -> Dict[str, Any]:
    with open_context_store(path) as store:
        return store_summary(store)


@dataclass(frozen=True)
class VectorSelection:
    """What selects a vector table's words and their contexts: `vectors`' options, as `build_vector_table` takes them
    (`then_stores`: the stores read after the first for the contexts a word lacks there)."""

    then_stores: Tuple[PathLike, ...] = ()
    min_count: int = 1
    max_count: Optional[int] = None
    word_list: Optional[PathLike] = None
    min_contexts: int = 1
    rare_only: bool = False
    max_zipf: Optional[float] = None
    lang: Optional[str] = None
    max_contexts: int = DEFAULT_CONTEXTS_PER_WORD

    def request(self, model: PathLike, store: PathLike) -> Dict[str, Any]:
        """What the run asks for, as its table records it (table.json, and shards/plan.json's settings), told
        without torch: the model's fingerprint, the stores, the contexts per word, the rule of `rare_only` and
        what selects the words. A run compares it with what its output holds before any work
        (`check_vector_request`)."""
        listed = None
        if self.word_list is not None:
            text = "\n".join(read_word_list(self.word_list))
            listed = hashlib.blake2b(text.encode("utf8"), digest_size=16).hexdigest()
        request: Dict[str, Any] = {
            "model_id": model_fingerprint(model),
            "max_contexts": self.max_contexts,
            "store": summary_of_store(store),
        }
        if self.then_stores:
            request["then_stores"] = [summary_of_store(path) for path in self.then_stores]
        if self.rare_only:
            max_zipf = DEFAULT_MAX_ZIPF if self.max_zipf is None else self.max_zipf
            request["rare_only"] = {"max_zipf": max_zipf, "lang": self.lang or DEFAULT_LANG}
        request["selection"] = {
            "min_count": self.min_count,
            "max_count": self.max_count,
            "min_contexts": self.min_contexts,
            "word_list": listed,
        }
        return request


def vector_request_changes(recorded: Mapping[str, Any], request: Mapping[str, Any]) -> str:
    """The settings a table (or a plan's settings) records that differ from `request`, as `changed_settings`
    says them; "" where none does. Of `rare_only` only the rule is compared, not how many words it dropped."""
    held: Dict[str, Any] = {key: recorded.get(key) for key in ("model_id", "max_contexts", "store", "selection")}
    if recorded.get("then_stores"):
        held["then_stores"] = recorded["then_stores"]
    if isinstance(recorded.get("rare_only"), dict):
        held["rare_only"] = {key: recorded["rare_only"].get(key) for key in ("max_zipf", "lang")}
    return changed_settings(held, dict(request))


def check_vector_request(output: PathLike, request: Mapping[str, Any], force: bool = False) -> None:
    """Refuse, before any work, an output holding a table (E266, unless `force`: the table is replaced) or the
    shards of a run (E236) made with other settings, naming them: the refusal came after the model loaded, the
    words were selected and, with --rare-only, the rule was asked of each (10 s), and named nothing."""
    out = Path(output)
    table = _json_record(out / META_FILE)
    if table is not None:
        changed = vector_request_changes(table, request)
        if changed and not force:
            raise ValueError(Errors.E266.format(out=str(out), changed=changed))
        return  # the same table (the run says it is done), or one --force replaces with its shards
    plan = _json_record(out / SHARDS_DIR / PLAN_FILE)
    if plan is not None:
        settings = plan.get("settings")
        changed = vector_request_changes(settings if isinstance(settings, dict) else {}, request)
        if changed:
            raise ValueError(Errors.E236.format(directory=str(out / SHARDS_DIR), changed=changed))


def _json_record(path: Path) -> Optional[Dict[str, Any]]:
    """A JSON object a run recorded, or None where there is none (a damaged one: its own reader names it)."""
    try:
        data = json.loads(path.read_text(encoding="utf8")) if path.is_file() else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_rare_settings(rare_only: bool, max_zipf: Optional[float], lang: Optional[str]) -> None:
    """The rule's settings mean something only with `rare_only`: given without it, they would be dropped unread."""
    given = [name for name, value in (("--max-zipf", max_zipf), ("--lang", lang)) if value is not None]
    if given and not rare_only:
        raise ValueError(Errors.E090.format(options=" and ".join(given)))
    if max_zipf is not None:
        check_max_zipf(max_zipf, "--max-zipf")


@dataclass
class OTASettings:
    """steps: Adam steps per word (keep modest on CPU); neighbours: random tokens per side;
    eval_draws: neighbour draws of the loss reported before and after (the targets do not depend on
    it: with 4 draws, OTA at 10 steps took 72 s for 256 words on 2 CPU cores, with 1 draw 40 s;
    one draw is enough to see the loss fall)."""

    steps: int = 60
    batch_words: int = 256
    neighbours: int = 3
    lr: float = 1e-3
    seed: int = 0
    eval_draws: int = 1

    def __post_init__(self) -> None:
        check_count(self.steps, "OTA steps", "steps", low=0)
        check_count(self.batch_words, "OTA batch_words", "batch")
        check_count(self.neighbours, "OTA neighbours", "window", low=0)
        check_count(self.seed, "OTA seed", "seed")
        check_count(self.eval_draws, "OTA eval_draws", "runs")


#: BertramConfig fields that are not training settings: the encoder is the run's `base_model`
#: (recorded beside the settings), its widths are read from it, the context mean's shares and smoothing are
#: inference's alone (training never reads them), and the rest describe the file.
NOT_TRAINING_SETTINGS = (
    "base_model",
    "context_mean_share",
    "context_mean_share_with_form",
    "context_mean_smoothing",
    "encoder_embedding_width",
    "encoder_hidden_width",
    "encoder_vocab_size",
    "format_version",
    "extra",
)
NETWORK_KEYS = tuple(f.name for f in fields(BertramConfig))


#: Epochs of stages 1, 2 and 3 (`TrainSettings.epochs`).
DEFAULT_EPOCHS = (100, 20, 30)


def stage_count(mode: str) -> int:
    """How many training stages `mode` runs (`stages.plan_stages`): inplace one, the paper's modes
    context and form, then the combined stage where the mode has one."""
    traits = MODE_TRAITS[mode]
    return 1 if traits.one_stage else 3 if traits.combined_groups else 2


def check_encoder_settings(network: BertramConfig, files_here_only: bool = False) -> None:
    """The encoder `train` builds on: a base model that can load, and a `read_layer` it has, told from its
    directory or its config.json, before torch loads. `files_here_only` (the command, before its imports):
    a config that is not on this machine is left to `train` itself to fetch."""
    check_base_model(network.base_model)
    n_layers = encoder_layer_count(network.base_model, files_here_only)
    check_read_layer(network.read_layer, n_layers, network.base_model, "train's --read-layer")


def check_stage_epochs(epochs: Sequence[int], mode: str) -> None:
    """Some stage that `mode` runs must train: with 0 epochs in each of them `train` wrote the untrained
    network as its model, after minutes of targets and caches. A single 0 is kept: the combined stage
    started from stages 1 and 2 as they are, a stage left to the combined one, or inplace's unused values."""
    n_stages = stage_count(mode)
    if not any(epochs[:n_stages]):
        stages = {
            1: "stage 1 alone: the first value",
            2: "stages 1 and 2: the first two values",
            3: "stages 1, 2 and 3",
        }[n_stages]
        raise ValueError(
            Errors.E294.format(
                epochs=" ".join(map(str, epochs)), mode=mode, stages=stages, default=" ".join(map(str, DEFAULT_EPOCHS))
            )
        )


#: Shares of the spelling, contexts and both paths per training step (`TrainSettings.path_mix`).
DEFAULT_PATH_MIX = (0.25, 0.25, 0.5)
#: The paper's schedule as path shares (`TrainSettings.path_phases`): contexts alone, the spelling
#: alone, then both, a third of the stage's steps each.
PATH_PHASES = ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))


@dataclass
class TrainSettings:
    """What `train` makes: the network (`network`, whose defaults are `BertramConfig`'s) and the
    hyper-parameters of its stages (index 0, 1, 2 of the tuples).

    The paper's lr 5e-5 (stages 1 and 3) suits BERT-base on a huge corpus; with
    a few thousand training words and cached encoder states we take many
    cheap epochs at a larger lr instead. On the embedded corpus and MiniLM,
    stage 1 at 1e-3 / 3e-3 / 1e-2 / 3e-2 (50 epochs) gave held-out cosine
    0.18 / 0.24 / 0.29 / 0.15, and stage 3 (ADD) at 1e-2 / 3e-3 gave 0.15 / 0.30.
    The inplace stage is still improving at 50 epochs: 20 / 50 / 100 / 200 gave held-out
    cosine 0.273 / 0.279 / 0.296 / 0.302, and 100 scored best on real rare words (the
    README's Results), so it trains 100 (about 70 s on 2 CPU cores with cached states).
    `network.max_contexts` is also the most contexts per word per training step, and
    `network.base_model` the encoder trained for.

    path_mix: shares of the inference paths a step trains each word on (spelling alone, contexts
    alone, both: `pools.PATHS`; the default measured best of the levers in docs/evaluation.md's
    ablation); None draws any of a word's rows, mixes inference never reads (the earlier default).
    path_phases: the order of the reference's three stages (contexts, spelling, both) on the one inplace
    network instead of `path_mix`:
    the stage's steps in thirds, the contexts alone, then the spelling alone, then both
    (`PATH_PHASES`); measured against the mix in docs/evaluation.md, not the default.
    ngram_style: how the n-gram table is built: "ours" or "reference" (the reference implementation's,
        `NgramVocab.from_words(style=...)`).
    rank_weight: weight of a ranking term beside the mimicking loss: a softmax at `rank_temperature`
    over cosines that puts each word's target above its `rank_negatives` nearest whole-word
    embeddings and 1,024 random ones per step (0: mimicking alone).
    """

    network: BertramConfig = field(default_factory=BertramConfig)
    inplace_mask_fraction: float = 0.5
    epochs: Tuple[int, int, int] = DEFAULT_EPOCHS
    lr: Tuple[float, float, float] = (1e-2, 1e-2, 3e-3)
    batch_words: Tuple[int, int, int] = (64, 64, 64)
    warmup: float = 0.1
    min_contexts: int = 4
    pool_contexts: int = 32
    ngram_min_count: int = 3
    ngram_style: str = "ours"
    seed: int = 0
    reuse_states: bool = True
    token_budget: int = DEFAULT_TOKEN_BUDGET
    cache_memory_mb: float = 2048.0
    path_mix: Optional[Tuple[float, float, float]] = DEFAULT_PATH_MIX
    path_phases: bool = False
    rank_weight: float = 0.0
    rank_temperature: float = 0.1
    rank_negatives: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.network, BertramConfig):
            raise TypeError(Errors.E269.format(network_type=type(self.network).__name__))
        self.epochs, self.lr, self.batch_words = tuple(self.epochs), tuple(self.lr), tuple(self.batch_words)
        if len(self.epochs) != 3 or len(self.lr) != 3 or len(self.batch_words) != 3:
            raise ValueError(Errors.E270)
        if min(self.epochs) < 0 or min(self.batch_words) < 1 or not all(0 < lr < math.inf for lr in self.lr):
            raise ValueError(Errors.E271.format(lr=self.lr))
        for epochs, batch_words in zip(self.epochs, self.batch_words):
            check_count(epochs, "epochs", "steps", low=0)
            check_count(batch_words, "batch_words", "batch")
        check_stage_epochs(self.epochs, self.network.mode)
        if self.ngram_style not in NGRAM_STYLES:
            raise ValueError(Errors.E298.format(value=self.ngram_style, allowed=NGRAM_STYLES))
        if not 1 <= self.min_contexts <= self.network.max_contexts <= self.pool_contexts:
            raise ValueError(Errors.E272)
        check_count(self.pool_contexts, "pool_contexts", "contexts")
        check_count(self.ngram_min_count, "ngram_min_count", "occurrences")
        check_count(self.seed, "seed", "seed")
        check_count(self.token_budget, "token_budget", "tokens")
        if not 0.0 <= self.inplace_mask_fraction < 1.0:
            raise ValueError(
                Errors.E052.format(
                    setting="inplace_mask_fraction", bounds="in [0, 1)", value=self.inplace_mask_fraction
                )
            )
        if not 0.0 <= self.warmup < 1.0:
            raise ValueError(Errors.E274.format(warmup=self.warmup))
        if self.path_mix is not None:
            self.path_mix = tuple(float(share) for share in self.path_mix)
            if len(self.path_mix) != 3 or min(self.path_mix) < 0 or not math.isclose(sum(self.path_mix), 1.0):
                raise ValueError(Errors.E288.format(path_mix=self.path_mix))
        if not (self.rank_weight >= 0 and self.rank_temperature > 0 and self.rank_negatives >= 1):
            raise ValueError(
                Errors.E289.format(
                    weight=self.rank_weight, temperature=self.rank_temperature, negatives=self.rank_negatives
                )
            )
        check_count(self.rank_negatives, "rank_negatives", "words")

    def path_mix_at(self, progress: float) -> Optional[Tuple[float, float, float]]:
        """The path shares of the step `progress` (0 to 1) of the way through its stage."""
        if not self.path_phases:
            return self.path_mix
        return PATH_PHASES[sum(progress >= (i + 1) / len(PATH_PHASES) for i in range(len(PATH_PHASES) - 1))]

    def to_dict(self) -> Dict[str, Any]:
        """The run's record (progress.json, metrics.json): one key per setting, the network's among
        them, flat."""
        network = {k: v for k, v in self.network.to_dict().items() if k not in NOT_TRAINING_SETTINGS}
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "network"}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in {**network, **own}.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TrainSettings":
        """Settings from a record (`to_dict`) or any mapping of setting names: BertramConfig's
        names (`base_model` included) go to `network`, the others are the stages'."""
        network = BertramConfig(**{k: v for k, v in data.items() if k in NETWORK_KEYS})
        return cls(network=network, **{k: v for k, v in data.items() if k not in NETWORK_KEYS})


@dataclass
class TrainingData:
    """What `train` learns from besides the context store: which words, their targets, their contexts.

    multi_piece_words: wordfreq's most frequent multi-piece words at Zipf >= `multi_piece_min_zipf`
    added after the corpus words (targets.py), contexts or not;
    targets: a target directory made by `targets` (else built, with `ota`: by default
    `OTASettings(seed=settings.seed)`); definitions: a definition store whose definitions
    begin each training word's context pool (`definition_contexts.py`), `definitions_per_word` each.
    """

    min_count: int = DEFAULT_MIN_COUNT
    max_words: Optional[int] = None
    held_out_fraction: float = DEFAULT_HELD_OUT
    multi_piece_words: int = 0
    multi_piece_min_zipf: float = DEFAULT_MAX_ZIPF
    targets: Optional[PathLike] = None
    ota: Optional[OTASettings] = None
    definitions: Optional[PathLike] = None
    definitions_per_word: int = 2

    def __post_init__(self) -> None:
        """Checked here, not when the words are chosen: after the encoder has loaded (train --held-out nan
        failed only after the targets were built and saved)."""
        check_word_limits(self.min_count, self.max_words, self.held_out_fraction)
        check_multi_piece_words(self.multi_piece_words, self.multi_piece_min_zipf)
        check_count(self.definitions_per_word, "--definitions-per-word", "contexts")


@dataclass
class RunOptions:
    """How `train` runs, none of which changes the model it makes.

    ablation: also train the other form variant (a table row each); keep_cache: keep the
    encoder-state cache files; restart: a run with other settings in the output directory is
    removed and started over (else an error: the same settings always resume); force: write the
    model directories where files this package did not save are (they are replaced; others' files stay);
    on_epoch_end(stage name, epoch): called after each epoch's checkpoint; client: a Dask client whose
    workers compute the OTA targets and the state cache (the same model as one process, to float rounding).
    """

    gpu_id: int = -1
    ablation: bool = True
    keep_cache: bool = False
    restart: bool = False
    force: bool = False
    progress: bool = True
    on_epoch_end: Optional[Callable[[str, int], None]] = None
    log: Callable[[str], None] = print
    client: Any = None


def model_dirs(output: PathLike) -> List[Path]:
    """The model directories a run of `train` in `output` has (MODEL_DIRS)."""
    out = Path(output)
    return [path for pattern in MODEL_DIRS for path in sorted(out.glob(pattern)) if path.is_dir()]


def check_train_output(output: PathLike, force: bool = False) -> None:
    """The output rule (`fileio.check_output_dir`) for `train`: its directory, and the model directory it saves
    the final model into, whose files must be a save's by their digests (a user's file beside them stays). A
    finished stage's directory is read, not written, when the run resumes: a damaged file there is named by
    the load (`model_files.verify_digests`)."""
    check_output_dir(output, TRAIN_OUTPUTS, command="train", force=force, marked=[METRICS_FILE])
    check_model_dir(
        Path(output) / MODEL_DIR, command="train", force=force, own_directory=True, force_hint="pass --force"
    )


def _recorded(found: Any, wanted: Mapping[str, Any]) -> Any:
    """`found` cut to the keys of `wanted` (nested too): a record also holds what the run measured."""
    if not isinstance(found, dict):
        return found
    return {
        key: _recorded(found[key], value) if isinstance(value, dict) else found[key]
        for key, value in wanted.items()
        if key in found
    }


def check_same_settings(
    record: Path, settings: Mapping[str, Any], read: Callable[[Any], Any], *, command: str, force: bool = False
) -> None:
    """A finished run of `command` (its `record` file, read by `read` to the settings it recorded) is replaced
    only by a run with the same `settings` (a redo) or with `force`, as `train` (E277) and `vectors` (E266)
    refuse another run's output: checked before any work, naming what changed."""
    if force or not record.is_file():
        return
    try:
        found = read(json.loads(record.read_text(encoding="utf8")))
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, KeyError, TypeError) as err:
        found = f"unreadable ({err})"
    changed = changed_settings(_recorded(found, settings), dict(settings))
    if changed:
        raise ValueError(
            Errors.E092.format(command=command, output=str(record.parent), record=record.name, changed=changed)
        )


def prepare_settings(
    min_count: int,
    max_contexts: int,
    rare_max_contexts: int,
    max_rare_words: Optional[int],
    context_words: int,
    lowercase: bool,
    seed: int,
) -> Dict[str, Any]:
    """The settings `prepare` records (prepare.json's `settings`) and a rerun must repeat."""
    return {
        "min_count": min_count,
        "max_contexts": max_contexts,
        "rare_max_contexts": rare_max_contexts,
        "max_rare_words": max_rare_words,
        "context_words": context_words,
        "lowercase": lowercase,
        "seed": seed,
    }


def check_prepare_output(output: PathLike, settings: Mapping[str, Any], force: bool = False) -> None:
    """The output rule (`fileio.check_output_dir`) for `prepare`, and its previous run's settings
    (`check_same_settings`, by prepare.json)."""
    check_output_dir(output, PREPARE_FILES, command="prepare", force=force)
    info = Path(output) / PREPARE_FILES[2]
    check_same_settings(info, settings, lambda recorded: recorded["settings"], command="prepare", force=force)


def check_prepare_run(output: PathLike, settings: Mapping[str, Any], force: bool = False) -> None:
    """The one check of a `prepare` run (its `prepare_settings`) before any work, for the step and the command
    alike (the command asks before it imports the step): its count settings, then its output."""
    check_prepare_settings(**{name: settings[name] for name in PREPARE_COUNTS})
    check_prepare_output(output, settings, force=force)


def target_settings(
    base_model: str,
    min_count: int,
    max_words: Optional[int],
    held_out_fraction: float,
    seed: int,
    multi_piece_words: int,
    multi_piece_min_zipf: float,
    ota: OTASettings,
) -> Dict[str, Any]:
    """The settings a target set records (targets.json: its `base_model` and `info`) and a rerun of `targets`
    must repeat."""
    return {
        "base_model": base_model,
        "min_count": min_count,
        "max_words": max_words,
        "held_out_fraction": held_out_fraction,
        "seed": seed,
        "multi_piece_words": multi_piece_words,
        "multi_piece_min_zipf": multi_piece_min_zipf,
        "ota": dict(vars(ota)),
    }


def check_targets_output(output: PathLike, settings: Mapping[str, Any], force: bool = False) -> None:
    """The output rule (`fileio.check_output_dir`) for `targets`, and its previous run's settings
    (`check_same_settings`, by targets.json)."""
    check_output_dir(output, TARGET_FILES, command="targets", force=force, replaces=True)
    check_same_settings(
        Path(output) / TARGET_FILES[0],
        settings,
        lambda index: {"base_model": index["base_model"], **index["info"]},
        command="targets",
        force=force,
    )


__all__ = [
    "METRICS_FILE",
    "MODEL_DIR",
    "PREPARE_FILES",
    "RUN_FILES",
    "TARGETS_DIR",
    "TARGET_FILES",
    "TRAIN_OUTPUTS",
    "DEFAULT_PATH_MIX",
    "VECTORS_OUTPUTS",
    "PLAN_FILE",
    "DEFAULT_LANG",
    "changed_settings",
    "check_vector_request",
    "store_summary",
    "summary_of_store",
    "VectorSelection",
    "vector_request_changes",
    "MIN_TRAINING_WORDS",
    "check_multi_piece_words",
    "check_vector_settings",
    "check_word_limits",
    "check_workers",
    "DEFAULT_EPOCHS",
    "check_encoder_settings",
    "check_prepare_settings",
    "changed_settings",
    "check_prepare_output",
    "check_prepare_run",
    "check_same_settings",
    "check_targets_output",
    "prepare_settings",
    "target_settings",
    "check_stage_epochs",
    "read_word_list",
    "stage_count",
    "DEFAULT_HELD_OUT",
    "DEFAULT_MAX_CONTEXTS",
    "DEFAULT_MIN_COUNT",
    "DEFAULT_RARE_MAX_CONTEXTS",
    "NETWORK_KEYS",
    "NOT_TRAINING_SETTINGS",
    "OTASettings",
    "RunOptions",
    "TrainingData",
    "TrainSettings",
    "CACHE_DIR",
    "CACHE_FILES",
    "CHECKPOINTS_DIR",
    "MODEL_DIRS",
    "PROGRESS_FILE",
    "check_train_output",
    "model_dirs",
]
