"""Thinc layers registered in spaCy's registry."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3, torch2xp, xp2torch
from thinc.types import Floats2d

from .network import DEFAULT_TOKEN_BUDGET, BertramNetwork
from .storage import create_bertram, load_bertram, network_from_bytes, network_to_bytes

WordWithContexts = Tuple[str, Sequence[str]]
BertramInput = List[WordWithContexts]


@registry.architectures("spacy-bertram.Bertram.v1")
def Bertram_v1(
    base_model: str = "default",
    mode: str = "add",
    use_subword_mean: bool = True,
    max_seq_length: int = 96,
    max_contexts: int = 32,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    model_path: Optional[str] = None,
) -> Model[BertramInput, Floats2d]:
    """BERTRAM as a Thinc layer: (word, contexts) pairs in, one vector per word out.

    With `model_path`, a trained model directory is loaded (and its own
    config wins over the settings here); otherwise the network is untrained
    and gets its weights from `from_bytes`/`from_disk` or `set_bertram_network`.
    Serialisation writes safetensors + JSON, never pickles, never the encoder.
    """
    if model_path:
        network = load_bertram(model_path)
    else:
        network = create_bertram(
            base_model,
            mode=mode,
            use_subword_mean=use_subword_mean,
            max_seq_length=max_seq_length,
            max_contexts=max_contexts,
        )
    model: Model[BertramInput, Floats2d] = PyTorchWrapper_v3(
        network,
        convert_inputs=_convert_inputs,
        convert_outputs=_convert_outputs,
        serialize_model=network_to_bytes,
        deserialize_model=network_from_bytes,
    )
    model.attrs["token_budget"] = token_budget
    model.name = "bertram"
    model.set_dim("nO", network.width)
    return model


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
    words = [word for word, _ in X]
    contexts = [list(contexts) for _, contexts in X]
    batch = network.prepare(words, contexts)
    kwargs = {"token_budget": model.attrs["token_budget"]}
    # Words and contexts are strings: there is no gradient to pass back to them.
    return ArgsKwargs(args=(batch,), kwargs=kwargs), lambda d_inputs: []


def _convert_outputs(model: Model, inputs_outputs: Tuple[BertramInput, Any], is_train: bool):
    _, vectors = inputs_outputs
    Y = torch2xp(vectors.float(), ops=model.ops)

    def backprop(dY: Floats2d) -> ArgsKwargs:
        grads = xp2torch(dY, device=vectors.device).to(vectors.dtype)
        return ArgsKwargs(args=(vectors,), kwargs={"grad_tensors": grads})

    return Y, backprop
