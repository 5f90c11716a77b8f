"""How BERTRAM vectors go into a wordpiece batch: the injection plan.

`model.py` (the `spacy-bertram.TransformerModel.v1` architecture) asks this
module for an `InjectionPlan`: the rebuilt wordpiece sequences with the positions
whose embedding rows the vectors replace, and the maps from the new positions
back to the stock layout (applied by `mapping.py`).

Policies:
- No vector in the batch, or injection "none": the stock v3 path runs unchanged, so
  outputs are bit-identical to `spacy-transformers.TransformerModel.v3`.
- Strided/overlapping spans: a token in two spans is injected in each span where its
  wordpieces are; tokens at span edges are whole in each span (spans are token-based).
- Truncation: the stock truncation runs first. A word whose wordpieces were partly cut
  off is injected over the pieces that remain; a word with none left is skipped.
  Slash adds two positions per word; when a sequence would exceed the model's
  maximum length, the words furthest to the end of that sequence are left without a
  vector (they keep their stock wordpieces) until it fits. Replace never lengthens.
- A word whose wordpieces in a sequence are not contiguous, or overlap another
  injected word's, is skipped in that sequence (logged at debug level).
- Bad vectors (not 1-d, wrong width, non-finite) or token indices outside the doc
  raise ValueError: a wrong vector is never used silently.
"""
from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from spacy.tokens import Doc, Span
from spacy_transformers.data_classes import WordpieceBatch
from thinc.types import Ragged

logger = logging.getLogger(__name__)

DOC_EXTENSION = "bertram"

# Model types whose position ids start after the padding index (max length = positions - pad - 1).
_PADDING_OFFSET_MODEL_TYPES = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text"}


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


@dataclass
class InjectedWordpieces:
    """What the wrapped HF layer receives when a batch has vectors."""

    wordpieces: WordpieceBatch
    plan: InjectionPlan


def max_sequence_length(tokenizer: Any, hf_config: Any) -> int:
    """The longest sequence the encoder takes: tokenizer limit and position table."""
    limits = []
    tok_max = getattr(tokenizer, "model_max_length", None)
    if tok_max is not None and tok_max < 1e9:
        limits.append(int(tok_max))
    positions = getattr(hf_config, "max_position_embeddings", None)
    if positions:
        offset = 0
        if getattr(hf_config, "model_type", "") in _PADDING_OFFSET_MODEL_TYPES:
            offset = (getattr(hf_config, "pad_token_id", None) or 0) + 1
        limits.append(int(positions) - offset)
    return min(limits) if limits else 2**31 - 1


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
        raise ValueError("Slash injection needs a '/' token in the tokenizer's vocabulary")
    return int(token_id)


def doc_vectors(doc: Doc, width: int) -> Dict[int, numpy.ndarray]:
    """Validated `doc._.bertram` (token index -> float32 vector of `width`)."""
    raw = doc._.get(DOC_EXTENSION) if Doc.has_extension(DOC_EXTENSION) else None
    if not raw:
        return {}
    vectors: Dict[int, numpy.ndarray] = {}
    for key, value in raw.items():
        i = int(key)
        if not 0 <= i < len(doc):
            raise ValueError(
                f"doc._.{DOC_EXTENSION} has a vector for token {key}, but the doc has "
                f"{len(doc)} tokens"
            )
        vec = numpy.asarray(value, dtype="float32")
        if vec.ndim != 1 or vec.shape[0] != width:
            raise ValueError(
                f"doc._.{DOC_EXTENSION}[{key}] has shape {vec.shape}, but the transformer's "
                f"input embeddings are {width} wide (was BERTRAM trained for another encoder?)"
            )
        if not numpy.isfinite(vec).all():
            raise ValueError(f"doc._.{DOC_EXTENSION}[{key}] ({doc[i].text!r}) is not finite")
        vectors[i] = vec
    return vectors


def row_ends(attention_mask: numpy.ndarray) -> numpy.ndarray:
    """One past the last real position of each row (0 for a row without any)."""
    real = numpy.asarray(attention_mask) > 0
    return numpy.where(real.any(axis=1), real.shape[1] - numpy.argmax(real[:, ::-1], axis=1), 0)


