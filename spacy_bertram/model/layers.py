"""The BERTRAM Thinc layer (`spacy-bertram.Bertram.v1`, registered in `architectures.py`) and the shim that
holds its state: the network, which weights it holds and the counts they came with, and the layer's settings.
The one inference setting the forward pass reads besides them, the subword share, is the layer's attr
`SHARE_ATTR`, as thinc's own layers keep theirs (Dropout's `dropout_rate`)."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Dict, List, Optional, Sequence, Tuple

import numpy
from thinc.api import ArgsKwargs, Model, PyTorchShim, get_torch_default_device, torch2xp, xp2torch
from thinc.types import Floats2d

from .encoder import resolve_base_model
from ..errors import Errors, Warnings
from ..rarity.frequencies import CountTable
from .inputs import split_items
from .network import BertramNetwork
from .reference import is_reference_checkpoint
from .storage import load_bertram, model_fingerprint, network_from_bytes, network_to_bytes

WordWithContexts = Tuple[str, Sequence[str]]
BertramInput = List[WordWithContexts]

#: Words per call of the layer in `infer_vectors`, bounding memory on huge batches.
WORDS_PER_CALL = 512
#: Key of the component's saved cfg that records an untrained network (no model_path), not a model left unnamed.
UNTRAINED_KEY = "untrained"
#: The layer's attr the forward pass reads: the weight of the subword mean in the vectors (None: the network's own).
SHARE_ATTR = "subword_share"


#: Layer settings that describe the trained network (its config.json). Unset (null)
#: means "the trained model's"; a value given must equal the model's.
NETWORK_SETTINGS = ("base_model", "mode", "use_subword_mean", "max_seq_length", "max_contexts")


@dataclass(frozen=True)
class Weights:
    """Which weights the layer's network holds: the one record of it (the component reads it, a save writes it).

    model_id: the trained model's fingerprint (`storage.model_fingerprint`); None for weights that are no
        trained model's (the network built untrained from base_model) or whose model is not known.
    source: the directory they were loaded from, where they were.
    """

    model_id: Optional[str] = None
    source: Optional[str] = None

    @property
    def trained(self) -> bool:
        return self.model_id is not None


def checked_subword_share(share: Any, name: str) -> Optional[float]:
    """None (the trained model's own share) or a number in [0, 1]: anything else is E169, not a vector mixed out
    of range."""
    if share is None:
        return None
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
        raise ValueError(Errors.E169.format(name=name, value=share))
    return float(share)


class BertramShim(PyTorchShim):
    """The BERTRAM network inside a Thinc model, with what the layer's config says about it.

    It owns the network's bytes (safetensors + JSON, never pickle, never the encoder), the layer's
    settings, kept here and not in the model's attrs (thinc restores attrs from saved bytes, and a loaded
    pipeline must use the token_budget and model_path of its own config), `weights`: which weights
    the network holds, None while there are none to keep (init then loads model_path), and `counts`: the
    word counts of the trained model they came from (its counts.tsv; None: it has none). Nothing of the
    pipeline: the `bertram` component keeps what it computes from these itself.
    """

    def __init__(
        self,
        network: Optional[BertramNetwork],
        requested: Dict[str, Any],
        token_budget: int,
        model_path: Optional[str],
        int8_encoder: bool = False,
    ) -> None:
        super().__init__(network, serialize_model=self._serialize, deserialize_model=self._deserialize)
        self.requested = dict(requested)  # network settings the config sets (a trained model must agree)
        self.token_budget = int(token_budget)
        self.int8_encoder = bool(int8_encoder)
        if network is not None:
            network.int8_encoder = self.int8_encoder
        self.model_path = str(Path(model_path)) if model_path else None
        self.weights: Optional[Weights] = None if self.model_path else Weights()
        self.counts: Optional[CountTable] = None

    @property
    def pending(self) -> bool:
        """model_path waits for init: the layer holds no weights it must keep."""
        return self.weights is None and self.model_path is not None

    @property
    def network(self) -> BertramNetwork:
        """The network; a named error while model_path waits for init, not an AttributeError."""
        if self._model is None:
            raise ValueError(Errors.E037.format(problem=self._not_initialized()))
        return self._model

    def set_network(self, network: BertramNetwork, weights: Optional[Weights] = None) -> None:
        """The layer has its network now, and these weights (a new record each time, so a component sees that they
        changed): init must not load model_path over them."""
        network.int8_encoder = self.int8_encoder  # the layer's own setting, as token_budget
        if self.int8_encoder and network.device.type != "cpu":
            warnings.warn(Warnings.W015.format(device=network.device), stacklevel=3)
        self._model = network
        self.weights = weights if weights is not None else Weights()

    def load(self) -> Optional[BertramNetwork]:
        """Load model_path and its counts, once (None: nothing to load): weights from saved bytes or `set_network`
        are kept."""
        if not self.pending:
            return None
        path = self.model_path
        # A reference checkpoint names no encoder of its own that loads here: the config's base_model is it.
        base_model = self.requested.get("base_model") if is_reference_checkpoint(path) else None
        try:
            network = load_bertram(path, base_model=base_model, device=str(get_torch_default_device()))
        except ValueError as err:
            raise ValueError(Errors.E034.format(path=path, err=err)) from err
        check_settings(self.requested, network, repr(path))
        self.set_network(network, Weights(model_fingerprint(path), path))
        self.counts = network.context_word_counts
        return network

    def rearm(self) -> bool:
        """Let init load model_path again, over the weights the layer holds: for saved weights that are no
        trained model's, and for a reload the user asks for. False: there is no model_path to load."""
        if self.model_path:
            self.weights = None
            return True
        return False

    def saved_cfg(self, name: str) -> Dict[str, Any]:
        """What a save of component `name` records of the layer: the model the weights are, or that they are
        untrained (nothing, and W014, while model_path waits)."""
        weights = self.weights or Weights()
        cfg: Dict[str, Any] = {"model_id": weights.model_id, "model_source": weights.source}
        if self.pending:
            warnings.warn(Warnings.W014.format(name=name, model_path=self.model_path), stacklevel=3)
        elif not weights.trained:
            cfg[UNTRAINED_KEY] = True
        return cfg

    def restore(
        self, cfg: Optional[Dict[str, Any]], parts: Dict[str, Any], exclude: Collection[str], name: str
    ) -> None:
        """Take what a load of component `name` read (`parts`: each part read, `exclude`: the parts left out).
        The counts: a saved model without them had none. The model's identity comes with its weights only (saved
        untrained, they give way to a model_path given at load: quietly, unless the save named no model, W004)."""
        if "frequencies" not in exclude:
            self.counts = parts.get("frequencies")
        if self._model is not None:
            self._model.context_word_counts = self.counts  # they weigh its context mean, as load_bertram's do
        if "model" in parts:
            saved = cfg or {}
            self.weights = Weights(saved.get("model_id"), saved.get("model_source"))  # whose weights were read
            if not self.weights.trained and self.rearm() and not saved.get(UNTRAINED_KEY):
                warnings.warn(Warnings.W004.format(name=name, model_path=self.model_path), stacklevel=3)

    def _serialize(self, network: Optional[BertramNetwork]) -> bytes:
        if network is None:
            raise ValueError(Errors.E033.format(problem=self._not_initialized()))
        return network_to_bytes(network)

    def _deserialize(self, current: Optional[BertramNetwork], data: bytes, device: Any) -> BertramNetwork:
        loaded = network_from_bytes(current, data, device)
        check_settings(self.requested, loaded, "the serialized weights")
        self.set_network(loaded)  # the saved weights (their model, if any, is the component's saved cfg's)
        return loaded

    def _not_initialized(self) -> str:
        return f"The BERTRAM layer has not loaded its model_path {self.model_path!r} yet (its init loads it)"


