"""The `spacy-bertram.TransformerModel.v1` architecture: BERTRAM vectors in the encoder input.

This is spacy-transformers' `TransformerModel.v3` with one change: when a batch has
BERTRAM vectors (`doc._.bertram`, token index -> vector in the encoder's
input-embedding space), the HF forward call runs on rebuilt wordpiece sequences in
which those vectors are put into the word-embedding output ("inputs_embeds"):

- replace: e_1..e_{i-1}, v_w, e_{j+1}..e_n  (the word's wordpieces become one position)
- slash:   e_1..e_j, e_/, v_w, e_{j+1}..e_n  ("/" and the vector after the wordpieces)

Everything around the call is the stock code path: tokenization, the spaCy-token to
wordpiece alignment, `truncate_oversize_splits`, `FullTransformerBatch`. The outputs
are mapped back to the stock wordpiece layout before they leave the wrapped HF layer,
so `doc._.trf_data` (wordpieces, alignment, tensor shapes) and every listener see
exactly what the stock model would give them, and backprop runs through that mapping.

How the vectors get in: a one-shot forward hook on `get_input_embeddings()` replaces
the embedding rows of the vector positions. The HF model is still called with
`input_ids`, so position ids, token types, embedding scaling and padding conventions
stay the model's own (e.g. RoBERTa's padding-aware position ids), and the embedding
matrix stays a trainable leaf: gradients reach the rows of every real wordpiece
(and "/" for slash) as in stock fine-tuning.

The rebuilt rows run in a few calls of rows of similar length (`length_groups`):
a batch pads every row to its longest, and the padding saved pays for slash's two
extra positions per word many times over. Outputs equal one padded call's to float
rounding (~1e-6); a batch without vectors runs the stock single call.

How the wordpiece sequences are rebuilt and mapped back, and the policies for
truncation, strided spans and bad vectors: `injection_plan.py`.
"""
from __future__ import annotations

import copy
import logging
from typing import Any, Callable, Dict, List, Tuple

import numpy
import torch
from spacy.tokens import Doc, Span
from spacy.util import registry
from spacy_transformers.align import get_alignment, get_alignment_via_offset_mapping
from spacy_transformers.data_classes import FullTransformerBatch, WordpieceBatch
from spacy_transformers.layers import split_trf_batch, trfs2arrays
from spacy_transformers.layers._util import replace_listener_cfg as _stock_replace_listener_cfg
from spacy_transformers.layers.transformer_model import (
    TransformerModel,
    _convert_transformer_inputs,
    _convert_transformer_outputs,
    huggingface_tokenize,
)
from spacy_transformers.truncate import truncate_oversize_splits
from spacy_transformers.util import log_batch_size, log_gpu_memory, maybe_flush_pytorch_cache
from thinc.api import Model, chain, xp2torch
from thinc.types import ArgsKwargs, Floats2d, Ragged
from transformers.file_utils import ModelOutput

from .injection_plan import (
    DOC_EXTENSION,
    InjectedWordpieces,
    InjectionPlan,
    doc_vectors,
    make_injection_plan,
    map_outputs_to_stock,
)

logger = logging.getLogger(__name__)

INJECTION_MODES = ("replace", "slash", "none")
_HOOK_ATTR = "bertram_injection_hook"

if not Doc.has_extension(DOC_EXTENSION):
    Doc.set_extension(DOC_EXTENSION, default=None)


class BertramTransformerModel(TransformerModel):
    """spacy-transformers' TransformerModel with BERTRAM injection in the forward pass.

    Subclassing keeps the node names, shim (HFShim), init, `set_transformer` and
    serialization of the stock model, so saved pipelines are laid out exactly alike.
    """

    def __init__(
        self,
        name: str,
        get_spans: Callable,
        tokenizer_config: dict = {},
        transformer_config: dict = {},
        mixed_precision: bool = False,
        grad_scaler_config: dict = {},
        injection: str = "slash",
    ):
        if injection not in INJECTION_MODES:
            raise ValueError(
                f"injection must be one of {', '.join(INJECTION_MODES)}, got {injection!r}"
            )
        # Copies: HFShim writes into grad_scaler_config and init into the configs.
        super().__init__(
            name,
            get_spans,
            dict(tokenizer_config),
            dict(transformer_config),
            mixed_precision,
            dict(grad_scaler_config),
        )
        self._func = forward
        self.layers[0].attrs["convert_inputs"] = convert_injected_inputs
        self.layers[0].attrs["convert_outputs"] = convert_injected_outputs
        # Not in attrs: thinc would save it and a loaded pipeline's config could not change it.
        self.injection = injection
        self.attrs["replace_listener_cfg"] = replace_listener_cfg

    def copy(self) -> "BertramTransformerModel":
        """Deep copy, as the stock `copy` but keeping the injection mode."""
        copied = BertramTransformerModel(
            self.attrs["name"], self.attrs["get_spans"], injection=self.injection
        )
        params = {}
        for name in self.param_names:
            params[name] = self.get_param(name) if self.has_param(name) else None
        copied.params = copy.deepcopy(params)
        copied.dims = copy.deepcopy(self._dims)
        copied.layers[0] = copy.deepcopy(self.layers[0])
        for name in self.grad_names:
            copied.set_grad(name, self.get_grad(name).copy())
        return copied


