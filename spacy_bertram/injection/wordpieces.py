"""The wordpiece batch of some docs, made once per batch: what the encoder reads and what the plan reads.

spacy-transformers makes this batch inside its forward and exports no function that returns it
before the encoder runs, so the injection makes it here, from public pieces only: the model's
`get_spans`, its HF tokenizer (called as the stock forward calls it), `WordpieceBatch.from_batch_encoding`,
and an alignment and truncation of our own that give the stock batch's values (held to the stock
`TransformerModel`'s output in tests/test_injection_wordpieces.py):

- a token is aligned to every wordpiece whose character offsets cover one of its characters or
  the character just after it (a following space), in the order of a doc's tokens, each token
  once however many spans hold it;
- a batch wider than the tokenizer's `model_max_length` loses its last columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy
from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc, Span
from spacy_transformers.data_classes import WordpieceBatch
from thinc.types import Ragged

from ..errors import Errors
from ..types import DOC_EXTENSION


@dataclass
class StockInputs:
    """The spans of a batch and their wordpieces, as the stock forward makes them."""

    nested_spans: List[List[Span]]
    flat_spans: List[Span]
    wordpieces: WordpieceBatch
    align: Ragged


def has_vectors(docs: Sequence[Doc]) -> bool:
    """Whether any doc has a BERTRAM vector: a batch without runs as stock."""
    return Doc.has_extension(DOC_EXTENSION) and any(doc._.get(DOC_EXTENSION) for doc in docs)


def stock_inputs(model: Any, docs: List[Doc]) -> StockInputs:
    """The spans, wordpieces and alignment of `docs` (model: a spacy-transformers `TransformerModel`)."""
    get_spans: Callable[[List[Doc]], List[List[Span]]] = model.attrs["get_spans"]
    tokenizer = model.tokenizer
    nested_spans = get_spans(docs)
    flat_spans = [span for doc_spans in nested_spans for span in doc_spans]
    wordpieces, offsets = tokenize(tokenizer, [span.text for span in flat_spans])
    align = align_by_offsets(flat_spans, offsets)
    wordpieces, align = truncate_columns(wordpieces, align, tokenizer.model_max_length)
    return StockInputs(nested_spans, flat_spans, wordpieces, align)


def tokenize(tokenizer: Any, texts: List[str]) -> Tuple[WordpieceBatch, numpy.ndarray]:
    """The texts' wordpieces and their character offsets (rows, positions, 2), as the stock forward asks for them."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(Errors.E190.format(tokenizer=type(tokenizer).__name__))
    encoding = tokenizer(
        texts,
        add_special_tokens=True,
        return_attention_mask=True,
        return_offsets_mapping=True,
        return_tensors="np",
        return_token_type_ids=None,  # the model's default
        padding="longest",
    )
    token_data: Dict[str, Any] = {
        "input_ids": encoding["input_ids"],
        "attention_mask": encoding["attention_mask"],
        "input_texts": [tokenizer.convert_ids_to_tokens(row) for row in encoding["input_ids"]],
        "pad_token": tokenizer.pad_token,
    }
    if "token_type_ids" in encoding:
        token_data["token_type_ids"] = encoding["token_type_ids"]
    return WordpieceBatch.from_batch_encoding(token_data), numpy.asarray(encoding["offset_mapping"], dtype="int64")


