"""The stock wordpiece batch of some docs, made with spacy-transformers' public functions.

The same steps, in the same order, as spacy-transformers' TransformerModel forward: the
model's `get_spans`, `huggingface_tokenize`, the alignment (from the offset mapping where
the tokenizer gives one), `truncate_oversize_splits`. The injection plans on this batch;
recentre then runs the stock forward, which makes the same batch again, and the
embedding hook checks that it did (`hook.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Sequence

from spacy.tokens import Doc, Span
from spacy_transformers.align import get_alignment, get_alignment_via_offset_mapping
from spacy_transformers.data_classes import WordpieceBatch
from spacy_transformers.layers.transformer_model import TransformerModel, huggingface_tokenize
from spacy_transformers.truncate import truncate_oversize_splits
from thinc.types import Ragged

from ..types import DOC_EXTENSION


@dataclass
class StockInputs:
    """The spans of a batch and their wordpieces, as the stock forward makes them."""

    nested_spans: List[List[Span]]
    flat_spans: List[Span]
    wordpieces: WordpieceBatch
    align: Ragged


def has_vectors(docs: Sequence[Doc]) -> bool:
    """Whether any doc has a BERTRAM vector: a batch without runs stock and is never tokenized twice."""
    return Doc.has_extension(DOC_EXTENSION) and any(doc._.get(DOC_EXTENSION) for doc in docs)


def stock_inputs(model: TransformerModel, docs: List[Doc]) -> StockInputs:
    """The spans, wordpieces and alignment the stock forward computes for `docs`."""
    get_spans: Callable[[List[Doc]], List[List[Span]]] = model.attrs["get_spans"]
    tokenizer = model.tokenizer
    nested_spans = get_spans(docs)
    flat_spans = [span for doc_spans in nested_spans for span in doc_spans]
    batch_encoding = huggingface_tokenize(tokenizer, [span.text for span in flat_spans])
    wordpieces = WordpieceBatch.from_batch_encoding(batch_encoding)
    if "offset_mapping" in batch_encoding:
        align = get_alignment_via_offset_mapping(flat_spans, batch_encoding["offset_mapping"])
    else:
        align = get_alignment(flat_spans, wordpieces.strings, tokenizer.all_special_tokens)
    wordpieces, align = truncate_oversize_splits(wordpieces, align, tokenizer.model_max_length)
    return StockInputs(nested_spans, flat_spans, wordpieces, align)