@registry.architectures("spacy-bertram.TransformerModel.v1")
def create_TransformerModel_v1(
    name: str,
    get_spans: Callable,
    tokenizer_config: dict = {},
    transformer_config: dict = {},
    mixed_precision: bool = False,
    grad_scaler_config: dict = {},
    injection: str = "slash",
) -> Model[List[Doc], FullTransformerBatch]:
    """`spacy-transformers.TransformerModel.v3` that feeds `doc._.bertram` vectors.

    injection (str): "slash" (wordpieces, "/", vector), "replace" (vector instead of
        the wordpieces) or "none" (stock model; vectors ignored).
    The other settings are those of TransformerModel.v3.
    """
    return BertramTransformerModel(
        name,
        get_spans,
        tokenizer_config,
        transformer_config,
        mixed_precision,
        grad_scaler_config,
        injection=injection,
    )


@registry.architectures("spacy-bertram.Tok2VecTransformer.v1")
def create_Tok2VecTransformer_v1(
    name: str,
    get_spans: Callable,
    tokenizer_config: dict,
    pooling: Model[Ragged, Floats2d],
    grad_factor: float = 1.0,
    transformer_config: dict = {},
    mixed_precision: bool = False,
    grad_scaler_config: dict = {},
    injection: str = "slash",
) -> Model[List[Doc], List[Floats2d]]:
    """`spacy-transformers.Tok2VecTransformer.v3` with BERTRAM injection.

    What `nlp.replace_listeners` turns a listener of our transformer into, so the
    injection setting survives the replacement.
    """
    transformer = create_TransformerModel_v1(
        name,
        get_spans,
        tokenizer_config,
        transformer_config,
        mixed_precision,
        grad_scaler_config,
        injection=injection,
    )
    return chain(transformer, split_trf_batch(), trfs2arrays(pooling, grad_factor))


def replace_listener_cfg(tok2vec_model_cfg: Dict[str, Any], listener_model_cfg: Dict[str, Any]):
    """Like the stock one, but into our Tok2VecTransformer so `injection` is kept."""
    result = _stock_replace_listener_cfg(tok2vec_model_cfg, listener_model_cfg)
    if result["@architectures"] == "spacy-transformers.Tok2VecTransformer.v3":
        result["@architectures"] = "spacy-bertram.Tok2VecTransformer.v1"
    return result


def forward(
    model: BertramTransformerModel, docs: List[Doc], is_train: bool
) -> Tuple[FullTransformerBatch, Callable]:
    """The stock TransformerModel forward, with the injection plan passed to the HF layer."""
    tokenizer = model.tokenizer
    get_spans = model.attrs["get_spans"]
    transformer = model.layers[0]

    nested_spans = get_spans(docs)
    flat_spans: List[Span] = []
    for doc_spans in nested_spans:
        flat_spans.extend(doc_spans)
    maybe_flush_pytorch_cache(chance=model.attrs.get("flush_cache_chance", 0))
    if "logger" in model.attrs:
        log_gpu_memory(model.attrs["logger"], "begin forward")
    batch_encoding = huggingface_tokenize(tokenizer, [span.text for span in flat_spans])
    wordpieces = WordpieceBatch.from_batch_encoding(batch_encoding)
    if "logger" in model.attrs:
        log_batch_size(model.attrs["logger"], wordpieces, is_train)
    if "offset_mapping" in batch_encoding:
        align = get_alignment_via_offset_mapping(flat_spans, batch_encoding["offset_mapping"])
    else:
        align = get_alignment(flat_spans, wordpieces.strings, tokenizer.all_special_tokens)
    wordpieces, align = truncate_oversize_splits(wordpieces, align, tokenizer.model_max_length)

    plan = None
    if model.injection != "none":
        plan = make_injection_plan(
            flat_spans,
            wordpieces,
            align,
            model.injection,
            tokenizer,
            model.transformer,
        )
    if plan is None:
        model_output, bp_tensors = transformer(wordpieces, is_train)
    else:
        model_output, bp_tensors = run_in_length_groups(transformer, wordpieces, plan, is_train)
    if "logger" in model.attrs:
        log_gpu_memory(model.attrs["logger"], "after forward")
    output = FullTransformerBatch(
        spans=nested_spans,
        wordpieces=wordpieces,
        model_output=model_output,
        align=align,
    )

    def backprop_transformer(d_output: FullTransformerBatch) -> List[Doc]:
        if "logger" in model.attrs:
            log_gpu_memory(model.attrs["logger"], "Begin backprop")
        _ = bp_tensors(d_output.model_output)
        return docs

    return output, backprop_transformer