def align_by_offsets(spans: List[Span], offsets: numpy.ndarray) -> Ragged:
    """For each token of the spans' docs, the flat indices (row * width + position) of its wordpieces."""
    if len(spans) != offsets.shape[0]:
        raise ValueError(Errors.E191.format(spans=len(spans), rows=offsets.shape[0]))
    width = offsets.shape[1] if offsets.ndim == 3 else 0
    doc_start: Dict[int, int] = {}
    n_tokens = 0
    for span in spans:
        if id(span.doc) not in doc_start:
            doc_start[id(span.doc)] = n_tokens
            n_tokens += len(span.doc)
    token_parts: List[numpy.ndarray] = []
    piece_parts: List[numpy.ndarray] = []
    for row, span in enumerate(spans):
        tokens, pieces = _span_pairs(span, offsets[row])
        token_parts.append(tokens + doc_start[id(span.doc)] + span.start)
        piece_parts.append(pieces + row * width)
    if token_parts:
        tokens = numpy.concatenate(token_parts)
        pieces = numpy.concatenate(piece_parts)
    else:
        tokens = pieces = numpy.zeros(0, dtype="int64")
    stride = max(len(spans) * width, 1)  # one past the largest flat wordpiece index
    pairs = numpy.unique(tokens * stride + pieces)  # sorted by token, then piece; no repeats
    data = (pairs % stride).astype("i")
    lengths = numpy.bincount(pairs // stride, minlength=n_tokens).astype("i")
    return Ragged(data, lengths)


def _span_pairs(span: Span, offsets: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """(token in span, wordpiece) pairs of one span: a character maps to the token holding it, else to the
    token that ends just before it."""
    n_chars = len(span.text) + 1
    char_token = numpy.full(n_chars, -1, dtype="int64")
    if len(span):
        attrs = span.doc.to_array([IDX, LENGTH])[span.start : span.end].astype("int64")
        starts = attrs[:, 0] - span.start_char
        lengths = attrs[:, 1]
        token_ids = numpy.arange(len(span), dtype="int64")
        char_token[_ranges(starts, lengths)] = numpy.repeat(token_ids, lengths)
        after = starts + lengths
        free = char_token[after] < 0
        char_token[after[free]] = token_ids[free]
    begin = numpy.clip(offsets[:, 0], 0, n_chars)
    end = numpy.clip(offsets[:, 1], 0, n_chars)
    sizes = numpy.maximum(end - begin, 0)
    chars = _ranges(begin, sizes)
    pieces = numpy.repeat(numpy.arange(len(offsets), dtype="int64"), sizes)
    tokens = char_token[chars]
    hit = tokens >= 0
    return tokens[hit], pieces[hit]


def _ranges(starts: numpy.ndarray, sizes: numpy.ndarray) -> numpy.ndarray:
    """The concatenated ranges starts[i] .. starts[i] + sizes[i]."""
    total = int(sizes.sum())
    if total == 0:
        return numpy.zeros(0, dtype="int64")
    first = numpy.repeat(starts - numpy.cumsum(sizes) + sizes, sizes)
    return first + numpy.arange(total, dtype="int64")


def truncate_columns(wordpieces: WordpieceBatch, align: Ragged, max_length: int) -> Tuple[WordpieceBatch, Ragged]:
    """A batch wider than the encoder takes, cut to its first `max_length` positions, with the alignment moved."""
    n_rows, width = wordpieces.input_ids.shape
    if width < max_length:
        return wordpieces, align
    strings = [row[:max_length] for row in wordpieces.strings]
    cut = WordpieceBatch(
        strings=strings,
        input_ids=wordpieces.input_ids[:, :max_length],
        attention_mask=wordpieces.attention_mask[:, :max_length],
        lengths=[len(row) for row in strings],
        token_type_ids=None if wordpieces.token_type_ids is None else wordpieces.token_type_ids[:, :max_length],
    )
    data = numpy.asarray(align.data).ravel().astype("int64")
    rows, cols = data // max(width, 1), data % max(width, 1)
    kept = cols < max_length
    token_of = numpy.repeat(numpy.arange(len(align.lengths)), numpy.asarray(align.lengths))
    lengths = numpy.bincount(token_of[kept], minlength=len(align.lengths)).astype("i")
    return cut, Ragged((rows[kept] * max_length + cols[kept]).astype("i"), lengths)


__all__ = ["StockInputs", "align_by_offsets", "has_vectors", "stock_inputs", "tokenize", "truncate_columns"]
