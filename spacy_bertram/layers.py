"""Thinc layers registered in spaCy's registry."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3, torch2xp, xp2torch
from thinc.types import Floats2d

from .encoder import resolve_base_model
from .inputs import split_items
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

    base_model, mode, use_subword_mean, max_seq_length and max_contexts are
    read from the trained model (`model_path` here, the component's model, or
    the serialized weights): leave them unset. A value that differs from the
    trained model's is a ValueError naming the setting, never silently
    replaced. Without a trained model they configure the untrained network.
    token_budget (encoder tokens per call) is this layer's own and always wins.
    Serialisation writes safetensors + JSON, never pickles, never the encoder.
    """
    check_token_budget(token_budget)
    values = (base_model, mode, use_subword_mean, max_seq_length, max_contexts)
    requested = {key: value for key, value in zip(NETWORK_SETTINGS, values) if value is not None}
    if model_path:
        network = load_bertram(model_path)
        check_settings(requested, network, repr(str(model_path)))
    else:
        settings = {k: v for k, v in requested.items() if k != "base_model"}
        network = create_bertram(requested.get("base_model", "default"), **settings)

    def deserialize(current: BertramNetwork, data: bytes, device: Any) -> BertramNetwork:
        loaded = network_from_bytes(current, data, device)
        check_settings(requested, loaded, "the serialized weights")
        return loaded

    model: Model[BertramInput, Floats2d] = PyTorchWrapper_v3(
        network,
        convert_inputs=_convert_inputs,
        convert_outputs=_convert_outputs,
        serialize_model=network_to_bytes,
        deserialize_model=deserialize,
    )
    # On the shim, not in attrs: thinc restores attrs from saved bytes, and a
    # loaded pipeline must use the token_budget of its config.
    shim = model.shims[0]
    shim.bertram_settings = requested
    shim.token_budget = token_budget
    model.name = "bertram"
    model.set_dim("nO", network.width)
    return model


def check_token_budget(token_budget: Any) -> None:
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise ValueError(
            f"[components.bertram.model] token_budget must be a positive number of encoder "
            f"tokens per call, got {token_budget!r}"
        )


def _same_encoder(a: str, b: str) -> bool:
    a, b = resolve_base_model(a), resolve_base_model(b)
    return a == b or (os.path.exists(a) and os.path.exists(b) and os.path.samefile(a, b))


def check_settings(requested: Dict[str, Any], network: BertramNetwork, source: str) -> None:
    """Refuse a trained network whose settings differ from those set on the layer."""
    for key, wanted in requested.items():
        actual = getattr(network.config, key)
        same = _same_encoder(wanted, actual) if key == "base_model" else wanted == actual
        if not same:
            raise ValueError(
                f"[components.bertram.model] sets {key} = {wanted!r}, but the trained BERTRAM "
                f"model ({source}) has {key} = {actual!r}. These settings are read from the "
                f"trained model: remove {key} from [components.bertram.model] (or set it to "
                f"{actual!r}), or use a BERTRAM model trained with {key} = {wanted!r}."
            )


def check_network_settings(model: Model, network: BertramNetwork, source: str) -> None:
    """`check_settings` with what the layer `model` was configured with."""
    check_settings(getattr(model.shims[0], "bertram_settings", {}), network, source)


def get_bertram_network(model: Model) -> BertramNetwork:
    return model.shims[0]._model


def set_bertram_network(model: Model, network: BertramNetwork) -> None:
    """Swap in another (e.g. freshly trained) network, keeping the layer object."""
    model.shims[0]._model = network
    model.set_dim("nO", network.width, force=True)


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
