"""The arrays an injection reads and writes, as small dataclasses.

- `StockBatch`: the stock wordpiece batch (after truncation), as numpy arrays;
- `ChosenWords`: the words that get a vector, one entry per sequence holding them;
- `InjectionPlan` / `PlanTensors`: what a mode's builder (`builders.py`) makes: the
  rebuilt encoder inputs and the map back to the stock layout (`mapping.py`);

Nothing here depends on the mode, so the builders and the planner share these types
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy
import torch
from spacy_transformers.data_classes import WordpieceBatch


def row_ends(attention_mask: numpy.ndarray) -> numpy.ndarray:
    """One past the last real position of each row (0 for a row without any)."""
    real = numpy.asarray(attention_mask) > 0
    return numpy.where(real.any(axis=1), real.shape[1] - numpy.argmax(real[:, ::-1], axis=1), 0)


@dataclass(frozen=True)
class StockBatch:
    """The stock wordpieces every builder starts from; `valid` columns are those before a row's end."""

    input_ids: numpy.ndarray
    attention_mask: numpy.ndarray
    token_type_ids: Optional[numpy.ndarray]
    real: numpy.ndarray  # attention_mask > 0
    end: numpy.ndarray  # per row, one past the last real position
    valid: numpy.ndarray  # column < end, per row

    @classmethod
    def from_wordpieces(cls, wordpieces: WordpieceBatch) -> "StockBatch":
        """The batch's arrays, converted once for the planner and the builder."""
        input_ids = numpy.asarray(wordpieces.input_ids)
        real = numpy.asarray(wordpieces.attention_mask) > 0
        end = row_ends(real)
        type_ids = wordpieces.token_type_ids
        return cls(
            input_ids=input_ids,
            attention_mask=numpy.asarray(wordpieces.attention_mask),
            token_type_ids=None if type_ids is None else numpy.asarray(type_ids),
            real=real,
            end=end,
            valid=numpy.arange(input_ids.shape[1])[None, :] < end[:, None],
        )

    @property
    def keep(self) -> numpy.ndarray:
        """The stock positions whose outputs are kept (real and before the row's end); padding gets zeros."""
        return self.real & self.valid


@dataclass(frozen=True)
class ChosenWords:
    """The injected words, sorted by row and first piece, none overlapping another in its row.

    Word k covers wordpieces `starts[k]..stops[k]` of sequence `rows[k]` and gets `vectors[k]`.
    """

    rows: numpy.ndarray
    starts: numpy.ndarray
    stops: numpy.ndarray
    vectors: numpy.ndarray  # float32, one row per word
    n_skipped: int  # words (per sequence) left without a vector


@dataclass
class InjectionPlan:
    """Rebuilt encoder inputs for one batch plus the map back to the stock layout.

    `src[b, k]` is the rebuilt position whose output stock position k of sequence b
    receives; `keep[b, k]` is False where the stock position is padding.
    """

    input_ids: numpy.ndarray
    attention_mask: numpy.ndarray
    token_type_ids: Optional[numpy.ndarray]
    vector_rows: numpy.ndarray
    vector_cols: numpy.ndarray
    vectors: numpy.ndarray
    src: numpy.ndarray
    keep: numpy.ndarray
    n_skipped: int = 0
    add: bool = False  # recentre: the vectors are added to the embedding rows, not put in their place
    _tensors: Dict[str, "PlanTensors"] = field(default_factory=dict, repr=False, compare=False)

    def on_device(self, device: Any) -> "PlanTensors":
        """The plan's index tensors on `device`, made once per batch (not per output or layer)."""
        key = str(device)
        tensors = self._tensors.get(key)
        if tensors is None:
            n_seq, new_length = self.input_ids.shape
            flat = (numpy.arange(n_seq, dtype="int64")[:, None] * new_length + self.src).ravel()
            tensors = self._tensors[key] = PlanTensors(
                rows=torch.as_tensor(self.vector_rows, device=device),
                cols=torch.as_tensor(self.vector_cols, device=device),
                vectors=torch.as_tensor(self.vectors, device=device),
                src=torch.as_tensor(self.src, device=device),
                keep=torch.as_tensor(self.keep, device=device),
                flat_src=torch.as_tensor(flat, device=device),
                drop=torch.as_tensor(~self.keep, device=device),
            )
        return tensors


@dataclass
class PlanTensors:
    """An `InjectionPlan`'s index arrays as tensors on the encoder's device."""

    rows: torch.Tensor
    cols: torch.Tensor
    vectors: torch.Tensor
    src: torch.Tensor
    keep: torch.Tensor
    flat_src: torch.Tensor  # b * new_length + src[b, k], flattened: one index_select per output
    drop: torch.Tensor  # ~keep
