"""The model behind `spacy-bertram.TransformerModel.v1` (registered in `architectures.py`): BERTRAM vectors in the
encoder input.

This is spacy-transformers' `TransformerModel.v3` with one change: when a batch has
BERTRAM vectors (`doc._.bertram`, token index -> vector in the encoder's
input-embedding space), the HF forward call runs on rebuilt wordpiece sequences in
which those vectors are put into the word-embedding output ("inputs_embeds"):

- replace: e_1..e_{i-1}, v_w, e_{j+1}..e_n  (the word's wordpieces become one position)
- slash:   e_1..e_j, e_/, v_w, e_{j+1}..e_n  ("/" and the vector after the wordpieces)
- recentre: e_k + (v_w - mean(e_i..e_j)) for k in i..j  (the pieces' mean becomes v_w;
  no position added or removed; a vector equal to the subword mean changes nothing)

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

The rebuilt rows run in a few calls of rows of similar length (`groups.py`):
a batch pads every row to its longest, and the padding saved pays for slash's two
extra positions per word many times over. Outputs equal one padded call's to float
rounding (~1e-6); a batch without vectors runs the stock single call.

The policies for truncation, strided spans and bad vectors: `plan.py`; how each
mode rebuilds the wordpiece sequences: `builders.py`; how the outputs come back: `mapping.py`.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable, Dict, List, Tuple

import torch
from spacy.tokens import Doc, Span
from spacy_transformers.align import get_alignment, get_alignment_via_offset_mapping
from spacy_transformers.data_classes import FullTransformerBatch, WordpieceBatch
from spacy_transformers.layers._util import replace_listener_cfg as _stock_replace_listener_cfg
from spacy_transformers.layers.transformer_model import (
    TransformerModel,
    _convert_transformer_inputs,
    _convert_transformer_outputs,
    huggingface_tokenize,
)
from spacy_transformers.truncate import truncate_oversize_splits
from spacy_transformers.util import log_batch_size, log_gpu_memory, maybe_flush_pytorch_cache
from thinc.api import Model, xp2torch
from thinc.types import ArgsKwargs

from ..extension import install_extension
from .batch import InjectionPlan
from ..types import DEFAULT_INJECTION, InjectionMode, check_injection
from .groups import run_in_length_groups
from .mapping import map_outputs_to_stock
from .plan import make_injection_plan

logger = logging.getLogger(__name__)

_HOOK_ATTR = "bertram_injection_hook"

install_extension()


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
        injection: InjectionMode = DEFAULT_INJECTION,
    ):
        check_injection(injection)
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
        copied = BertramTransformerModel(self.attrs["name"], self.attrs["get_spans"], injection=self.injection)
        params = {}
        for name in self.param_names:
            params[name] = self.get_param(name) if self.has_param(name) else None
        copied.params = copy.deepcopy(params)
        copied.dims = copy.deepcopy(self._dims)
        copied.layers[0] = copy.deepcopy(self.layers[0])
        for name in self.grad_names:
            copied.set_grad(name, self.get_grad(name).copy())
        return copied


def replace_listener_cfg(tok2vec_model_cfg: Dict[str, Any], listener_model_cfg: Dict[str, Any]):
    """Like the stock one, but into our Tok2VecTransformer so `injection` is kept."""
    result = _stock_replace_listener_cfg(tok2vec_model_cfg, listener_model_cfg)
    if result["@architectures"] == "spacy-transformers.Tok2VecTransformer.v3":
        result["@architectures"] = "spacy-bertram.Tok2VecTransformer.v1"
    return result


def forward(model: BertramTransformerModel, docs: List[Doc], is_train: bool) -> Tuple[FullTransformerBatch, Callable]:
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
# The wrapped HF layer's conversions: the rebuilt inputs in, the stock layout out


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
        assert tuple(output.shape[:2]) == expected, f"embedding output {tuple(output.shape)}, batch {expected}"
        state["fired"] = True
        if torch.is_grad_enabled() and output.requires_grad:
            return output.index_put((rows, cols), vectors.to(output.dtype), accumulate=plan.add)
        # Inference: the embedding output is a fresh tensor nothing saved; write in place.
        return output.index_put_((rows, cols), vectors.to(output.dtype), accumulate=plan.add)

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
    assert fired, "the transformer never called its input embeddings, so no vector was put in"
    plan: InjectionPlan = X.plan
    mapped = map_outputs_to_stock(model_output, plan)
    return _convert_transformer_outputs(model, (X, mapped), is_train)


def _remove_hook(model: Model) -> None:
    hook = model.attrs.pop(_HOOK_ATTR, None)
    if hook is not None:
        hook[0].remove()


__all__ = [
    "BertramTransformerModel",
    "forward",
]