def make_injection_plan(
    flat_spans: Sequence[Span],
    wordpieces: WordpieceBatch,
    align: Ragged,
    injection: str,
    tokenizer: Any,
    hf_model: Any,
) -> Optional[InjectionPlan]:
    """Find the injected words per sequence and build the rebuilt inputs; None if no vectors.

    Vectorised with numpy: Python loops run over docs and rare words, never over
    wordpieces (`tests/test_injection_plan.py` checks it against the loop it replaced).
    """
    width = int(hf_model.get_input_embeddings().weight.shape[1])
    # Alignment rows are per unique token, docs in order of first span (as
    # spacy_transformers.align.get_token_positions numbers them).
    docs = {id(span.doc): span.doc for span in flat_spans}
    positions: List[int] = []
    vec_list: List[numpy.ndarray] = []
    owners: List[Tuple[Doc, int]] = []
    offset = 0
    for doc in docs.values():
        for i, vec in doc_vectors(doc, width).items():
            positions.append(offset + i)
            vec_list.append(vec)
            owners.append((doc, i))
        offset += len(doc)
    if not positions:
        return None
    input_ids = numpy.asarray(wordpieces.input_ids)
    n_seq, length = input_ids.shape
    rows, starts, stops, vector_of, n_skipped = _word_groups(align, numpy.asarray(positions), length, owners)

    real = numpy.asarray(wordpieces.attention_mask) > 0
    end = row_ends(real)
    max_length = max_sequence_length(tokenizer, hf_model.config)
    order, chosen, skipped = _choose_groups(rows, starts, stops, end, injection, max_length)
    n_skipped += skipped
    if not chosen.any():
        return None
    pick = order[chosen]
    rows, starts, stops, vector_of = rows[pick], starts[pick], stops[pick], vector_of[pick]
    type_ids = None if wordpieces.token_type_ids is None else numpy.asarray(wordpieces.token_type_ids)
    if injection == "recentre":
        embeddings = hf_model.get_input_embeddings().weight
        return _recentre(input_ids, numpy.asarray(wordpieces.attention_mask), type_ids, real, end, rows, starts,
                         stops, numpy.stack(vec_list)[vector_of].astype("float32"), embeddings, n_skipped)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    slash_id = slash_token_id(tokenizer) if injection == "slash" else -1
    return _rebuild(
        input_ids, numpy.asarray(wordpieces.attention_mask), type_ids, real, end,
        rows, starts, stops, numpy.stack(vec_list)[vector_of].astype("float32"),
        injection, pad_id, slash_id, n_skipped,
    )


def _word_groups(
    align: Ragged, positions: numpy.ndarray, length: int, owners: Sequence[Tuple[Doc, int]]
) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray, numpy.ndarray, int]:
    """(row, first piece, last piece, vector index) of each token with a vector, per
    sequence holding its wordpieces; tokens whose pieces in a row are not contiguous
    are left out (and counted)."""
    lengths = numpy.asarray(align.lengths, dtype="int64")
    align_starts = numpy.concatenate([[0], numpy.cumsum(lengths)])
    align_data = numpy.asarray(align.data).ravel().astype("int64")
    counts = lengths[positions]
    owner = numpy.repeat(numpy.arange(len(positions)), counts)
    # The alignment entries of each token, concatenated in token order.
    within = numpy.arange(int(counts.sum())) - numpy.repeat(numpy.cumsum(counts) - counts, counts)
    flat = align_data[numpy.repeat(align_starts[positions], counts) + within]
    rows, cols = flat // length, flat % length
    order = numpy.lexsort((cols, rows, owner))  # by token, then row (as numpy.unique), then piece
    owner, rows, cols = owner[order], rows[order], cols[order]
    if len(order) == 0:
        empty = numpy.zeros(0, dtype="int64")
        return empty, empty, empty, empty, 0
    first = numpy.ones(len(order), dtype=bool)
    first[1:] = (owner[1:] != owner[:-1]) | (rows[1:] != rows[:-1])
    seg_start = numpy.flatnonzero(first)
    seg_end = numpy.append(seg_start[1:], len(order)) - 1
    lo, hi = cols[seg_start], cols[seg_end]
    contiguous = hi - lo + 1 == seg_end - seg_start + 1
    for k in numpy.flatnonzero(~contiguous):
        doc, i = owners[int(owner[seg_start[k]])]
        logger.debug("bertram: %r has non-contiguous wordpieces; skipped", doc[i].text)
    keep = seg_start[contiguous]
    return rows[keep], lo[contiguous], hi[contiguous], owner[keep], int((~contiguous).sum())


