"""The rebuilt batch's outputs, gathered back onto the stock wordpiece positions.

- replace: the single position's output is copied to each of the word's wordpieces
  (so the word's pieces share one state; in backprop their gradients are summed).
- slash: the two inserted positions are dropped.
- Padding positions of the stock layout hold zeros (stock holds the encoder's
  output for [PAD] there; nothing aligned reads them).
- Outputs mapped: `last_hidden_state`, `hidden_states` (each layer, dim 1),
  `attentions` / `cross_attentions` (both position axes), and any other tensor with
  shape (batch, new_length, ...); `pooler_output` and other per-sequence outputs
  are kept as computed (they see the injected vectors).
"""

from __future__ import annotations

from typing import Any, Dict

import torch
from transformers.utils import ModelOutput

from .batch import InjectionPlan, PlanTensors

# ModelOutput keys whose tensors have two position axes (the last two).
_PAIRWISE_KEYS = {"attentions", "cross_attentions"}


def map_outputs_to_stock(model_output: ModelOutput, plan: InjectionPlan) -> ModelOutput:
    """Gather every per-position output back onto the stock wordpiece positions."""
    new_length = plan.input_ids.shape[1]
    n_seq = plan.input_ids.shape[0]
    mapped: Dict[str, Any] = {}
    for key, value in model_output.items():
        if isinstance(value, torch.Tensor):
            mapped[key] = _map_tensor(key, value, plan, n_seq, new_length)
        elif isinstance(value, tuple) and all(isinstance(t, torch.Tensor) for t in value):
            mapped[key] = tuple(_map_tensor(key, t, plan, n_seq, new_length) for t in value)
        else:
            mapped[key] = value
    return model_output.__class__(**mapped)


def _map_tensor(key: str, tensor: torch.Tensor, plan: InjectionPlan, n_seq: int, new_length: int) -> torch.Tensor:
    if tensor.ndim < 2 or tensor.shape[0] != n_seq:
        return tensor
    index = plan.on_device(tensor.device)
    if key in _PAIRWISE_KEYS and tensor.ndim == 4 and tensor.shape[-1] == new_length:
        tensor = _gather_axis(tensor, index.src, index.keep, axis=2)
        return _gather_axis(tensor, index.src, index.keep, axis=3)
    if key in ("last_hidden_state", "hidden_states") or (tensor.ndim >= 3 and tensor.shape[1] == new_length):
        return _select_positions(tensor, index)
    return tensor


def _select_positions(tensor: torch.Tensor, index: "PlanTensors") -> torch.Tensor:
    """tensor[b, src[b, k]], zero where not `keep`: one row copy per position (differentiable).

    Equal to `_gather_axis(tensor, src, keep, 1)`, without an element-wise index."""
    n_seq, length = index.src.shape
    rest = tuple(tensor.shape[2:])
    rows = tensor.reshape(n_seq * tensor.shape[1], *rest).index_select(0, index.flat_src)
    out = rows.view(n_seq, length, *rest)
    # index_select's backward does not need its output: zero the padding in place.
    return out.masked_fill_(index.drop.view(n_seq, length, *([1] * len(rest))), 0)


def _gather_axis(tensor: torch.Tensor, src: torch.Tensor, keep: torch.Tensor, axis: int) -> torch.Tensor:
    """tensor[b, ..., src[b, k], ...] along `axis`, zero where not `keep` (differentiable)."""
    n_seq, length = src.shape
    view = [n_seq] + [1] * (tensor.ndim - 1)
    view[axis] = length
    shape = list(tensor.shape)
    shape[axis] = length
    index = src.view(view).expand(shape)
    gathered = tensor.gather(axis, index)
    return gathered.masked_fill(~keep.view(view).expand(shape), 0)