# ----------------------------------------------------------------------------------------
# Length groups: the rebuilt rows run in a few calls of similar length


#: Padding positions one more encoder call is worth (the per-call cost, in positions).
CALL_COST_POSITIONS = 256
#: Fewest rows in a group, and most groups per batch: small calls use the matrix units badly.
MIN_GROUP_ROWS = 16
MAX_GROUPS = 4


def length_groups(attention_mask: numpy.ndarray) -> List[numpy.ndarray]:
    """Rows sorted by length and cut into 1, 2 or 4 equal groups, whichever costs least.

    A batch pads every row to its longest (spans of short and long docs together);
    the encoder spends as much on a padding position as on a real one. The rebuilt
    batch is ours to run as we like, since its outputs are mapped back to the stock
    layout row by row, so it runs in groups of similar length when the padding saved
    outweighs the extra calls. Outputs equal one call's to float rounding (~1e-6).
    """
    n_rows = attention_mask.shape[0]
    real = attention_mask > 0
    lengths = numpy.where(real.any(axis=1), attention_mask.shape[1] - numpy.argmax(real[:, ::-1], axis=1), 0)
    order = numpy.argsort(lengths, kind="stable")
    best: List[numpy.ndarray] = [numpy.arange(n_rows)]
    best_cost = n_rows * int(lengths.max(initial=0)) + CALL_COST_POSITIONS
    n_groups = 2
    while n_groups <= MAX_GROUPS and n_rows >= n_groups * MIN_GROUP_ROWS:
        groups = numpy.array_split(order, n_groups)
        cost = sum(len(g) * int(lengths[g].max()) + CALL_COST_POSITIONS for g in groups)
        if cost < best_cost:
            best, best_cost = groups, cost
        n_groups *= 2
    return best


def select_rows(plan: InjectionPlan, rows: numpy.ndarray) -> InjectionPlan:
    """The plan for `rows` only, trimmed to their longest rebuilt row."""
    real = plan.attention_mask[rows] > 0
    width = int(numpy.max(numpy.where(real.any(axis=1), real.shape[1] - numpy.argmax(real[:, ::-1], axis=1), 0)))
    new_row = numpy.full(plan.input_ids.shape[0], -1, dtype="int64")
    new_row[rows] = numpy.arange(len(rows))
    has_vector = new_row[plan.vector_rows] >= 0
    return InjectionPlan(
        input_ids=plan.input_ids[rows, :width],
        attention_mask=plan.attention_mask[rows, :width],
        token_type_ids=None if plan.token_type_ids is None else plan.token_type_ids[rows, :width],
        vector_rows=new_row[plan.vector_rows[has_vector]],
        vector_cols=plan.vector_cols[has_vector],
        vectors=plan.vectors[has_vector],
        src=plan.src[rows],
        keep=plan.keep[rows],
        n_skipped=0,
    )