def _choose_groups(
    rows: numpy.ndarray, starts: numpy.ndarray, stops: numpy.ndarray, end: numpy.ndarray,
    injection: str, max_length: int,
) -> Tuple[numpy.ndarray, numpy.ndarray, int]:
    """Which groups are injected: none in padding, no overlaps (the first by position
    wins) and, for slash, no more than fit. Returns (order, mask over the ordered
    groups, skipped): groups ordered by (row, start, stop), ties in their given order."""
    order = numpy.lexsort((numpy.arange(len(rows)), stops, starts, rows))
    rows, starts, stops = rows[order], starts[order], stops[order]
    chosen = stops < end[rows]
    # Overlaps need the sequential rule only where a word starts at or before the end of
    # an earlier one in its row (rare): elsewhere nothing overlaps. Rows are offset so
    # that a running maximum never crosses from one row into the next.
    scale = int(stops.max()) + 2 if len(stops) else 1
    running = numpy.maximum.accumulate(numpy.where(chosen, rows * scale + stops, rows * scale - 1))
    overlaps = numpy.zeros(len(rows), dtype=bool)
    overlaps[1:] = rows[1:] * scale + starts[1:] <= running[:-1]
    if (overlaps & chosen).any():
        last_row, last_stop = -1, -1
        for k in range(len(rows)):  # over words, not wordpieces
            if rows[k] != last_row:
                last_row, last_stop = rows[k], -1
            if chosen[k]:
                if starts[k] <= last_stop:
                    chosen[k] = False
                else:
                    last_stop = stops[k]
    skipped = int((~chosen).sum())
    if skipped:
        logger.debug("bertram: %d overlapping or padded word(s) skipped", skipped)
    if injection == "slash":
        room = numpy.maximum(0, (max_length - end) // 2)
        taken = numpy.cumsum(chosen)
        row_first = numpy.searchsorted(rows, rows, side="left")
        before = numpy.where(row_first > 0, taken[numpy.maximum(row_first - 1, 0)], 0)
        fits = chosen & (taken - 1 - before < room[rows])
        dropped = int((chosen & ~fits).sum())
        if dropped:
            logger.debug("bertram: %d slash insertion(s) do not fit", dropped)
        skipped += dropped
        chosen = fits
    return order, chosen, skipped


def _rebuild(
    input_ids: numpy.ndarray,
    attention_mask: numpy.ndarray,
    type_ids: Optional[numpy.ndarray],
    real: numpy.ndarray,
    end: numpy.ndarray,
    rows: numpy.ndarray,
    starts: numpy.ndarray,
    stops: numpy.ndarray,
    vectors: numpy.ndarray,
    injection: str,
    pad_id: int,
    slash_id: int,
    n_skipped: int,
) -> InjectionPlan:
    """The rebuilt sequences for the chosen groups (sorted by row and start, no overlaps).

    Each stock column c < end emits w[c] rebuilt positions and its output comes from
    the first of them, at the exclusive running sum P[c] of w: slash emits 3 at a
    word's last piece (the piece, "/", the vector); replace emits 1 for a whole word
    (at its last piece, so every piece of the word reads the vector's position).
    """
    n_seq, length = input_ids.shape
    valid = numpy.arange(length)[None, :] < end[:, None]
    # Columns of each word: s..e (in_word) and s..e-1 (inner), from difference arrays.
    marks = numpy.zeros((n_seq, length + 1), dtype="int64")
    marks[rows, starts] += 1
    marks[rows, stops + 1] -= 1
    in_word = numpy.cumsum(marks, axis=1)[:, :length] > 0
    emits = valid.astype("int64")
    if injection == "slash":
        emits[rows, stops] = 3
    else:
        inner = in_word.copy()
        inner[rows, stops] = False
        emits[inner] = 0
    totals = numpy.cumsum(emits, axis=1)
    position = totals - emits
    new_length = int(totals[:, -1].max()) if length else 0
    new_ids = numpy.full((n_seq, new_length), pad_id, dtype=input_ids.dtype)
    new_mask = numpy.zeros((n_seq, new_length), dtype=attention_mask.dtype)
    new_types = None if type_ids is None else numpy.zeros((n_seq, new_length), dtype=type_ids.dtype)
    # Stock columns copied one to one: every valid column for slash (a word's pieces are
    # kept, with attention 1), those outside the words for replace.
    copied = valid if injection == "slash" else valid & ~in_word
    r, c = numpy.nonzero(copied)
    p = position[r, c]
    new_ids[r, p] = input_ids[r, c]
    new_mask[r, p] = numpy.where(in_word[r, c], 1, real[r, c])
    if new_types is not None:
        new_types[r, p] = type_ids[r, c]
    word_type = type_ids[rows, stops] if type_ids is not None else None
    if injection == "slash":
        slash_at = position[rows, stops] + 1
        new_ids[rows, slash_at] = slash_id
        new_mask[rows, slash_at] = 1
        if new_types is not None:
            new_types[rows, slash_at] = word_type
        vector_at = slash_at + 1
    else:
        vector_at = position[rows, starts]
    # The vector's position; its id (the word's first piece) is never looked up, but it
    # must not be the pad id (position ids of some models).
    new_ids[rows, vector_at] = input_ids[rows, starts]
    new_mask[rows, vector_at] = 1
    if new_types is not None:
        new_types[rows, vector_at] = word_type
    return InjectionPlan(
        input_ids=new_ids,
        attention_mask=new_mask,
        token_type_ids=new_types,
        vector_rows=rows.astype("int64"),
        vector_cols=vector_at.astype("int64"),
        vectors=vectors,
        src=numpy.where(valid, position, 0).astype("int64"),
        keep=real & valid,
        n_skipped=n_skipped,
    )


def _recentre(
    input_ids: numpy.ndarray,
    attention_mask: numpy.ndarray,
    type_ids: Optional[numpy.ndarray],
    real: numpy.ndarray,
    end: numpy.ndarray,
    rows: numpy.ndarray,
    starts: numpy.ndarray,
    stops: numpy.ndarray,
    vectors: numpy.ndarray,
    embeddings: torch.Tensor,
    n_skipped: int,
) -> InjectionPlan:
    """Recentre: each of a word's wordpiece embeddings moves by v - (their mean), so their mean
    becomes v. No position is added or removed, the pieces keep their differences, and
    a vector equal to the subword mean changes nothing."""
    n_seq, length = input_ids.shape
    lengths = stops - starts + 1
    word_of = numpy.repeat(numpy.arange(len(rows)), lengths)
    cols = starts[word_of] + numpy.arange(int(lengths.sum())) - numpy.repeat(numpy.cumsum(lengths) - lengths, lengths)
    piece_rows = embeddings.detach()[torch.as_tensor(input_ids[rows[word_of], cols])].float().cpu().numpy()
    means = numpy.zeros((len(rows), piece_rows.shape[1]), dtype="float32")
    numpy.add.at(means, word_of, piece_rows)
    means /= lengths[:, None]
    valid = numpy.arange(length)[None, :] < end[:, None]
    return InjectionPlan(
        input_ids=input_ids,
        attention_mask=attention_mask,
        token_type_ids=type_ids,
        vector_rows=rows[word_of].astype("int64"),
        vector_cols=cols.astype("int64"),
        vectors=(vectors - means)[word_of],
        src=numpy.where(valid, numpy.arange(length)[None, :], 0).astype("int64"),
        keep=real & valid,
        n_skipped=n_skipped,
        add=True,
    )
