"""A vector table's shards: the plan and finished shards on disk, and what computes a shard's rows.

`vectors.py` (the driver) and `distributed.py` (Dask) both use this module: the
driver plans the shards (`ShardStore`) and fills the missing ones in this process
or on a cluster; either way a shard's rows come from `infer_words` on the model
and store that `worker_state` loads once per process (`JobSettings` says which).
Only `vectors` computes tables, so this lives in training/ and the runtime, which
reads finished tables (`pipeline/vector_table.py`), never imports it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Tuple

import numpy
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from ..errors import Errors
from ..fileio import atomic_path, write_json_atomic
from ..model.network import BertramNetwork, default_token_budget
from ..context_store import ContextStore, open_context_store
from ..pipeline.context_sources import chain_contexts
from ..pipeline.table_files import PLAN_FILE
from ..pipeline.vector_table import FORMAT_NAME, SHARDS_DIR, VectorTable
from ..model.storage import load_bertram, model_fingerprint
from ..types import DEFAULT_CONTEXTS_PER_WORD, PathLike
from .settings import changed_settings
from .worker_objects import once_per_process


def plan_changes(old: Any, new: Mapping[str, Any]) -> str:
    """How two plans differ, in words: the number of words where they differ (not the lists), then the settings."""
    if not isinstance(old, dict):
        return f"recorded: {old!r}"
    changes = []
    if old.get("words") != new["words"]:
        changes.append(f"words: {len(old.get('words') or [])} -> {len(new['words'])}")
    rest = changed_settings(
        {k: v for k, v in old.items() if k != "words"}, {k: v for k, v in new.items() if k != "words"}
    )
    return "; ".join(changes + ([rest] if rest else []))


class ShardStore:
    """The `shards/` directory of a table being computed: a plan and finished shards.

    A shard is `shard-NNNNN.safetensors` holding its rows, with its words in
    the file's metadata; each is written atomically, so any file present is
    whole. `open` refuses shards left by a run with other words or settings.
    """

    def __init__(self, output: PathLike, plan: Mapping[str, Any]) -> None:
        self.output = Path(output)
        self.directory = self.output / SHARDS_DIR
        self.plan = dict(plan)
        self.words: List[str] = list(plan["words"])
        self.shard_size = int(plan["shard_size"])

    @classmethod
    def open(cls, output: PathLike, words: Sequence[str], shard_size: int, settings: Mapping[str, Any]) -> "ShardStore":
        if shard_size < 1:
            raise ValueError(Errors.E052.format(setting="shard size", bounds="at least 1", value=shard_size))
        plan = {"format": FORMAT_NAME, "words": list(words), "shard_size": int(shard_size), "settings": dict(settings)}
        store = cls(output, plan)
        plan_path = store.directory / PLAN_FILE
        if plan_path.is_file():
            old = json.loads(plan_path.read_text(encoding="utf8"))
            new = json.loads(json.dumps(plan))
            if old != new:
                raise ValueError(Errors.E236.format(directory=str(store.directory), changed=plan_changes(old, new)))
        else:
            store.directory.mkdir(parents=True, exist_ok=True)
            write_json_atomic(plan_path, plan, indent=None)
        return store

    @property
    def n_shards(self) -> int:
        return (len(self.words) + self.shard_size - 1) // self.shard_size

    def shard_words(self, index: int) -> List[str]:
        return self.words[index * self.shard_size : (index + 1) * self.shard_size]

    def path(self, index: int) -> Path:
        return self.directory / f"shard-{index:05d}.safetensors"

    def missing(self) -> List[int]:
        """Shards still to compute (a shard whose file is unreadable counts as missing)."""
        todo = []
        for index in range(self.n_shards):
            try:
                self.read(index)
            except ValueError:
                todo.append(index)
        return todo

    def write(self, index: int, vectors: numpy.ndarray) -> None:
        words = self.shard_words(index)
        vectors = numpy.ascontiguousarray(vectors, dtype="float32")
        if vectors.shape[0] != len(words) or not numpy.isfinite(vectors).all():
            raise ValueError(Errors.E237.format(index=index, shape=vectors.shape[0], n_words=len(words)))
        with atomic_path(self.path(index), overwrite=True) as tmp:
            save_file({"vectors": vectors}, str(tmp), metadata={"words": json.dumps(words, ensure_ascii=False)})

    def read(self, index: int) -> numpy.ndarray:
        path = self.path(index)
        if not path.is_file():
            raise ValueError(Errors.E238.format(index=index))
        try:
            with safe_open(str(path), framework="numpy") as file_:
                words = json.loads((file_.metadata() or {}).get("words", "null"))
                vectors = file_.get_tensor("vectors")
        except (OSError, ValueError, SafetensorError) as err:
            raise ValueError(Errors.E239.format(index=index, err=err)) from err
        if words != self.shard_words(index) or vectors.shape[0] != len(words):
            raise ValueError(Errors.E240.format(index=index))
        return vectors

    def merge(self, meta: Mapping[str, Any]) -> VectorTable:
        """The finished table (every shard must be there)."""
        parts = [self.read(index) for index in range(self.n_shards)]
        width = parts[0].shape[1] if parts else int(meta.get("width", 0))
        matrix = numpy.concatenate(parts) if parts else numpy.zeros((0, width), dtype="float32")
        return VectorTable(self.words, matrix, meta)


@dataclass(frozen=True)
class JobSettings:
    """What every worker needs to compute rows: paths must be valid where the worker runs."""

    model_path: str
    store_path: str
    max_contexts: int = DEFAULT_CONTEXTS_PER_WORD
    token_budget: int = 0  # 0: the device's default budget
    device: str = "cpu"
    torch_threads: int = 0  # 0: torch's own default
    then_store_paths: Tuple[str, ...] = ()  # read after store_path for the contexts it lacks (`StoreChain`)


@dataclass
class WorkerState:
    """What one worker process holds: the network on its device, the store, the fingerprint."""

    network: Any
    store: Any
    fingerprint: str


def worker_state(job: JobSettings) -> WorkerState:
    """Load the model and open the store once per process (and per job settings)."""

    def make() -> WorkerState:
        network = load_bertram(job.model_path, device=job.device).eval()
        return WorkerState(network, open_stores(job), model_fingerprint(job.model_path))

    return once_per_process(("vectors", job), make, job.torch_threads)


class StoreChain:
    """Context stores read in order for a word (`chain_contexts`, the component's rule for chained sources:
    each adds the texts not taken yet until the word has its limit), so that a table of the user's own
    texts gets the general store's contexts where their texts have too few, as the component's chained
    store sources give them."""

    def __init__(self, stores: Sequence[ContextStore]) -> None:
        self.stores = list(stores)

    def contexts(self, word: str, limit: Optional[int] = None) -> List[str]:
        return chain_contexts(((store.contexts(word, limit=limit), None) for store in self.stores), limit)

    def close(self) -> None:
        for store in self.stores:
            store.close()


def open_stores(job: JobSettings) -> Any:
    """The job's store, or its stores chained when it has more (`then_store_paths`)."""
    first = open_context_store(job.store_path)
    if not job.then_store_paths:
        return first
    return StoreChain([first, *(open_context_store(path) for path in job.then_store_paths)])


def store_items(store: Any, words: Sequence[str], max_contexts: int) -> List[Tuple[str, List[str]]]:
    return [(word, store.contexts(word, limit=max_contexts)) for word in words]


def infer_words(
    network: BertramNetwork, store: ContextStore, words: Sequence[str], max_contexts: int, token_budget: int = 0
) -> numpy.ndarray:
    """Rows for `words` from their store contexts: the single-process reference."""
    budget = token_budget or default_token_budget(network.device)
    return network.infer(store_items(store, words, max_contexts), token_budget=budget)
