"""The model behind `spacy-bertram.TransformerModel.v1` (registered in `architectures.py`): BERTRAM vectors in the
encoder input.

This is spacy-transformers' `TransformerModel.v3` (its class, its HF layer with its stock conversions,
its init and serialization) with a forward of its own, which makes the batch's wordpieces once
(`wordpieces.py`) and, when the batch has BERTRAM vectors (`doc._.bertram`, token index -> vector in
the encoder's input-embedding space), puts them into the word-embedding output of the HF call
through a one-shot hook (`hook.py`):

- recentre (the default): e_k + (v_w - mean(e_i..e_j)) for k in i..j (the pieces' mean
  becomes v_w; no position added or removed; a vector equal to the subword mean changes nothing),
  on the stock rows in length groups where those save more padding than their calls cost (`groups.py`);
- replace and slash change the sequence lengths (`lengthening.py`): e_1..e_{i-1}, v_w, e_{j+1}..e_n,
  and e_1..e_j, e_/, v_w, e_{j+1}..e_n, their outputs mapped back onto the stock layout;
- none: vectors are ignored.

A batch without vectors gives exactly the stock model's outputs (bit-identical) in every mode.
The policies for truncation, strided spans and bad vectors: `plan.py`.
"""

from __future__ import annotations

import copy
import logging
import random
from typing import Any, Callable, Dict, List, Tuple

from spacy.tokens import Doc
from spacy_transformers import FullTransformerBatch, TransformerModel

from ..extension import install_extension
from ..types import DEFAULT_INJECTION, InjectionMode, check_injection
from .batch import InjectionPlan, row_ends
from .groups import length_groups
from .hook import call_with_vectors
from .lengthening import LENGTHENING_MODES, run_lengthened
from .plan import make_injection_plan
from .wordpieces import has_vectors, stock_inputs

logger = logging.getLogger(__name__)

#: What `nlp.replace_listeners` turns a listener of our transformer into.
TOK2VEC_ARCHITECTURE = "spacy-bertram.Tok2VecTransformer.v1"

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
    ) -> None:
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
        self.replace_callbacks(forward, init=self.init)
        self.attrs["replace_listener_cfg"] = replace_listener_cfg
        self.injection = injection

    @property
    def injection(self) -> InjectionMode:
        """The injection mode. Not in attrs: thinc would save it and a loaded pipeline's config could not change it."""
        return self._injection

    @injection.setter
    def injection(self, mode: InjectionMode) -> None:
        check_injection(mode)
        self._injection = mode

    def copy(self) -> "BertramTransformerModel":
        """Deep copy, as the stock `copy` (through thinc's public Model API) but keeping the injection mode."""
        copied = BertramTransformerModel(self.attrs["name"], self.attrs["get_spans"], injection=self.injection)
        for name in self.param_names:
            if self.has_param(name):
                copied.set_param(name, copy.deepcopy(self.get_param(name)))
        for name in self.dim_names:
            if self.has_dim(name):
                copied.set_dim(name, self.get_dim(name), force=True)
        copied.layers[0] = copy.deepcopy(self.layers[0])
        for name in self.grad_names:
            copied.set_grad(name, self.get_grad(name).copy())
        return copied


def replace_listener_cfg(tok2vec_model_cfg: Dict[str, Any], listener_model_cfg: Dict[str, Any]) -> Dict[str, Any]:
    """The config `nlp.replace_listeners` gives a listener of this transformer: our Tok2VecTransformer (so
    `injection` is kept), with the listener's pooling and grad_factor, as spacy-transformers does for its own."""
    result = dict(tok2vec_model_cfg)
    if (
        "TransformerModel" in tok2vec_model_cfg["@architectures"]
        and "TransformerListener" in listener_model_cfg["@architectures"]
    ):
        result["@architectures"] = TOK2VEC_ARCHITECTURE
        for key in ("pooling", "grad_factor"):
            if key in listener_model_cfg and key not in result:
                result[key] = listener_model_cfg[key]
    return result


def forward(model: BertramTransformerModel, docs: List[Doc], is_train: bool) -> Tuple[FullTransformerBatch, Callable]:
    """The batch's wordpieces, made once; the HF layer on them, with the vectors of the model's mode hooked in."""
    maybe_empty_cuda_cache(model.attrs.get("flush_cache_chance", 0))
    inputs = stock_inputs(model, docs)
    wordpieces = inputs.wordpieces
    debug_logger = model.attrs.get("logger")  # spacy-transformers' set_logger: memory and batch sizes
    if debug_logger is not None:
        rows, width = wordpieces.input_ids.shape
        usage = "update" if is_train else "predict"
        debug_logger.info(f"{rows} x {width} ({width**2 * rows}) {usage}; {cuda_megabytes():.1f} MB: begin forward")
    transformer = model.layers[0]
    hf_model = model.transformer
    plan = None
    if model.injection != "none" and has_vectors(docs):
        plan = make_injection_plan(
            inputs.flat_spans, wordpieces, inputs.align, model.injection, model.tokenizer, hf_model
        )
    if plan is None:
        model_output, backprop_layer = transformer(wordpieces, is_train)
    elif model.injection in LENGTHENING_MODES:
        model_output, backprop_layer = run_lengthened(transformer, plan, is_train, hf_model)
    else:
        model_output, backprop_layer = run_recentred(transformer, wordpieces, plan, is_train, hf_model)
    if debug_logger is not None:
        debug_logger.info(f"{cuda_megabytes():.1f} MB: after forward")
    output = FullTransformerBatch(
        spans=inputs.nested_spans, wordpieces=wordpieces, model_output=model_output, align=inputs.align
    )

    def backprop(d_output: FullTransformerBatch) -> List[Doc]:
        backprop_layer(d_output.model_output)
        return docs

    return output, backprop


def run_recentred(
    transformer: Any, wordpieces: Any, plan: InjectionPlan, is_train: bool, hf_model: Any
) -> Tuple[Any, Callable[[Any], Any]]:
    """recentre's rows are the stock rows with shifts added: one call on the stock batch, or, where length groups
    save more padding than their extra calls cost, the groups' calls with their outputs put back on the stock layout
    row by row, as the rebuilt rows' are (equal to one call's to float rounding; padding positions give zeros)."""
    groups = length_groups(row_ends(plan.attention_mask))
    if len(groups) == 1:
        return call_with_vectors(transformer, wordpieces, plan, is_train, hf_model, True)
    return run_lengthened(transformer, plan, is_train, hf_model, groups)


def maybe_empty_cuda_cache(chance: float) -> None:
    """The stock model's `flush_cache_chance`: on that share of calls, torch's CUDA cache is emptied."""
    import torch

    if chance and torch.cuda.is_available() and random.random() < chance:
        torch.cuda.empty_cache()


def cuda_megabytes() -> float:
    """What torch has allocated on the current CUDA device (0 without one), for the debug log."""
    import torch

    return torch.cuda.memory_allocated() / 1024**2 if torch.cuda.is_available() else 0.0


__all__ = ["BertramTransformerModel", "forward", "replace_listener_cfg", "run_recentred"]
