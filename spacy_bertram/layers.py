"""Thinc layers registered in spaCy's registry."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchShim, get_torch_default_device, torch2xp, xp2torch
from thinc.layers.pytorchwrapper import forward as pytorch_forward
from thinc.types import Floats2d

from .encoder import resolve_base_model
from .errors import Errors
from .inputs import check_token_budget, split_items
from .network import DEFAULT_TOKEN_BUDGET, BertramNetwork
from .storage import create_bertram, load_bertram, network_from_bytes, network_to_bytes

WordWithContexts = Tuple[str, Sequence[str]]
BertramInput = List[WordWithContexts]


#: Layer settings that describe the trained network (its config.json). Unset (null)
#: means "the trained model's"; a value given must equal the model's.
NETWORK_SETTINGS = ("base_model", "mode", "use_subword_mean", "max_seq_length", "max_contexts")


@registry.architectures("spacy-bertram.Bertram.v1")
def Bertram_v1(
    base_model: Optional[str] = None,
    mode: Optional[str] = None,
    use_subword_mean: Optional[bool] = None,
    max_seq_length: Optional[int] = None,
    max_contexts: Optional[int] = None,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    model_path: Optional[str] = None,
) -> Model[BertramInput, Floats2d]:
    """BERTRAM as a Thinc layer: (word, contexts) pairs in, one vector per word out.

    model_path: the trained BERTRAM directory. It is loaded by the layer's init
    (`model.initialize()`, which the `bertram` component runs), not here: a
    config stays valid without the directory, and a saved pipeline restores
    its weights from its own files without ever reading it (as
    spacy-transformers' `name`). Without model_path the layer is the untrained
    network its settings describe (those unset: BertramConfig's defaults), built here.
    base_model, mode, use_subword_mean, max_seq_length and max_contexts (the
    most contexts the network reads) are read from the trained model (the
    directory or the serialized weights): leave them unset. A value that
    differs from the trained model's is a ValueError naming the setting, never
    silently replaced. token_budget (encoder tokens per call) is this layer's
    own and always wins. Serialisation writes safetensors + JSON, never
    pickles, never the encoder.
    """
    check_token_budget(token_budget, "[components.bertram.model] token_budget")
    values = (base_model, mode, use_subword_mean, max_seq_length, max_contexts)
    requested = {key: value for key, value in zip(NETWORK_SETTINGS, values) if value is not None}
    network: Optional[BertramNetwork] = None
    if not model_path:
        settings = {k: v for k, v in requested.items() if k != "base_model"}
        network = create_bertram(requested.get("base_model", "default"), **settings)

    def serialize(current: Optional[BertramNetwork]) -> bytes:
        if current is None:
            raise ValueError(Errors.E033.format(problem=_not_initialized(model)))
        return network_to_bytes(current)

    def deserialize(current: Optional[BertramNetwork], data: bytes, device: Any) -> BertramNetwork:
        loaded = network_from_bytes(current, data, device)
        check_settings(requested, loaded, "the serialized weights")
        _mark_network(shim, None)  # the saved weights: init must not load model_path over them
        return loaded

    shim = PyTorchShim(network, serialize_model=serialize, deserialize_model=deserialize)
    model: Model[BertramInput, Floats2d] = Model(
        "bertram",
        pytorch_forward,
        init=init,
        attrs={"convert_inputs": _convert_inputs, "convert_outputs": _convert_outputs},
        shims=[shim],
        dims={"nI": None, "nO": network.width if network is not None else None},
    )
    # On the shim, not in attrs: thinc restores attrs from saved bytes, and a
    # loaded pipeline must use the token_budget and model_path of its config.
    shim.bertram_settings = requested
    shim.token_budget = token_budget
    shim.model_path = str(Path(model_path)) if model_path else None
    shim.needs_init = bool(model_path)  # True until init or saved bytes give the network
    shim.loaded_from = None  # the directory init loaded the current network from
    return model


def init(model: Model, X: Any = None, Y: Any = None) -> None:
    """Load the trained network from model_path, once: a network from saved bytes or
    `set_bertram_network` is kept, so a loaded pipeline never needs the directory."""
    shim = model.shims[0]
    if not shim.needs_init:
        return
    path = shim.model_path
    try:
        network = load_bertram(path, device=str(get_torch_default_device()))
    except ValueError as err:
        raise ValueError(Errors.E034.format(path=path, err=err)) from err
    check_settings(shim.bertram_settings, network, repr(path))
    set_bertram_network(model, network)
    _mark_network(shim, path)


def _mark_network(shim: Any, loaded_from: Optional[str]) -> None:
    """The layer has its network now: init must not load model_path over it."""
    shim.needs_init = False
    shim.loaded_from = loaded_from


def rearm_model_path(model: Model) -> bool:
    """Let init load the configured model_path again, over the network the layer has: for
    saved weights that were never trained, and for a reload the user asks for. False: the
    layer has no model_path to load."""
    if configured_model_path(model):
        model.shims[0].needs_init = True
        return True
    return False


def needs_init(model: Model) -> bool:
    """Whether the layer still has to load its model_path (`model.initialize()` does)."""
    return bool(getattr(model.shims[0], "needs_init", False))


def loaded_model_path(model: Model) -> Optional[str]:
    """The directory the layer's init loaded the current network from (None: untrained or from bytes)."""
    return getattr(model.shims[0], "loaded_from", None)


def configured_model_path(model: Model) -> Optional[str]:
    """The layer's model_path setting (None: none configured)."""
    return getattr(model.shims[0], "model_path", None)


def _not_initialized(model: Model) -> str:
    path = configured_model_path(model)
    return f"The BERTRAM layer has not loaded its model_path {path!r} yet (its init loads it)"


def _same_encoder(a: str, b: str) -> bool:
    a, b = resolve_base_model(a), resolve_base_model(b)
    return a == b or (os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b))


def check_settings(requested: Dict[str, Any], network: BertramNetwork, source: str) -> None:
    """Refuse a trained network whose settings differ from those set on the layer."""
    for key, wanted in requested.items():
        actual = getattr(network.config, key)
        same = _same_encoder(wanted, actual) if key == "base_model" else wanted == actual
        if not same:
            raise ValueError(Errors.E036.format(key=key, wanted=wanted, source=source, actual=actual))


def get_bertram_network(model: Model) -> BertramNetwork:
    """The layer's network; a named error while its model_path waits for init, not an AttributeError."""
    network = model.shims[0]._model
    if network is None:
        raise ValueError(Errors.E037.format(problem=_not_initialized(model)))
    return network


def set_bertram_network(model: Model, network: BertramNetwork) -> None:
    """Swap in another (e.g. freshly trained) network, keeping the layer object (init then keeps it)."""
    model.shims[0]._model = network
    model.set_dim("nO", network.width, force=True)
    _mark_network(model.shims[0], None)


def _convert_inputs(
    model: Model, X: BertramInput, is_train: bool
) -> Tuple[ArgsKwargs, Callable[[Any], List]]:
    network = get_bertram_network(model)
    words, contexts = split_items(X)
    batch = network.prepare(words, contexts)
    kwargs = {"token_budget": model.shims[0].token_budget}
    # Words and contexts are strings: there is no gradient to pass back to them.
    return ArgsKwargs(args=(batch,), kwargs=kwargs), lambda d_inputs: []


def _convert_outputs(model: Model, inputs_outputs: Tuple[BertramInput, Any], is_train: bool):
    _, vectors = inputs_outputs
    Y = torch2xp(vectors.float(), ops=model.ops)

    def backprop(dY: Floats2d) -> ArgsKwargs:
        grads = xp2torch(dY, device=vectors.device).to(vectors.dtype)
        return ArgsKwargs(args=(vectors,), kwargs={"grad_tensors": grads})

    return Y, backprop
