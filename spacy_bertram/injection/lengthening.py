"""slash and replace: the injections that change sequence lengths, and so need a forward of their own.

slash (e_1..e_j, e_/, v_w, e_{j+1}..e_n) and replace (e_1..e_{i-1}, v_w, e_{j+1}..e_n) feed the
encoder rebuilt wordpiece sequences (`builders.py`), run in length groups (`groups.py`), and
gather the outputs back onto the stock wordpiece layout (`mapping.py`) before they leave the
wrapped HF layer, so `doc._.trf_data` (wordpieces, alignment, tensor shapes) and every listener
see what the stock model would give them, and backprop runs through that mapping.

Everything here rests on spacy-transformers' public API: the stock batch comes from
`wordpieces.py`, the encoder from `TransformerModel.transformer`, and the HF layer's input and
output conversions are our own (`convert_lengthened_inputs` / `convert_lengthened_outputs`),
equal to the stock ones for a plain `WordpieceBatch` (a batch without vectors, and the layer's
initialization). The vectors enter through the embedding hook (`hook.py`).
"""

from __future__ import annotations

from typing import Any, Callable, List, Tuple, Union

from spacy.tokens import Doc
from spacy_transformers.data_classes import FullTransformerBatch, WordpieceBatch
from spacy_transformers.layers.transformer_model import TransformerModel
from spacy_transformers.util import log_batch_size, log_gpu_memory, maybe_flush_pytorch_cache
from thinc.api import Model, xp2torch
from thinc.types import ArgsKwargs
from transformers.file_utils import ModelOutput

from ..types import InjectingMode
from .batch import InjectedWordpieces
from .groups import run_in_length_groups
from .hook import EmbeddingHook, clear_pending
from .mapping import map_outputs_to_stock
from .plan import make_injection_plan
from .wordpieces import has_vectors, stock_inputs

#: The modes whose rebuilt sequences are longer or shorter than the stock ones.
LENGTHENING_MODES = ("slash", "replace")


def lengthening_forward(
    model: TransformerModel, docs: List[Doc], is_train: bool, injection: InjectingMode
) -> Tuple[FullTransformerBatch, Callable]:
    """The stock TransformerModel forward, with the HF layer run on the rebuilt rows when the batch has vectors."""
    transformer = model.layers[0]
    maybe_flush_pytorch_cache(chance=model.attrs.get("flush_cache_chance", 0))
    if "logger" in model.attrs:
        log_gpu_memory(model.attrs["logger"], "begin forward")
    inputs = stock_inputs(model, docs)
    wordpieces = inputs.wordpieces
    if "logger" in model.attrs:
        log_batch_size(model.attrs["logger"], wordpieces, is_train)
    hf_model = model.transformer
    plan = None
    if has_vectors(docs):
        plan = make_injection_plan(inputs.flat_spans, wordpieces, inputs.align, injection, model.tokenizer, hf_model)
    if plan is None:
        model_output, bp_tensors = transformer(wordpieces, is_train)
    else:
        try:
            model_output, bp_tensors = run_in_length_groups(transformer, wordpieces, plan, is_train, hf_model)
        except BaseException:
            clear_pending(hf_model.get_input_embeddings())  # a failed call must not leave its vectors behind
            raise
    if "logger" in model.attrs:
        log_gpu_memory(model.attrs["logger"], "after forward")
    output = FullTransformerBatch(
        spans=inputs.nested_spans, wordpieces=wordpieces, model_output=model_output, align=inputs.align
    )

    def backprop_transformer(d_output: FullTransformerBatch) -> List[Doc]:
        if "logger" in model.attrs:
            log_gpu_memory(model.attrs["logger"], "Begin backprop")
        bp_tensors(d_output.model_output)
        return docs

    return output, backprop_transformer


# ----------------------------------------------------------------------------------------
# The wrapped HF layer's conversions: the rebuilt inputs in, the stock layout out


def convert_lengthened_inputs(
    model: Model, X: Union[WordpieceBatch, InjectedWordpieces], is_train: bool
) -> Tuple[ArgsKwargs, Callable[[Any], List]]:
    """The HF call's keyword arguments: the stock batch's, or a plan's rebuilt ids with the embedding hook."""
    if isinstance(X, InjectedWordpieces):
        plan = X.plan
        device = X.hf_model.device
        input_ids, attention_mask, token_type_ids = plan.input_ids, plan.attention_mask, plan.token_type_ids
        X.hook = EmbeddingHook(X.hf_model, plan)
    else:
        device = model.shims[0].device  # the wrapped encoder's, as HF's own `device`: its first parameter's
        input_ids, attention_mask, token_type_ids = X.input_ids, X.attention_mask, X.token_type_ids
    kwargs = {
        "input_ids": xp2torch(input_ids, device=device),
        "attention_mask": xp2torch(attention_mask, device=device),
    }
    if token_type_ids is not None:
        kwargs["token_type_ids"] = xp2torch(token_type_ids, device=device)
    return ArgsKwargs(args=(), kwargs=kwargs), lambda dX: []


def convert_lengthened_outputs(
    model: Model, inputs_outputs: Tuple[Union[WordpieceBatch, InjectedWordpieces], ModelOutput], is_train: bool
) -> Tuple[ModelOutput, Callable[[ModelOutput], ArgsKwargs]]:
    """The HF outputs (a rebuilt batch's mapped to the stock layout); backprop from the last hidden state."""
    X, model_output = inputs_outputs
    if isinstance(X, InjectedWordpieces):
        hook: EmbeddingHook = X.hook
        hook.remove()
        hook.check_fired()
        model_output = map_outputs_to_stock(model_output, X.plan)

    def backprop(d_model_output: ModelOutput) -> ArgsKwargs:
        return ArgsKwargs(args=(model_output.last_hidden_state,), kwargs={"grad_tensors": d_model_output.values()})

    return model_output, backprop
