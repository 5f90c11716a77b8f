"""Each training word's pool of encoded contexts, and the per-step context sample.

A word keeps up to `pool_contexts` contexts for the whole run; every step
draws between `min_contexts` and `max_contexts` of them (without
replacement), so the network learns to work with few and with many.

In the inplace mode a word's rows are of three kinds: contexts that spell the
word, contexts that read the mask instead (the nonce-word case) and the bare
row of its pieces alone. Inference reads exactly one of three combinations
(`PATHS`): the bare row alone (no context found), masked contexts alone
(`use_form=False`), or spelled contexts with the bare row. A step can draw
each word's rows as one of those paths, so every path the component takes is
trained as it is asked, instead of a mix of kinds that inference never reads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy
import torch

from ..model.inputs import EncodedContext, InputBuilder

#: Row kinds in an inplace pool.
SPELLED, MASKED, BARE = 0, 1, 2
#: The inference paths a step can train, in the order of `TrainSettings.path_mix`.
PATHS = ("spelling", "contexts", "both")


@dataclass
class ContextPools:
    """Encoder rows of all words, word by word: rows[starts[i]:ends[i]] belong to word i."""

    rows: List[EncodedContext]
    starts: numpy.ndarray
    ends: numpy.ndarray
    kinds: numpy.ndarray  # SPELLED, MASKED or BARE per row (SPELLED outside the inplace mode)

    @classmethod
    def build(
        cls,
        builder: InputBuilder,
        words: Sequence[str],
        contexts: Sequence[Sequence[str]],
        pool: int,
        pieces: Optional[Sequence[Sequence[int]]] = None,
        mask_fraction: float = 0.0,
        seed: int = 0,
    ) -> "ContextPools":
        """`pieces` spell the words in the inplace mode (their rare-like segmentation);
        there a seeded `mask_fraction` of the rows reads the mask token instead of the
        word's first occurrence, so the network also learns to infer from context alone
        (the nonce-word case, `infer(use_form=False)`)."""
        rows = builder.encode_many(words, contexts, pool, pieces)
        kinds = [SPELLED] * len(rows)
        if mask_fraction > 0.0:
            chosen = numpy.random.default_rng(seed).random(len(rows)) < mask_fraction
            rows = [mask_first_occurrence(r, builder.mask_id) if c else r for r, c in zip(rows, chosen)]
            kinds = [MASKED if c else SPELLED for c in chosen]
        if pieces is not None:  # inplace: each word is also read from its pieces alone, as at inference,
            # so a word without contexts (or whose contexts are withheld, as held-out words') still has a row
            bare = [builder.bare(i, pieces[i]) for i in range(len(words))]
            ordered = sorted(zip(rows + bare, kinds + [BARE] * len(bare)), key=lambda pair: pair[0].word_index)
            rows, kinds = [r for r, _ in ordered], [k for _, k in ordered]
        word_ids = numpy.asarray([r.word_index for r in rows], dtype=numpy.int64)
        starts = numpy.searchsorted(word_ids, numpy.arange(len(words)), side="left")
        ends = numpy.searchsorted(word_ids, numpy.arange(len(words)), side="right")
        return cls(rows, starts, ends, numpy.asarray(kinds, dtype=numpy.int8))

    def sizes(self) -> numpy.ndarray:
        return self.ends - self.starts

    def sample(
        self,
        words: Sequence[int],
        rng: numpy.random.Generator,
        min_k: int,
        max_k: int,
        path_mix: Optional[Sequence[float]] = None,
    ) -> Tuple[numpy.ndarray, torch.Tensor]:
        """Row ids drawn for each word, and each row's position in `words`.

        Without `path_mix`, any of a word's rows; with it, each word's rows form one of `PATHS`,
        drawn with these shares (a word without masked rows reads its spelling instead)."""
        ks = rng.integers(min_k, max_k + 1, size=len(words))
        paths = rng.choice(len(PATHS), size=len(words), p=path_mix) if path_mix is not None else None
        chosen: List[numpy.ndarray] = []
        local: List[numpy.ndarray] = []
        for position, (word, k) in enumerate(zip(words, ks)):
            start, end = int(self.starts[word]), int(self.ends[word])
            if paths is None:
                picked = start + rng.choice(end - start, size=min(int(k), end - start), replace=False)
            else:
                picked = self._path_rows(start, end, PATHS[paths[position]], int(k), rng)
            chosen.append(picked)
            local.append(numpy.full(len(picked), position, dtype=numpy.int64))
        return numpy.concatenate(chosen), torch.from_numpy(numpy.concatenate(local))

    def _path_rows(self, start: int, end: int, path: str, k: int, rng: numpy.random.Generator) -> numpy.ndarray:
        """Up to k contexts of the path's kind, with the bare row where inference reads it."""
        own = numpy.arange(start, end)
        kinds = self.kinds[start:end]
        bare = own[kinds == BARE]
        contexts = own[kinds == (MASKED if path == "contexts" else SPELLED)]
        if path == "spelling" or len(contexts) == 0:
            return bare if len(bare) else own[:1]
        picked = rng.choice(contexts, size=min(k, len(contexts)), replace=False)
        return picked if path == "contexts" else numpy.concatenate([picked, bare])

    def rows_for(self, row_ids: numpy.ndarray, local: torch.Tensor) -> List[EncodedContext]:
        """The sampled rows, re-indexed to the batch (for encoding them afresh)."""
        return [dataclasses.replace(self.rows[r], word_index=int(i)) for r, i in zip(row_ids.tolist(), local.tolist())]


def mask_first_occurrence(row: EncodedContext, mask_id: int) -> EncodedContext:
    """The row with the pieces of the word's first occurrence replaced by one mask token."""
    p, span = row.mask_position, row.span
    ids = (*row.input_ids[:p], mask_id, *row.input_ids[p + span :])
    return dataclasses.replace(row, input_ids=ids, span=1)
