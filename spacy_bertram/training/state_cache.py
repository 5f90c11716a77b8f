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
"""
from __future__ import annotations

import hashlib
import math
import os
import time
from pathlib import Path
from collections import defaultdict
from typing import Dict, Iterator, List, Optional, Sequence

import numpy
import torch
from numpy.lib.format import open_memmap
from torch import Tensor
from tqdm import tqdm

from ..errors import Errors
from ..fileio import write_json_atomic
from ..inputs import EncodedContext
from ..network import BertramNetwork

MIN_BATCH_TOKENS = 64


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
        token_budget: int = 4096,
        progress: bool = True,
    ) -> "StateCache":
        """Encode all rows (or reuse a finished file with the same fingerprint)."""
        hidden = int(network.config.encoder_hidden_width or network.width)
        nbytes = len(rows) * hidden * 4
        fits = nbytes <= memory_mb * 2**20
        if directory is None:
            if not fits:
                raise ValueError(Errors.E242)
            states = numpy.zeros((len(rows), hidden), dtype=numpy.float32)
            seconds = _encode_into(network, rows, slot_vectors, states, token_budget, progress)
            return cls(torch.from_numpy(states).to(network.device), network.device, seconds, None)
        directory.mkdir(parents=True, exist_ok=True)
        key = fingerprint(network, rows, slot_vectors)
        path, meta = directory / f"states-{key}.npy", directory / f"states-{key}.json"
        seconds = 0.0
        if not (meta.is_file() and path.is_file()):
            tmp = directory / f".states-{key}.npy.tmp"
            array = open_memmap(str(tmp), mode="w+", dtype=numpy.float32, shape=(len(rows), hidden))
            seconds = _encode_into(network, rows, slot_vectors, array, token_budget, progress)
            array.flush()
            del array
            os.replace(tmp, path)
            write_json_atomic(meta, {"rows": len(rows), "hidden": hidden, "seconds": seconds})
        try:
            array = numpy.load(str(path), mmap_mode="r")
            if array.shape != (len(rows), hidden) or array.dtype != numpy.float32:
                raise ValueError(Errors.E243.format(shape=array.shape, dtype=array.dtype, n_rows=len(rows),
                                                    hidden=hidden))
        except (OSError, ValueError, EOFError) as err:
            raise ValueError(Errors.E244.format(path=str(path), err=err)) from err
        if fits:
            return cls(torch.from_numpy(numpy.array(array)).to(network.device), network.device, seconds, path)
        return cls(array, network.device, seconds, path)


@torch.no_grad()
def _encode_into(
    network: BertramNetwork,
    rows: Sequence[EncodedContext],
    slot_vectors: Optional[Tensor],
    out: numpy.ndarray,
    token_budget: int,
    progress: bool,
) -> float:
    start = time.perf_counter()
    was_training = network.training
    network.eval()
    try:
        bar = tqdm(total=len(rows), desc="encoding contexts once", unit="ctx", disable=not progress, leave=False)
        for batch in length_batches(rows, token_budget):
            states = _encode_batch(network, [rows[i] for i in batch], slot_vectors, token_budget)
            out[numpy.asarray(batch)] = states.float().cpu().numpy()
            bar.update(len(batch))
        bar.close()
    finally:
        network.train(was_training)
    return time.perf_counter() - start


def describe(cache: StateCache) -> dict:
    return {"rows": len(cache), "encode_seconds": round(cache.seconds, 2), "file": str(cache.path) if cache.path else None}

