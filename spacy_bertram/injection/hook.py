"""The one way vectors enter the encoder: a one-shot forward hook on its input embeddings.

The HF model is still called with `input_ids`, so position ids, token types, embedding
scaling and padding conventions stay the model's own (e.g. RoBERTa's padding-aware
position ids), and the embedding matrix stays a trainable leaf. The hook writes (or, for
recentre, adds) the plan's vectors into the rows of the embedding output that the plan
names, then removes itself, so a later call of the same encoder runs stock.

A hook left behind by a call that raised would put stale vectors into the next call of
that encoder: at most one hook is pending per embedding module, and installing one or
calling `clear_pending` removes the earlier one.
"""

from __future__ import annotations

import weakref
from typing import Any, Optional, Tuple

import numpy
import torch

from ..errors import Errors
from .batch import InjectionPlan

_PENDING: "weakref.WeakKeyDictionary[torch.nn.Module, EmbeddingHook]" = weakref.WeakKeyDictionary()


def encoder_name(hf_model: Any) -> str:
    """The encoder's name or path, for error messages."""
    return str(getattr(getattr(hf_model, "config", None), "name_or_path", "") or type(hf_model).__name__)


class EmbeddingHook:
    """A plan's vectors, put into the input-embedding output of the encoder's next forward call.

    check_ids: also check that the embedded ids at the vector positions are the planned
    ones (when the encoder tokenizes the batch itself, as the stock forward does).
    """

    def __init__(self, hf_model: Any, plan: InjectionPlan, check_ids: bool = False) -> None:
        self.plan = plan
        self.check_ids = check_ids
        self.model_name = encoder_name(hf_model)
        self.fired = False
        self.embeddings: torch.nn.Module = hf_model.get_input_embeddings()
        clear_pending(self.embeddings)
        self._handle: Optional[Any] = self.embeddings.register_forward_hook(self._put)
        _PENDING[self.embeddings] = self

    def remove(self) -> None:
        """Unregister the hook (idempotent)."""
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
        if _PENDING.get(self.embeddings) is self:
            del _PENDING[self.embeddings]

    def check_fired(self) -> None:
        """Raise if the encoder never called its input embeddings: no vector went in."""
        if not self.fired:
            raise RuntimeError(Errors.E178.format(model=self.model_name))

    def _put(self, module: torch.nn.Module, args: Tuple[Any, ...], output: torch.Tensor) -> torch.Tensor:
        self.remove()
        plan = self.plan
        expected = tuple(plan.input_ids.shape)
        if tuple(output.shape[:2]) != expected:
            raise RuntimeError(Errors.E176.format(model=self.model_name, shape=tuple(output.shape), expected=expected))
        tensors = plan.on_device(output.device)  # every index tensor moves once per batch
        rows, cols = tensors.rows, tensors.cols
        if self.check_ids:
            self._check_ids(args, rows, cols)
        self.fired = True
        vectors = tensors.vectors.to(output.dtype)
        if torch.is_grad_enabled() and output.requires_grad:
            return output.index_put((rows, cols), vectors, accumulate=plan.add)
        # Inference: the embedding output is a fresh tensor nothing saved; write in place.
        return output.index_put_((rows, cols), vectors, accumulate=plan.add)

    def _check_ids(self, args: Tuple[Any, ...], rows: torch.Tensor, cols: torch.Tensor) -> None:
        """The embedded ids at the vector positions must be the planned ones (where the module takes ids)."""
        ids = args[0] if args else None
        if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.device.type == "meta":
            return
        if tuple(ids.shape[:2]) != tuple(self.plan.input_ids.shape):
            return
        planned = numpy.asarray(self.plan.input_ids)[self.plan.vector_rows, self.plan.vector_cols]
        seen = ids[rows, cols].cpu().numpy()
        n_differ = int((seen != planned).sum())
        if n_differ:
            raise RuntimeError(Errors.E177.format(model=self.model_name, n_differ=n_differ, n_planned=len(planned)))


def call_with_vectors(
    layer: Any, wordpieces: Any, plan: InjectionPlan, is_train: bool, hf_model: Any, check_ids: bool = False
) -> Tuple[Any, Any]:
    """One call of the wrapped HF layer with the plan's vectors hooked into its input embeddings; the hook is
    gone afterwards whatever happens, and a call that never embedded raises (E178)."""
    hook = EmbeddingHook(hf_model, plan, check_ids=check_ids)
    try:
        result = layer(wordpieces, is_train)
    finally:
        hook.remove()
    hook.check_fired()
    return result


def clear_pending(embeddings: torch.nn.Module) -> None:
    """Remove a hook a failed call left on these input embeddings."""
    pending = _PENDING.get(embeddings)
    if pending is not None:
        pending.remove()
