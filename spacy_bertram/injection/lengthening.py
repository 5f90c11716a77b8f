"""slash and replace: the rebuilt rows through the stock HF layer, their outputs back on the stock layout.

slash (e_1..e_j, e_/, v_w, e_{j+1}..e_n) and replace (e_1..e_{i-1}, v_w, e_{j+1}..e_n) feed the
encoder rebuilt wordpiece sequences (`builders.py`) as a plain `WordpieceBatch`, through the wrapped
HF layer with its stock conversions; the vectors enter through the embedding hook (`hook.py`). The
outputs are gathered back onto the stock wordpiece positions (`mapping.py`), so `doc._.trf_data`
and every listener see what the stock model would give them, and backprop scatters the stock
layout's gradient back onto the rebuilt positions before the HF layer's own backprop.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import numpy
import torch
from spacy_transformers.data_classes import WordpieceBatch
from thinc.api import Model

from .batch import InjectionPlan, row_ends
from .groups import run_in_length_groups
from .hook import call_with_vectors
from .mapping import map_outputs_to_stock

#: The modes whose rebuilt sequences are longer or shorter than the stock ones.
LENGTHENING_MODES = ("slash", "replace")


def run_lengthened(
    transformer: Model,
    plan: InjectionPlan,
    is_train: bool,
    hf_model: Any,
    groups: Optional[List[numpy.ndarray]] = None,
) -> Tuple[Any, Callable[[Any], Any]]:
    """The HF layer on the plan's rebuilt rows (in length groups, `groups` where the caller has them), outputs on
    the stock layout (recentre's rows too, when they run in groups)."""
    return run_in_length_groups(plan, lambda part: run_rebuilt(transformer, part, is_train, hf_model), groups)


def rebuilt_wordpieces(plan: InjectionPlan) -> WordpieceBatch:
    """The plan's rebuilt rows as the batch the HF layer reads (ids, mask, token types; no strings)."""
    n_rows = plan.input_ids.shape[0]
    return WordpieceBatch(
        strings=[[] for _ in range(n_rows)],
        input_ids=plan.input_ids,
        attention_mask=plan.attention_mask,
        lengths=[int(n) for n in row_ends(plan.attention_mask)],
        token_type_ids=plan.token_type_ids,
    )


def run_rebuilt(
    transformer: Model, plan: InjectionPlan, is_train: bool, hf_model: Any
) -> Tuple[Any, Callable[[Any], Any]]:
    """One call of the HF layer on rebuilt rows, with the vectors hooked in; outputs mapped to the stock layout."""
    rebuilt_output, backprop_rebuilt = call_with_vectors(
        transformer, rebuilt_wordpieces(plan), plan, is_train, hf_model
    )
    with torch.no_grad():  # backprop maps the gradient itself, below
        model_output = map_outputs_to_stock(rebuilt_output, plan)
    rebuilt_shape = tuple(rebuilt_output.last_hidden_state.shape)

    def backprop(d_output: Any) -> Any:
        # The stock conversion backprops from last_hidden_state with the gradients' values, whatever their keys.
        mapped = {key: _to_rebuilt(d_stock, plan, rebuilt_shape) for key, d_stock in d_output.items()}
        return backprop_rebuilt(d_output.__class__(**mapped))

    return model_output, backprop


def _to_rebuilt(d_stock: torch.Tensor, plan: InjectionPlan, rebuilt_shape: Tuple[int, ...]) -> torch.Tensor:
    """The stock layout's gradient summed onto the rebuilt positions its outputs came from (zero elsewhere)."""
    index = plan.on_device(d_stock.device)
    n_seq, stock_length = index.src.shape
    flat_d = d_stock.reshape(n_seq * stock_length, -1)
    keep = index.keep.reshape(-1)
    d_rebuilt = torch.zeros(
        (rebuilt_shape[0] * rebuilt_shape[1], flat_d.shape[1]), dtype=d_stock.dtype, device=d_stock.device
    )
    d_rebuilt.index_add_(0, index.flat_src[keep], flat_d[keep])
    return d_rebuilt.view(*rebuilt_shape[:2], *d_stock.shape[2:])