def run_in_length_groups(
    transformer: Model, wordpieces: WordpieceBatch, plan: InjectionPlan, is_train: bool
) -> Tuple[ModelOutput, Callable[[ModelOutput], Any]]:
    """The wrapped HF layer on the rebuilt rows, one call per length group, rows in stock order."""
    groups = length_groups(plan.attention_mask)
    if len(groups) == 1:
        return transformer(InjectedWordpieces(wordpieces, plan), is_train)
    results = [transformer(InjectedWordpieces(wordpieces, select_rows(plan, g)), is_train) for g in groups]
    device = next(t for t in results[0][0].values() if isinstance(t, torch.Tensor)).device
    inverse = torch.as_tensor(numpy.argsort(numpy.concatenate(groups)), device=device)
    with torch.no_grad():  # each group's backprop runs on its own outputs
        merged = _apply_rows([out for out, _ in results], lambda parts: torch.cat(parts).index_select(0, inverse))
    row_index = [torch.as_tensor(g, device=device) for g in groups]

    def backprop(d_output: ModelOutput) -> List:
        for (_, bp_group), rows in zip(results, row_index):
            bp_group(_apply_rows([d_output], lambda parts: parts[0].index_select(0, rows)))
        return []

    return merged, backprop


def _apply_rows(outputs: List[ModelOutput], combine: Callable[[List[torch.Tensor]], torch.Tensor]) -> ModelOutput:
    """`combine` over the per-row tensors (and tuples of them) of model outputs alike in keys."""
    first = outputs[0]
    values: Dict[str, Any] = {}
    for key, value in first.items():
        if isinstance(value, torch.Tensor):
            values[key] = combine([out[key] for out in outputs])
        elif isinstance(value, tuple) and all(isinstance(t, torch.Tensor) for t in value):
            values[key] = tuple(combine([out[key][i] for out in outputs]) for i in range(len(value)))
        else:
            values[key] = value
    return first.__class__(**values)


# ----------------------------------------------------------------------------------------
# Planning: which wordpieces get a vector, and the rebuilt sequences


def convert_injected_inputs(model: Model, X: Any, is_train: bool) -> Tuple[ArgsKwargs, Callable]:
    """Stock conversion for a WordpieceBatch; for a plan, rebuilt ids plus the hook."""
    _remove_hook(model)
    if isinstance(X, WordpieceBatch):
        return _convert_transformer_inputs(model, X, is_train)
    plan: InjectionPlan = X.plan
    hf_model = model.shims[0]._hfmodel.transformer
    device = hf_model.device
    kwargs = {
        "input_ids": xp2torch(plan.input_ids, device=device),
        "attention_mask": xp2torch(plan.attention_mask, device=device),
    }
    if plan.token_type_ids is not None:
        kwargs["token_type_ids"] = xp2torch(plan.token_type_ids, device=device)
    embeddings = hf_model.get_input_embeddings()
    tensors = plan.on_device(device)  # every index tensor moves once per batch
    rows, cols, vectors = tensors.rows, tensors.cols, tensors.vectors
    expected = tuple(plan.input_ids.shape)
    state = {"fired": False}

    def put_vectors(module: torch.nn.Module, args: Any, output: torch.Tensor) -> torch.Tensor:
        _remove_hook(model)
        if tuple(output.shape[:2]) != expected:
            raise ValueError(
                f"Input embeddings of shape {tuple(output.shape)} do not match the injected "
                f"batch {expected}; this model's embedding layer is not supported"
            )
        state["fired"] = True
        if torch.is_grad_enabled() and output.requires_grad:
            return output.index_put((rows, cols), vectors.to(output.dtype))
        # Inference: the embedding output is a fresh tensor nothing saved; write in place.
        return output.index_put_((rows, cols), vectors.to(output.dtype))

    model.attrs[_HOOK_ATTR] = (embeddings.register_forward_hook(put_vectors), state)
    return ArgsKwargs(args=(), kwargs=kwargs), lambda dX: []


def convert_injected_outputs(model: Model, inputs_outputs: Tuple[Any, Any], is_train: bool):
    """Stock conversion, after mapping a rebuilt batch's outputs to the stock layout."""
    X, model_output = inputs_outputs
    if isinstance(X, WordpieceBatch):
        return _convert_transformer_outputs(model, inputs_outputs, is_train)
    hook = model.attrs.get(_HOOK_ATTR)
    fired = hook is None or hook[1]["fired"]
    _remove_hook(model)
    if not fired:
        raise RuntimeError("The transformer never called its input embeddings; no vectors put in")
    plan: InjectionPlan = X.plan
    mapped = map_outputs_to_stock(model_output, plan)
    return _convert_transformer_outputs(model, (X, mapped), is_train)


def _remove_hook(model: Model) -> None:
    hook = model.attrs.pop(_HOOK_ATTR, None)
    if hook is not None:
        hook[0].remove()


__all__ = [
    "BertramTransformerModel",
    "create_TransformerModel_v1",
    "create_Tok2VecTransformer_v1",
    "forward",
]