def init(model: Model, X: Any = None, Y: Any = None) -> None:
    """Load the trained network from model_path, once, so a loaded pipeline never needs the directory."""
    network = bertram_shim(model).load()
    if network is not None:
        model.set_dim("nO", network.width, force=True)


def bertram_shim(model: Model) -> BertramShim:
    """The layer's shim (a named error for a model that is not a `spacy-bertram.Bertram.v1` layer)."""
    shim = model.shims[0] if model.shims else None
    if not isinstance(shim, BertramShim):
        raise ValueError(Errors.E166.format(name=model.name))
    return shim


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
    """The layer's network; a named error while its model_path waits for init."""
    return bertram_shim(model).network


def infer_vectors(model: Model, items: Sequence[WordWithContexts]) -> numpy.ndarray:
    """The layer's vectors of (word, contexts) items, at most WORDS_PER_CALL words a call; a non-finite vector is an
    error naming its words (E155), never served."""
    out = numpy.zeros((len(items), get_bertram_network(model).width), dtype="float32")
    for start in range(0, len(items), WORDS_PER_CALL):
        chunk = list(items[start : start + WORDS_PER_CALL])
        out[start : start + len(chunk)] = model.ops.to_numpy(model.predict(chunk))
    if not numpy.isfinite(out).all():
        bad = [items[i][0] for i in numpy.flatnonzero(~numpy.isfinite(out).all(axis=1))[:5]]
        raise ValueError(Errors.E155.format(words=bad))
    return out


def set_bertram_network(model: Model, network: BertramNetwork) -> None:
    """Swap in another (e.g. freshly trained) network, keeping the layer object (init then keeps it)."""
    bertram_shim(model).set_network(network)
    model.set_dim("nO", network.width, force=True)


def forward(model: Model, X: BertramInput, is_train: bool) -> Tuple[Floats2d, Callable[[Floats2d], List]]:
    """The layer's words and contexts through the shim's network: inputs converted, run, outputs converted
    (the composition thinc's PyTorch wrapper makes, with this layer's shim)."""
    torch_inputs, backprop_inputs = model.attrs["convert_inputs"](model, X, is_train)
    torch_outputs, backprop_torch = model.shims[0](torch_inputs, is_train)
    Y, backprop_outputs = model.attrs["convert_outputs"](model, (X, torch_outputs), is_train)

    def backprop(dY: Floats2d) -> List:
        return backprop_inputs(backprop_torch(backprop_outputs(dY)))

    return Y, backprop


def convert_inputs(model: Model, X: BertramInput, is_train: bool) -> Tuple[ArgsKwargs, Callable[[Any], List]]:
    network = get_bertram_network(model)
    words, contexts = split_items(X)
    batch = network.prepare(words, contexts)
    kwargs = {"token_budget": bertram_shim(model).token_budget, "subword_share": model.attrs.get(SHARE_ATTR)}
    # Words and contexts are strings: there is no gradient to pass back to them.
    return ArgsKwargs(args=(batch,), kwargs=kwargs), lambda d_inputs: []


def convert_outputs(model: Model, inputs_outputs: Tuple[BertramInput, Any], is_train: bool):
    _, vectors = inputs_outputs
    Y = torch2xp(vectors.float(), ops=model.ops)

    def backprop(dY: Floats2d) -> ArgsKwargs:
        grads = xp2torch(dY, device=vectors.device).to(vectors.dtype)
        return ArgsKwargs(args=(vectors,), kwargs={"grad_tensors": grads})

    return Y, backprop
