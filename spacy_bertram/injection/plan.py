"""How BERTRAM vectors go into a wordpiece batch: the injection plan.

`model.py` and `lengthening.py` (the `spacy-bertram.TransformerModel.v1` architecture) ask this
module for an `InjectionPlan` (`batch.py`): the rebuilt wordpiece sequences with the
positions whose embedding rows the vectors replace, and the maps from the new
positions back to the stock layout (applied by `mapping.py`). This module finds the
words that get a vector; the mode's builder (`builders.py`) rebuilds the sequences.

Policies:
- No vector in the batch, or injection "none": the stock v3 path runs unchanged, so
  outputs are bit-identical to `spacy-transformers.TransformerModel.v3`.
- Strided/overlapping spans: a token in two spans is injected in each span where its
  wordpieces are; tokens at span edges are whole in each span (spans are token-based).
- Truncation: the stock truncation runs first. A word whose wordpieces were partly cut
  off is injected over the pieces that remain; a word with none left is skipped.
  Slash adds two positions per word; when a sequence would exceed the model's
  maximum length, the words furthest to the end of that sequence are left without a
  vector (they keep their stock wordpieces) until it fits. Replace and recentre never lengthen.
- A word whose wordpieces in a sequence are not contiguous, or overlap another
  injected word's, is skipped in that sequence (logged at debug level).
- Bad vectors (not 1-d, wrong width, non-finite) or token indices outside the doc
  raise ValueError: a wrong vector is never used silently.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc, Span
from spacy_transformers.data_classes import WordpieceBatch
from thinc.types import Ragged

from ..errors import Errors
from ..types import DOC_EXTENSION, InjectionMode
from .batch import ChosenWords, InjectionPlan, StockBatch
from .builders import INJECTIONS

logger = logging.getLogger(__name__)

# Model types whose position ids start after the padding index (max length = positions - pad - 1).
_PADDING_OFFSET_MODEL_TYPES = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text", "mpnet"}


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


def doc_vectors(doc: Doc, width: int) -> Dict[int, numpy.ndarray]:
    """Validated `doc._.bertram` (token index -> float32 vector of `width`)."""
    raw = doc._.get(DOC_EXTENSION) if Doc.has_extension(DOC_EXTENSION) else None
    if not raw:
        return {}
    vectors: Dict[int, numpy.ndarray] = {}
    for key, value in raw.items():
        i = int(key)
        if not 0 <= i < len(doc):
            raise ValueError(Errors.E159.format(key=key, n_tokens=len(doc)))
        vec = numpy.asarray(value, dtype="float32")
        if vec.ndim != 1 or vec.shape[0] != width:
            raise ValueError(Errors.E160.format(key=key, shape=vec.shape, width=width))
        if not numpy.isfinite(vec).all():
            raise ValueError(Errors.E161.format(key=key, text=doc[i].text))
        vectors[i] = vec
    return vectors


def make_injection_plan(
    flat_spans: Sequence[Span],
    wordpieces: WordpieceBatch,
    align: Ragged,
    injection: InjectionMode,
    tokenizer: Any,
    hf_model: Any,
) -> Optional[InjectionPlan]:
    """Find the injected words per sequence and build the rebuilt inputs; None if no vectors.

    Vectorised with numpy: Python loops run over docs and rare words, never over
    wordpieces (`tests/test_injection_plan.py` checks it against the loop it replaced).
    """
    if injection not in INJECTIONS:  # "none" has no plan; the model checks its mode when it is built
        raise ValueError(Errors.E156.format(setting="injection", choices=", ".join(INJECTIONS), value=injection))
    spec = INJECTIONS[injection]
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
    batch = StockBatch.from_wordpieces(wordpieces)
    length = batch.input_ids.shape[1]
    rows, starts, stops, vector_of, n_skipped = _word_groups(align, numpy.asarray(positions), length, owners)
    room = None
    if spec.added_per_word:
        max_length = max_sequence_length(tokenizer, hf_model.config)
        room = numpy.maximum(0, (max_length - batch.end) // spec.added_per_word)
    order, chosen, skipped = _choose_groups(rows, starts, stops, batch.end, room)
    if not chosen.any():
        return None
    pick = order[chosen]
    words = ChosenWords(
        rows=rows[pick],
        starts=starts[pick],
        stops=stops[pick],
        vectors=numpy.stack(vec_list)[vector_of[pick]].astype("float32"),
        n_skipped=n_skipped + skipped,
    )
    return spec.build(batch, words, tokenizer, hf_model)


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
    rows: numpy.ndarray,
    starts: numpy.ndarray,
    stops: numpy.ndarray,
    end: numpy.ndarray,
    room: Optional[numpy.ndarray],
) -> Tuple[numpy.ndarray, numpy.ndarray, int]:
    """Which groups are injected: none in padding, no overlaps (the first by position
    wins) and, where a mode lengthens the rows, no more per row than its `room`.
    Returns (order, mask over the ordered groups, skipped): groups ordered by
    (row, start, stop), ties in their given order."""
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
    if room is not None:
        taken = numpy.cumsum(chosen)
        row_first = numpy.searchsorted(rows, rows, side="left")
        before = numpy.where(row_first > 0, taken[numpy.maximum(row_first - 1, 0)], 0)
        fits = chosen & (taken - 1 - before < room[rows])
        dropped = int((chosen & ~fits).sum())
        if dropped:
            logger.debug("bertram: %d insertion(s) do not fit", dropped)
        skipped += dropped
        chosen = fits
    return order, chosen, skipped
