"""Each training word's pool of encoded contexts, and the per-step context sample.

A word keeps up to `pool_contexts` contexts for the whole run; every step
draws between `min_contexts` and `max_contexts` of them (without
replacement), so the network learns to work with few and with many.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy
import torch

from ..inputs import EncodedContext, InputBuilder


@dataclass
class ContextPools:
    """Encoder rows of all words, word by word: rows[starts[i]:ends[i]] belong to word i."""

    rows: List[EncodedContext]
    starts: numpy.ndarray
    ends: numpy.ndarray

    @classmethod
    def build(
        cls, builder: InputBuilder, words: Sequence[str], contexts: Sequence[Sequence[str]], pool: int,
        pieces: Optional[Sequence[Sequence[int]]] = None,
        mask_fraction: float = 0.0,
        seed: int = 0,
    ) -> "ContextPools":
        """`pieces` spell the words in the inplace mode (their rare-like segmentation);
        there a seeded `mask_fraction` of the rows reads the mask token instead of the
        word's first occurrence, so the network also learns to infer from context alone
        (the nonce-word case, `infer(use_form=False)`)."""
        rows = builder.encode_many(words, contexts, pool, pieces)
        if mask_fraction > 0.0:
            chosen = numpy.random.default_rng(seed).random(len(rows)) < mask_fraction
            rows = [mask_first_occurrence(r, builder.mask_id) if c else r for r, c in zip(rows, chosen)]
        if pieces is not None:  # inplace: each word is also read from its pieces alone, as at inference,
            # so a word without contexts (or whose contexts are withheld, as held-out words') still has a row
            rows = sorted(rows + [builder.bare(i, pieces[i]) for i in range(len(words))], key=lambda r: r.word_index)
        word_ids = numpy.asarray([r.word_index for r in rows], dtype=numpy.int64)
        starts = numpy.searchsorted(word_ids, numpy.arange(len(words)), side="left")
        ends = numpy.searchsorted(word_ids, numpy.arange(len(words)), side="right")
        return cls(rows, starts, ends)

    def sizes(self) -> numpy.ndarray:
        return self.ends - self.starts

    def sample(
        self, words: Sequence[int], rng: numpy.random.Generator, min_k: int, max_k: int
    ) -> Tuple[numpy.ndarray, torch.Tensor]:
        """Row ids drawn for each word, and each row's position in `words`."""
        ks = rng.integers(min_k, max_k + 1, size=len(words))
        chosen: List[numpy.ndarray] = []
        local: List[numpy.ndarray] = []
        for position, (word, k) in enumerate(zip(words, ks)):
            start, size = int(self.starts[word]), int(self.ends[word] - self.starts[word])
            picked = start + rng.choice(size, size=min(int(k), size), replace=False)
            chosen.append(picked)
            local.append(numpy.full(len(picked), position, dtype=numpy.int64))
        return numpy.concatenate(chosen), torch.from_numpy(numpy.concatenate(local))

    def rows_for(self, row_ids: numpy.ndarray, local: torch.Tensor) -> List[EncodedContext]:
        """The sampled rows, re-indexed to the batch (for encoding them afresh)."""
        return [dataclasses.replace(self.rows[r], word_index=int(i)) for r, i in zip(row_ids.tolist(), local.tolist())]


def mask_first_occurrence(row: EncodedContext, mask_id: int) -> EncodedContext:
    """The row with the pieces of the word's first occurrence replaced by one mask token."""
    p, span = row.mask_position, row.span
    ids = (*row.input_ids[:p], mask_id, *row.input_ids[p + span :])
    return dataclasses.replace(row, input_ids=ids, span=1)
