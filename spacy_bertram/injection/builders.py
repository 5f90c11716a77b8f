"""One builder per injection mode: the encoder inputs for the words chosen by `plan.py`.

A builder takes the stock batch and the chosen words (`batch.py`) and returns the
`InjectionPlan`; `INJECTIONS` holds the builder of each mode and how many positions
it adds per word, and the planner looks the mode up there once per batch.

- replace: a word's wordpieces become one position holding the vector;
- slash: "/" and the vector follow the word's wordpieces (two positions added);
- recentre: the word's wordpiece embeddings move so that their mean is the vector
  (nothing added or removed).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

import numpy
import torch

from ..errors import Errors
from ..types import VectorInjectionMode
from .batch import ChosenWords, InjectionPlan, StockBatch


#: (stock batch, chosen words, tokenizer, HF model) -> the plan.
Builder = Callable[[StockBatch, ChosenWords, Any, Any], InjectionPlan]


@dataclass(frozen=True)
class Injection:
    """A mode's builder, and the positions it adds per word (the planner leaves out words that do not fit)."""

    build: Builder
    added_per_word: int = 0


_SLASH_IDS: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()


def slash_token_id(tokenizer: Any) -> int:
    """The id of "/" as it appears between words (e.g. "Ġ/" for byte-level BPE), found once per tokenizer."""
    try:
        cached = _SLASH_IDS.get(tokenizer)
    except TypeError:  # not weak-referenceable: look it up each time
        return _find_slash_id(tokenizer)
    if cached is None:
        cached = _SLASH_IDS[tokenizer] = _find_slash_id(tokenizer)
    return cached


def _find_slash_id(tokenizer: Any) -> int:
    ids = tokenizer(" /", add_special_tokens=False)["input_ids"]
    if len(ids) == 1 and ids[0] != tokenizer.unk_token_id:
        return int(ids[0])
    token_id = tokenizer.convert_tokens_to_ids("/")
    if token_id is None or token_id == tokenizer.unk_token_id:
        raise ValueError(Errors.E163)
    return int(token_id)


def _pad_id(tokenizer: Any) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0


def build_replace(batch: StockBatch, words: ChosenWords, tokenizer: Any, hf_model: Any) -> InjectionPlan:
    """replace: e_1..e_{i-1}, v, e_{j+1}..e_n. The word's one position is emitted at its last
    piece and every piece of the word reads its output."""
    in_word = _word_columns(batch, words)
    emits = batch.valid.astype("int64")
    inner = in_word.copy()
    inner[words.rows, words.stops] = False
    emits[inner] = 0
    rebuilt = _Rebuilt.allocate(batch, emits, _pad_id(tokenizer))
    rebuilt.copy_columns(batch, batch.valid & ~in_word, in_word)
    return rebuilt.plan(batch, words, vector_at=rebuilt.position[words.rows, words.starts])


def build_slash(batch: StockBatch, words: ChosenWords, tokenizer: Any, hf_model: Any) -> InjectionPlan:
    """slash: e_1..e_j, e_/, v, e_{j+1}..e_n. The word's last piece emits three positions (the
    piece, "/", the vector); its pieces keep their own outputs."""
    in_word = _word_columns(batch, words)
    emits = batch.valid.astype("int64")
    emits[words.rows, words.stops] = 3
    rebuilt = _Rebuilt.allocate(batch, emits, _pad_id(tokenizer))
    rebuilt.copy_columns(batch, batch.valid, in_word)  # a word's pieces are kept, with attention 1
    slash_at = rebuilt.position[words.rows, words.stops] + 1
    rebuilt.put(batch, words, slash_at, slash_token_id(tokenizer))
    return rebuilt.plan(batch, words, vector_at=slash_at + 1)


