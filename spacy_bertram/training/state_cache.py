"""Encoder states at the mask, computed once and reused across epochs.

In stage 1 (context only) and in stage 3 for ADD with the form part frozen,
the frozen encoder's output for a (word, context) row depends on no trained
parameter, so recomputing it every epoch is pure waste: we encode every pool
row once, and afterwards a step costs only the small attentive-mimicking head.

Rows are encoded in batches of equal length (`encode_unpadded`), with no
padding: then a row's state does not depend on which other rows share its
batch (padding to different lengths changes the float rounding by ~1e-6,
which Adam amplifies into visibly different runs). So cached and recomputed
states are identical, and training with reuse matches training without it.

The states live in a `.npy` file (memory-mapped, so memory stays bounded by
`memory_mb`; loaded whole when it fits) named by a fingerprint of the rows,
slot vectors and encoder, with a JSON sidecar written last: a resumed run, or
a later stage with identical inputs, reuses it instead of encoding again.

Since a row's state does not depend on its batch, the batches can also run as
Dask tasks (`encode_on_dask`, each worker loading the encoder once): the same
states as one process, to float rounding (a worker's thread count may round a
matrix product differently).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import uuid
from pathlib import Path
from collections import defaultdict
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy
import torch
from numpy.lib.format import open_memmap
from torch import Tensor

from ..errors import Errors
from ..fileio import write_json_atomic
from ..model.config import BertramConfig
from ..model.encoder import load_encoder
from ..model.inputs import EncodedContext, NgramVocab
from ..model.network import BertramNetwork
from ..types import DEFAULT_TOKEN_BUDGET
from .distributed import local_threads, run_tasks
from .progress import progress_bar
from .worker_objects import once_per_process

MIN_BATCH_TOKENS = 64
#: Encoder positions per Dask task: a few seconds of work, few enough tasks to schedule cheaply.
TASK_TOKENS = 262_144


def length_batches(rows: Sequence[EncodedContext], token_budget: int) -> Iterator[List[int]]:
    """Row indices grouped by exact length, each group cut to the token budget."""
    by_length: Dict[int, List[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        by_length[len(row)].append(index)
    for length in sorted(by_length):
        group, size = by_length[length], max(1, token_budget // length)
        for start in range(0, len(group), size):
            yield group[start : start + size]


def _encode_batch(
    network: BertramNetwork, batch: List[EncodedContext], slot_vectors: Optional[Tensor], token_budget: int
) -> Tensor:
    """One same-length batch, repeated up to MIN_BATCH_TOKENS tokens on the CPU: CPU kernels
    round tiny matrices (one row; 4 rows of 5 tokens) differently from larger ones. Other
    devices run the batch as it is (see README, GPU: what is deterministic)."""
    if network.device.type != "cpu":
        return network.encode_contexts(batch, slot_vectors, token_budget)
    copies = max(1, math.ceil(MIN_BATCH_TOKENS / (len(batch) * len(batch[0]))))
    return network.encode_contexts(batch * copies, slot_vectors, token_budget)[: len(batch)]


def encode_unpadded(
    network: BertramNetwork, rows: Sequence[EncodedContext], slot_vectors: Optional[Tensor], token_budget: int
) -> Tensor:
    """States at the mask for `rows` (in order), each batch of one length: batch-invariant."""
    if not rows:
        return network.encode_contexts(rows, slot_vectors, token_budget)
    order: List[int] = []
    parts: List[Tensor] = []
    for batch in length_batches(rows, token_budget):
        order.extend(batch)
        parts.append(_encode_batch(network, [rows[i] for i in batch], slot_vectors, token_budget))
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.as_tensor(order)] = torch.arange(len(order))
    return torch.cat(parts)[inverse.to(parts[0].device)]


def fingerprint(network: BertramNetwork, rows: Sequence[EncodedContext], slot_vectors: Optional[Tensor]) -> str:
    digest = hashlib.sha1()
    config = network.config
    digest.update(f"{config.base_model}|{config.encoder_hidden_width}|{config.read_layer}|{len(rows)}".encode())
    if network.device.type != "cpu":  # states computed on another device differ in rounding
        digest.update(f"|{network.device.type}".encode())
    for row in rows:
        fields = (row.word_index, row.mask_position, row.slot_position, row.span, *row.input_ids)
        digest.update(numpy.asarray(fields, dtype=numpy.int64).tobytes())
    if slot_vectors is not None:
        digest.update(slot_vectors.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


class StateCache:
    """Row id -> encoder state at the mask, for a fixed list of rows."""

    def __init__(self, states, device: torch.device, seconds: float, path: Optional[Path]) -> None:
        self.states = states  # torch Tensor on `device`, or a numpy memmap
        self.device = device
        self.seconds = seconds  # time spent encoding (0 when loaded from disk)
        self.path = path

    def __len__(self) -> int:
        return int(self.states.shape[0])

    def get(self, row_ids: numpy.ndarray) -> Tensor:
        if isinstance(self.states, Tensor):
            return self.states[torch.from_numpy(row_ids).to(self.device)]
        return torch.from_numpy(numpy.ascontiguousarray(self.states[row_ids])).to(self.device)

    @classmethod
    def build(
        cls,
        network: BertramNetwork,
        rows: Sequence[EncodedContext],
        slot_vectors: Optional[Tensor] = None,
        directory: Optional[Path] = None,
        memory_mb: float = 2048,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        progress: bool = True,
        client: Any = None,
    ) -> "StateCache":
        """Encode all rows (or reuse a finished file with the same fingerprint); with a Dask `client`, on its
        workers (the same states, to float rounding)."""
        hidden = int(network.config.encoder_hidden_width or network.width)
        nbytes = len(rows) * hidden * 4
        fits = nbytes <= memory_mb * 2**20
        if directory is None:
            if not fits:
                raise ValueError(Errors.E242)
            states = numpy.zeros((len(rows), hidden), dtype=numpy.float32)
            seconds = encode_into(network, rows, slot_vectors, states, token_budget, progress, client)
            return cls(torch.from_numpy(states).to(network.device), network.device, seconds, None)
        directory.mkdir(parents=True, exist_ok=True)
        key = fingerprint(network, rows, slot_vectors)
        path, meta = directory / f"states-{key}.npy", directory / f"states-{key}.json"
        seconds = 0.0
        if not (meta.is_file() and path.is_file()):
            tmp = directory / f".states-{key}.npy.tmp"
            array = open_memmap(str(tmp), mode="w+", dtype=numpy.float32, shape=(len(rows), hidden))
            seconds = encode_into(network, rows, slot_vectors, array, token_budget, progress, client)
            array.flush()
            del array
            os.replace(tmp, path)
            write_json_atomic(meta, {"rows": len(rows), "hidden": hidden, "seconds": seconds}, overwrite=True)
        try:
            array = numpy.load(str(path), mmap_mode="r")
            if array.shape != (len(rows), hidden) or array.dtype != numpy.float32:
                raise ValueError(
                    Errors.E243.format(shape=array.shape, dtype=array.dtype, n_rows=len(rows), hidden=hidden)
                )
        except (OSError, ValueError, EOFError) as err:
            raise ValueError(Errors.E244.format(path=str(path), err=err)) from err
        if fits:
            return cls(torch.from_numpy(numpy.array(array)).to(network.device), network.device, seconds, path)
        return cls(array, network.device, seconds, path)


@torch.no_grad()
def encode_into(
    network: BertramNetwork,
    rows: Sequence[EncodedContext],
    slot_vectors: Optional[Tensor],
    out: numpy.ndarray,
    token_budget: int,
    progress: bool,
    client: Any = None,
) -> float:
    """Write each row's state into `out` (rows in order), here or on a Dask `client`'s workers; the seconds it took."""
    start = time.perf_counter()
    if client is not None:
        encode_on_dask(
            client, network, list(length_batches(rows, token_budget)), rows, slot_vectors, out, token_budget, progress
        )
        return time.perf_counter() - start
    was_training = network.training
    network.eval()
    try:
        bar = progress_bar(progress=progress, total=len(rows), desc="encoding contexts once", unit="ctx", leave=False)
        for batch in length_batches(rows, token_budget):
            states = _encode_batch(network, [rows[i] for i in batch], slot_vectors, token_budget)
            out[numpy.asarray(batch)] = states.float().cpu().numpy()
            bar.update(len(batch))
        bar.close()
    finally:
        network.train(was_training)
    return time.perf_counter() - start


def encode_task(
    base_model: str,
    config: BertramConfig,
    rows: List[EncodedContext],
    slot_vectors: Optional[numpy.ndarray],
    token_budget: int,
    threads: int,
) -> numpy.ndarray:
    """A Dask task: the states at the mask for `rows`, as `encode_into` computes them in one process."""

    def make() -> BertramNetwork:  # encode_contexts reads the encoder and the config, not the n-grams
        encoder, tokenizer = load_encoder(base_model)
        return BertramNetwork(config, NgramVocab(), encoder, tokenizer).eval()

    network = once_per_process(("states", base_model, json.dumps(config.to_dict(), sort_keys=True)), make, threads)
    hidden = int(network.config.encoder_hidden_width or network.width)
    out = numpy.zeros((len(rows), hidden), dtype=numpy.float32)
    slots = None if slot_vectors is None else torch.from_numpy(slot_vectors)
    encode_into(network, rows, slots, out, token_budget, progress=False)
    return out


def encode_on_dask(
    client: Any,
    network: BertramNetwork,
    batches: Sequence[List[int]],
    rows: Sequence[EncodedContext],
    slot_vectors: Optional[Tensor],
    out: numpy.ndarray,
    token_budget: int,
    progress: bool = True,
) -> None:
    """Fill `out` (rows in order) with the states the cluster's workers compute, the batches grouped into tasks
    of about TASK_TOKENS positions; each task's rows are written as it finishes."""
    tasks: List[List[int]] = [[]]
    tokens = 0
    for batch in batches:
        size = len(batch) * len(rows[batch[0]])
        if tasks[-1] and tokens + size > TASK_TOKENS:
            tasks.append([])
            tokens = 0
        tasks[-1].extend(batch)
        tokens += size
    slots = (
        None if slot_vectors is None else client.scatter(slot_vectors.detach().float().cpu().numpy(), broadcast=True)
    )
    threads, run_id = local_threads(client), uuid.uuid4().hex[:12]
    config = network.config

    def write(position: int, states: numpy.ndarray) -> None:
        out[numpy.asarray(tasks[position])] = states

    run_tasks(
        client,
        encode_task,
        [(config.base_model, config, [rows[i] for i in task], slots, token_budget, threads) for task in tasks],
        [f"bertram-states-{run_id}-{position}" for position in range(len(tasks))],
        write,
        progress,
    )


def describe(cache: StateCache) -> dict:
    return {
        "rows": len(cache),
        "encode_seconds": round(cache.seconds, 2),
        "file": str(cache.path) if cache.path else None,
    }
