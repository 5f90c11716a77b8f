"""What `evaluate` writes for one rarified set, from the systems' predictions.

metrics.json: accuracy on All / WN / Msp, exact McNemar per subset, accuracy by
the rarest substitute's frequency, and (key "vs_baseline", on All) per system the
mean gold-label log-probability and paired bootstrap CIs of the accuracy and
log-probability differences to the baseline (`paired.compare_to_baseline`).
predictions.jsonl: one row per item with every system's label, gold-label
probability and correctness, so sets can be pooled later from files (`pooling`).
accuracy_by_frequency.png: the frequency buckets as a plot.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence, Union

import numpy as np

from spacy_bertram.project_support import atomic_path, mark_json, write_json_atomic
from .metrics import accuracy_by_frequency, accuracy_by_subset, compare_systems, plot_accuracy_by_frequency
from ..outputs import METRICS_FILE
from .paired import DEFAULT_RESAMPLES, compare_to_baseline, prediction_rows, table_from_rows


def gold_probabilities(items: Sequence[Mapping], probabilities: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    """p(gold label) per item from a (n_items, n_labels) matrix in `labels` order."""
    column = {label: j for j, label in enumerate(labels)}
    return np.asarray(probabilities, dtype=float)[np.arange(len(items)), [column[it["label"]] for it in items]]


def finite(obj: Any) -> Any:
    """NaN / inf -> None so the JSON is standard."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def write_set_outputs(
    output_dir: Union[str, Path],
    items: Sequence[Mapping],
    predictions: Mapping[str, List[str]],
    p_gold: Mapping[str, np.ndarray],
    extra: Mapping[str, Any],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    command: str = "evaluate",
) -> Dict[str, Any]:
    """Write metrics.json, predictions.jsonl and the PNG for one set; returns the metrics.

    `predictions` / `p_gold` map system -> per-item values, the baseline first;
    `extra` (settings, coverage, times) is merged into metrics.json as given;
    metrics.json names the `command` that wrote it (the output check of the next run reads it).
    """
    out = Path(output_dir)
    systems = list(predictions)
    rows = prediction_rows(items, predictions, p_gold)
    accuracy = {s: accuracy_by_subset(items, predictions[s]) for s in systems}
    comparisons = {
        s: {k: vars(v) for k, v in compare_systems(items, predictions[s], predictions["baseline"]).items()}
        for s in systems
        if s != "baseline"
    }
    buckets = {s: accuracy_by_frequency(items, predictions[s]) for s in systems}
    plot_accuracy_by_frequency(buckets, out / "accuracy_by_frequency.png")
    with atomic_path(out / "predictions.jsonl", overwrite=True) as tmp:
        with open(tmp, "w", encoding="utf8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    metrics = {
        "n_items": len(items),
        "systems": systems,
        "accuracy": accuracy,
        "mcnemar_vs_baseline": comparisons,
        "vs_baseline": compare_to_baseline(table_from_rows(rows, out.name), n_resamples=n_resamples, seed=seed),
        "by_frequency": {s: [vars(b) | {"label": b.label} for b in bs] for s, bs in buckets.items()},
        **extra,
    }
    write_json_atomic(out / METRICS_FILE, finite(mark_json(metrics, command)), overwrite=True)
    return metrics


__all__ = ["finite", "gold_probabilities", "write_set_outputs"]