def build_recentre(batch: StockBatch, words: ChosenWords, tokenizer: Any, hf_model: Any) -> InjectionPlan:
    """recentre: each of a word's wordpiece embeddings moves by v - (their mean), so their mean
    becomes v. No position is added or removed, the pieces keep their differences, and
    a vector equal to the subword mean changes nothing."""
    embeddings = hf_model.get_input_embeddings().weight
    rows, starts = words.rows, words.starts
    length = batch.input_ids.shape[1]
    lengths = words.stops - starts + 1
    word_of = numpy.repeat(numpy.arange(len(rows)), lengths)
    cols = starts[word_of] + numpy.arange(int(lengths.sum())) - numpy.repeat(numpy.cumsum(lengths) - lengths, lengths)
    piece_rows = embeddings.detach()[torch.as_tensor(batch.input_ids[rows[word_of], cols])].float().cpu().numpy()
    means = numpy.zeros((len(rows), piece_rows.shape[1]), dtype="float32")
    numpy.add.at(means, word_of, piece_rows)
    means /= lengths[:, None]
    return InjectionPlan(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        token_type_ids=batch.token_type_ids,
        vector_rows=rows[word_of].astype("int64"),
        vector_cols=cols.astype("int64"),
        vectors=(words.vectors - means)[word_of],
        src=numpy.where(batch.valid, numpy.arange(length)[None, :], 0).astype("int64"),
        keep=batch.keep,
        n_skipped=words.n_skipped,
        add=True,
    )


INJECTIONS: Dict[VectorInjectionMode, Injection] = {
    "replace": Injection(build_replace),
    "slash": Injection(build_slash, added_per_word=2),
    "recentre": Injection(build_recentre),
}


def _word_columns(batch: StockBatch, words: ChosenWords) -> numpy.ndarray:
    """The columns s..e of each chosen word, from a difference array."""
    n_seq, length = batch.input_ids.shape
    marks = numpy.zeros((n_seq, length + 1), dtype="int64")
    marks[words.rows, words.starts] += 1
    marks[words.rows, words.stops + 1] -= 1
    return numpy.cumsum(marks, axis=1)[:, :length] > 0


@dataclass
class _Rebuilt:
    """The lengthened or shortened sequences of replace and slash, filled in place.

    Each stock column c < end emits `emits[c]` rebuilt positions and its output comes
    from the first of them, at `position[c]` (the exclusive running sum of emits).
    """

    input_ids: numpy.ndarray
    attention_mask: numpy.ndarray
    token_type_ids: Optional[numpy.ndarray]
    position: numpy.ndarray

    @classmethod
    def allocate(cls, batch: StockBatch, emits: numpy.ndarray, pad_id: int) -> "_Rebuilt":
        """Padded arrays as long as the longest rebuilt row."""
        n_seq, length = batch.input_ids.shape
        totals = numpy.cumsum(emits, axis=1)
        new_length = int(totals[:, -1].max()) if length else 0
        type_ids = batch.token_type_ids
        return cls(
            input_ids=numpy.full((n_seq, new_length), pad_id, dtype=batch.input_ids.dtype),
            attention_mask=numpy.zeros((n_seq, new_length), dtype=batch.attention_mask.dtype),
            token_type_ids=None if type_ids is None else numpy.zeros((n_seq, new_length), dtype=type_ids.dtype),
            position=totals - emits,
        )

    def copy_columns(self, batch: StockBatch, copied: numpy.ndarray, in_word: numpy.ndarray) -> None:
        """Stock columns `copied` one to one; a word's pieces get attention 1, the rest keep the stock mask."""
        r, c = numpy.nonzero(copied)
        p = self.position[r, c]
        self.input_ids[r, p] = batch.input_ids[r, c]
        self.attention_mask[r, p] = numpy.where(in_word[r, c], 1, batch.real[r, c])
        if self.token_type_ids is not None:
            self.token_type_ids[r, p] = batch.token_type_ids[r, c]

    def put(self, batch: StockBatch, words: ChosenWords, at: numpy.ndarray, ids: Any) -> None:
        """An added position per word at `at`: these ids, attention 1, the word's token type."""
        self.input_ids[words.rows, at] = ids
        self.attention_mask[words.rows, at] = 1
        if self.token_type_ids is not None:
            self.token_type_ids[words.rows, at] = batch.token_type_ids[words.rows, words.stops]

    def plan(self, batch: StockBatch, words: ChosenWords, vector_at: numpy.ndarray) -> InjectionPlan:
        """The plan, with each word's vector position filled in."""
        # Its id (the word's first piece) is never looked up, but it must not be the pad id
        # (position ids of some models).
        self.put(batch, words, vector_at, batch.input_ids[words.rows, words.starts])
        return InjectionPlan(
            input_ids=self.input_ids,
            attention_mask=self.attention_mask,
            token_type_ids=self.token_type_ids,
            vector_rows=words.rows.astype("int64"),
            vector_cols=vector_at.astype("int64"),
            vectors=words.vectors,
            src=numpy.where(batch.valid, self.position, 0).astype("int64"),
            keep=batch.keep,
            n_skipped=words.n_skipped,
        )
