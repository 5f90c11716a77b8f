"""Length groups: the rebuilt rows of an injected batch run in a few calls of similar length.

A batch pads every row to its longest (spans of short and long docs together), and the
encoder spends as much on a padding position as on a real one. The rebuilt batch is
ours to run as we like, since its outputs are mapped back to the stock layout row by
row (`mapping.py`), so it runs in groups of rows of similar length when the padding
saved outweighs the extra calls. Outputs equal one call's to float rounding (~1e-6).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy
import torch
from transformers.utils import ModelOutput

from .batch import InjectionPlan, row_ends


#: Padding positions one more encoder call is worth (the per-call cost, in positions).
CALL_COST_POSITIONS = 256
#: Fewest rows in a group, and most groups per batch: small calls use the matrix units badly.
MIN_GROUP_ROWS = 16
MAX_GROUPS = 4


def length_groups(lengths: numpy.ndarray) -> List[numpy.ndarray]:
    """Rows (of these lengths) sorted by length and cut into 1, 2 or 4 equal groups, whichever costs least.

    A batch pads every row to its longest (spans of short and long docs together);
    the encoder spends as much on a padding position as on a real one. The rebuilt
    batch is ours to run as we like, since its outputs are mapped back to the stock
    layout row by row, so it runs in groups of similar length when the padding saved
    outweighs the extra calls. Outputs equal one call's to float rounding (~1e-6).
    """
    n_rows = len(lengths)
    order = numpy.argsort(lengths, kind="stable")
    best: List[numpy.ndarray] = [numpy.arange(n_rows)]
    best_cost = n_rows * int(lengths.max(initial=0)) + CALL_COST_POSITIONS
    n_groups = 2
    while n_groups <= MAX_GROUPS and n_rows >= n_groups * MIN_GROUP_ROWS:
        groups = numpy.array_split(order, n_groups)
        cost = sum(len(g) * int(lengths[g].max()) + CALL_COST_POSITIONS for g in groups)
        if cost < best_cost:
            best, best_cost = groups, cost
        n_groups *= 2
    return best


def select_rows(plan: InjectionPlan, rows: numpy.ndarray, width: int) -> InjectionPlan:
    """The plan for `rows` only, trimmed to `width` positions (their longest rebuilt row)."""
    new_row = numpy.full(plan.input_ids.shape[0], -1, dtype="int64")
    new_row[rows] = numpy.arange(len(rows))
    has_vector = new_row[plan.vector_rows] >= 0
    return InjectionPlan(
        input_ids=plan.input_ids[rows, :width],
        attention_mask=plan.attention_mask[rows, :width],
        token_type_ids=None if plan.token_type_ids is None else plan.token_type_ids[rows, :width],
        vector_rows=new_row[plan.vector_rows[has_vector]],
        vector_cols=plan.vector_cols[has_vector],
        vectors=plan.vectors[has_vector],
        src=plan.src[rows],
        keep=plan.keep[rows],
        n_skipped=0,
        add=plan.add,
    )


def run_in_length_groups(
    plan: InjectionPlan,
    run: Callable[[InjectionPlan], Tuple[ModelOutput, Callable[[ModelOutput], Any]]],
    groups: Optional[List[numpy.ndarray]] = None,
) -> Tuple[ModelOutput, Callable[[ModelOutput], Any]]:
    """`run` (one HF call on a plan's rows, outputs on the stock layout) per length group, rows in stock order.
    `groups`: `length_groups` of the plan's rows, where the caller has them already."""
    lengths = row_ends(plan.attention_mask)
    if groups is None:
        groups = length_groups(lengths)
    if len(groups) == 1:
        return run(plan)
    results = [run(select_rows(plan, g, int(lengths[g].max()))) for g in groups]
    device = next(t for t in results[0][0].values() if isinstance(t, torch.Tensor)).device
    inverse = torch.as_tensor(numpy.argsort(numpy.concatenate(groups)), device=device)
    with torch.no_grad():  # each group's backprop runs on its own outputs
        merged = _apply_rows([out for out, _ in results], lambda parts: torch.cat(parts).index_select(0, inverse))
    row_index = [torch.as_tensor(g, device=device) for g in groups]

    def backprop(d_output: ModelOutput) -> List:
        for (_, bp_group), rows in zip(results, row_index):
            bp_group(_apply_rows([d_output], lambda parts: parts[0].index_select(0, rows)))
        return []

    return merged, backprop


def _apply_rows(outputs: List[ModelOutput], combine: Callable[[List[torch.Tensor]], torch.Tensor]) -> ModelOutput:
    """`combine` over the per-row tensors (and tuples of them) of model outputs alike in keys."""
    first = outputs[0]
    values: Dict[str, Any] = {}
    for key, value in first.items():
        if isinstance(value, torch.Tensor):
            values[key] = combine([out[key] for out in outputs])
        elif isinstance(value, tuple) and all(isinstance(t, torch.Tensor) for t in value):
            values[key] = tuple(combine([out[key][i] for out in outputs]) for i in range(len(value)))
        else:
            values[key] = value
    return first.__class__(**values)
