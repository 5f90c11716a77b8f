"""The model behind `spacy-bertram.TransformerModel.v1` (registered in `architectures.py`): BERTRAM vectors in the
encoder input.

This is spacy-transformers' `TransformerModel.v3` with one change: when a batch has
BERTRAM vectors (`doc._.bertram`, token index -> vector in the encoder's
input-embedding space), they go into the word-embedding output of the HF call:

- recentre (the default): e_k + (v_w - mean(e_i..e_j)) for k in i..j (the pieces' mean
  becomes v_w; no position added or removed; a vector equal to the subword mean changes
  nothing). It runs spacy-transformers' stock forward, untouched, with its stock HF-layer
  conversions: the plan is made beforehand from the same public functions the stock forward
  calls (`wordpieces.py`, `plan.py`), and the shift enters through a one-shot forward hook on
  `transformer.get_input_embeddings()` (`hook.py`), which checks that the encoder received
  the planned batch.
- replace and slash change the sequence lengths, so they run a forward of their own
  (`lengthening.py`): e_1..e_{i-1}, v_w, e_{j+1}..e_n, and e_1..e_j, e_/, v_w, e_{j+1}..e_n.
- none: the stock forward; vectors are ignored.

A batch without vectors runs exactly as the stock model (bit-identical outputs) in every mode.
The policies for truncation, strided spans and bad vectors: `plan.py`.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Callable, Dict, List, Tuple

from spacy.tokens import Doc
from spacy_transformers.data_classes import FullTransformerBatch
from spacy_transformers.layers.transformer_model import TransformerModel
from spacy_transformers.layers.transformer_model import forward as stock_forward

from ..extension import install_extension
from ..types import DEFAULT_INJECTION, InjectionMode, check_injection
from .hook import EmbeddingHook
from .lengthening import LENGTHENING_MODES, convert_lengthened_inputs, convert_lengthened_outputs, lengthening_forward
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
        layer = self.layers[0]
        # The stock HF-layer conversions, as the stock model set them: recentre and none run with these.
        self._stock_conversions: Tuple[Callable, Callable] = (
            layer.attrs["convert_inputs"],
            layer.attrs["convert_outputs"],
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
        attrs = self.layers[0].attrs
        if mode in LENGTHENING_MODES:
            attrs["convert_inputs"], attrs["convert_outputs"] = convert_lengthened_inputs, convert_lengthened_outputs
        else:
            attrs["convert_inputs"], attrs["convert_outputs"] = self._stock_conversions

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
    """The forward of the model's mode: the stock one unless the batch has vectors to inject."""
    if model.injection in LENGTHENING_MODES:
        return lengthening_forward(model, docs, is_train, model.injection)
    if model.injection == "recentre" and has_vectors(docs):
        return recentre_forward(model, docs, is_train)
    return stock_forward(model, docs, is_train)


def recentre_forward(
    model: BertramTransformerModel, docs: List[Doc], is_train: bool
) -> Tuple[FullTransformerBatch, Callable]:
    """The stock forward, untouched, with the plan's shifts added to its embedding output by a one-shot hook.

    The plan is made on the batch the stock forward will make (same public functions, same
    order); the hook checks the shape and ids it sees against it (E176, E177).
    """
    inputs = stock_inputs(model, docs)
    hf_model = model.transformer
    plan = make_injection_plan(
        inputs.flat_spans, inputs.wordpieces, inputs.align, "recentre", model.tokenizer, hf_model
    )
    if plan is None:
        return stock_forward(model, docs, is_train)
    hook = EmbeddingHook(hf_model, plan, check_ids=True)
    try:
        output, backprop = stock_forward(model, docs, is_train)
    finally:
        hook.remove()
    hook.check_fired()
    return output, backprop


__all__ = [
    "BertramTransformerModel",
    "forward",
    "recentre_forward",
    "replace_listener_cfg",
]
