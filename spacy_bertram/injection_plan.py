"""How BERTRAM vectors go into a wordpiece batch and how the outputs come back.

`injection.py` (the `spacy-bertram.TransformerModel.v1` architecture) asks this
module for an `InjectionPlan`: the rebuilt wordpiece sequences with the positions
whose embedding rows the vectors replace, and the maps from the new positions
back to the stock layout.

Mapping back:
- replace: the single position's output is copied to each of the word's wordpieces
  (so the word's pieces share one state; in backprop their gradients are summed).
- slash: the two inserted positions are dropped.
- Padding positions of the stock layout hold zeros (stock holds the encoder's
  output for [PAD] there; nothing aligned reads them).
- Outputs mapped: `last_hidden_state`, `hidden_states` (each layer, dim 1),
  `attentions` / `cross_attentions` (both position axes), and any other tensor with
  shape (batch, new_length, ...); `pooler_output` and other per-sequence outputs
  are kept as computed (they see the injected vectors).

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
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy
import torch
from spacy.tokens import Doc, Span
from spacy_transformers.data_classes import WordpieceBatch
from thinc.types import Ragged
from transformers.file_utils import ModelOutput

logger = logging.getLogger(__name__)

DOC_EXTENSION = "bertram"

# Model types whose position ids start after the padding index (max length = positions - pad - 1).
_PADDING_OFFSET_MODEL_TYPES = {"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text"}
# ModelOutput keys whose tensors have two position axes (the last two).
_PAIRWISE_KEYS = {"attentions", "cross_attentions"}


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


def slash_token_id(tokenizer: Any) -> int:
    """The id of "/" as it appears between words (e.g. "Ġ/" for byte-level BPE)."""
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


def make_injection_plan(
    flat_spans: Sequence[Span],
    wordpieces: WordpieceBatch,
    align: Ragged,
    injection: str,
    tokenizer: Any,
    hf_model: Any,
) -> Optional[InjectionPlan]:
    """Find the injected words per sequence and build the rebuilt inputs; None if no vectors."""
    width = int(hf_model.get_input_embeddings().weight.shape[1])
    vectors_by_doc: Dict[int, Dict[int, numpy.ndarray]] = {}
    for span in flat_spans:
        key = id(span.doc)
        if key not in vectors_by_doc:
            vectors_by_doc[key] = doc_vectors(span.doc, width)
    if not any(vectors_by_doc.values()):
        return None

    n_seq, length = wordpieces.input_ids.shape
    # (start, end, vector) per sequence; from the alignment of each vector's token.
    groups: List[List[Tuple[int, int, numpy.ndarray]]] = [[] for _ in range(n_seq)]
    align_starts = numpy.concatenate([[0], numpy.cumsum(align.lengths)])
    align_data = numpy.asarray(align.data).ravel()
    n_skipped = 0
    # Alignment rows are per unique token, docs in order of first span (as
    # spacy_transformers.align.get_token_positions numbers them).
    offset = 0
    docs = {id(span.doc): span.doc for span in flat_spans}
    for doc_key, doc in docs.items():
        for i, vec in vectors_by_doc[doc_key].items():
            position = offset + i
            flat = align_data[align_starts[position] : align_starts[position + 1]]
            for row in numpy.unique(flat // length):
                cols = numpy.sort(flat[flat // length == row] % length)
                if cols[-1] - cols[0] + 1 != len(cols):
                    logger.debug("bertram: %r has non-contiguous wordpieces; skipped", doc[i].text)
                    n_skipped += 1
                    continue
                groups[int(row)].append((int(cols[0]), int(cols[-1]), vec))
        offset += len(doc)

    real = numpy.asarray(wordpieces.attention_mask) > 0
    max_length = max_sequence_length(tokenizer, hf_model.config)
    slash_id = slash_token_id(tokenizer) if injection == "slash" else -1
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = numpy.asarray(wordpieces.input_ids)
    type_ids = (
        None if wordpieces.token_type_ids is None else numpy.asarray(wordpieces.token_type_ids)
    )

    new_rows: List[Tuple[List[int], List[int], List[int]]] = []
    vec_rows: List[int] = []
    vec_cols: List[int] = []
    vec_list: List[numpy.ndarray] = []
    src = numpy.zeros((n_seq, length), dtype="int64")
    keep = numpy.zeros((n_seq, length), dtype="bool")
    for row in range(n_seq):
        positions = numpy.nonzero(real[row])[0]
        end = int(positions[-1]) + 1 if len(positions) else 0
        row_groups, skipped = _select_groups(groups[row], end, injection, max_length)
        n_skipped += skipped
        ids: List[int] = []
        types: List[int] = []
        mask: List[int] = []
        starts = {start: (stop, vec) for start, stop, vec in row_groups}
        col = 0
        while col < end:
            if col in starts:
                stop, vec = starts[col]
                type_id = int(type_ids[row, stop]) if type_ids is not None else 0
                if injection == "slash":
                    for k in range(col, stop + 1):
                        src[row, k] = len(ids)
                        ids.append(int(input_ids[row, k]))
                        types.append(int(type_ids[row, k]) if type_ids is not None else 0)
                        mask.append(1)
                    ids.append(slash_id)
                    types.append(type_id)
                    mask.append(1)
                else:
                    src[row, col : stop + 1] = len(ids)
                # The vector's position; its id (the word's first piece) is never
                # looked up, but it must not be the pad id (position ids of some models).
                vec_rows.append(row)
                vec_cols.append(len(ids))
                vec_list.append(vec)
                ids.append(int(input_ids[row, col]))
                types.append(type_id)
                mask.append(1)
                col = stop + 1
                continue
            src[row, col] = len(ids)
            ids.append(int(input_ids[row, col]))
            types.append(int(type_ids[row, col]) if type_ids is not None else 0)
            mask.append(int(real[row, col]))
            col += 1
        keep[row, :end] = real[row, :end]
        new_rows.append((ids, types, mask))

    if not vec_list:
        return None
    new_length = max(len(ids) for ids, _, _ in new_rows)
    new_ids = numpy.full((n_seq, new_length), pad_id, dtype=input_ids.dtype)
    new_mask = numpy.zeros((n_seq, new_length), dtype=numpy.asarray(wordpieces.attention_mask).dtype)
    new_types = None if type_ids is None else numpy.zeros((n_seq, new_length), dtype=type_ids.dtype)
    for row, (ids, types, mask) in enumerate(new_rows):
        new_ids[row, : len(ids)] = ids
        new_mask[row, : len(mask)] = mask
        if new_types is not None:
            new_types[row, : len(types)] = types
    return InjectionPlan(
        input_ids=new_ids,
        attention_mask=new_mask,
        token_type_ids=new_types,
        vector_rows=numpy.asarray(vec_rows, dtype="int64"),
        vector_cols=numpy.asarray(vec_cols, dtype="int64"),
        vectors=numpy.stack(vec_list).astype("float32"),
        src=src,
        keep=keep,
        n_skipped=n_skipped,
    )


def _select_groups(
    groups: List[Tuple[int, int, numpy.ndarray]], end: int, injection: str, max_length: int
) -> Tuple[List[Tuple[int, int, numpy.ndarray]], int]:
    """Drop overlapping groups, groups in padding, and (slash) what does not fit."""
    chosen: List[Tuple[int, int, numpy.ndarray]] = []
    skipped = 0
    last_stop = -1
    for start, stop, vec in sorted(groups, key=lambda g: (g[0], g[1])):
        if start <= last_stop or stop >= end:
            logger.debug("bertram: overlapping or padded wordpieces %d..%d skipped", start, stop)
            skipped += 1
            continue
        chosen.append((start, stop, vec))
        last_stop = stop
    if injection == "slash":
        room = max(0, (max_length - end) // 2)
        if len(chosen) > room:
            logger.debug("bertram: %d slash insertions do not fit; kept %d", len(chosen), room)
            skipped += len(chosen) - room
            chosen = chosen[:room]
    return chosen, skipped


# ----------------------------------------------------------------------------------------
# The HF call: inputs in, vectors into the embedding output, outputs back to stock layout


def map_outputs_to_stock(model_output: ModelOutput, plan: InjectionPlan) -> ModelOutput:
    """Gather every per-position output back onto the stock wordpiece positions."""
    new_length = plan.input_ids.shape[1]
    n_seq = plan.input_ids.shape[0]
    mapped: Dict[str, Any] = {}
    for key, value in model_output.items():
        if isinstance(value, torch.Tensor):
            mapped[key] = _map_tensor(key, value, plan, n_seq, new_length)
        elif isinstance(value, tuple) and all(isinstance(t, torch.Tensor) for t in value):
            mapped[key] = tuple(_map_tensor(key, t, plan, n_seq, new_length) for t in value)
        else:
            mapped[key] = value
    return model_output.__class__(**mapped)


def _map_tensor(
    key: str, tensor: torch.Tensor, plan: InjectionPlan, n_seq: int, new_length: int
) -> torch.Tensor:
    if tensor.ndim < 2 or tensor.shape[0] != n_seq:
        return tensor
    src = torch.as_tensor(plan.src, device=tensor.device)
    keep = torch.as_tensor(plan.keep, device=tensor.device)
    if key in _PAIRWISE_KEYS and tensor.ndim == 4 and tensor.shape[-1] == new_length:
        tensor = _gather_axis(tensor, src, keep, axis=2)
        return _gather_axis(tensor, src, keep, axis=3)
    if key in ("last_hidden_state", "hidden_states") or (
        tensor.ndim >= 3 and tensor.shape[1] == new_length
    ):
        return _gather_axis(tensor, src, keep, axis=1)
    return tensor


def _gather_axis(
    tensor: torch.Tensor, src: torch.Tensor, keep: torch.Tensor, axis: int
) -> torch.Tensor:
    """tensor[b, ..., src[b, k], ...] along `axis`, zero where not `keep` (differentiable)."""
    n_seq, length = src.shape
    view = [n_seq] + [1] * (tensor.ndim - 1)
    view[axis] = length
    shape = list(tensor.shape)
    shape[axis] = length
    index = src.view(view).expand(shape)
    gathered = tensor.gather(axis, index)
    return gathered.masked_fill(~keep.view(view).expand(shape), 0)
