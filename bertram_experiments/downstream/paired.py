"""Per-item results of a rarified evaluation and their paired comparison with the baseline.

Accuracy on a few dozen items moves in steps of several points, so each item also
keeps a continuous score: the log-probability the textcat gives the gold label
(`doc.cats[gold]`, clipped away from 0 so one confident error cannot make the
mean -inf). Per system and set we report accuracy, the mean gold log-probability,
the exact McNemar test, and paired bootstrap 95% CIs of both differences to the
baseline.

Items are resampled in clusters: every item carries the key of the test text it
was made from ("candidate", a hash of the original text), and the rarified
versions of one text (other rarification seeds, other thresholds) are drawn
together, because they are not independent evidence. Within one rarified set each
cluster is usually one item, so this is the ordinary item bootstrap.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ..errors import Errors
from ..bootstrap import DEFAULT_RESAMPLES, paired_bootstrap, ratio_of_sums
from .metrics import mcnemar_exact

#: gold-label probabilities are clipped to [EPS, 1] before the log.
EPS = 1e-6
BASELINE = "baseline"
#: predictions.jsonl's per-item count of the other texts of its set that hold one of its substitutes (what the
#: set's own texts can give it as contexts); `pool` splits the contexts rows by it. Absent in older files.
RECURRENCE_KEY = "substitute_other_texts"


def gold_log_prob(p_gold: Sequence[float], eps: float = EPS) -> np.ndarray:
    """log p(gold), with p clipped to [eps, 1]."""
    return np.log(np.clip(np.asarray(p_gold, dtype=float), eps, 1.0))


def candidate_key(original_text: str) -> str:
    """The cluster of a rarified item: its source text (same for every seed and threshold)."""
    return hashlib.sha1(original_text.encode("utf8")).hexdigest()[:16]


@dataclass
class ItemTable:
    """Per-item results of several systems on one or more rarified sets."""

    systems: List[str]
    sets: np.ndarray  # set name per item
    clusters: np.ndarray  # cluster key per item
    correct: Dict[str, np.ndarray] = field(default_factory=dict)  # system -> bool per item
    p_gold: Dict[str, np.ndarray] = field(default_factory=dict)  # system -> p(gold) per item
    recurrence: Optional[np.ndarray] = None  # RECURRENCE_KEY per item, where every item has it

    def __len__(self) -> int:
        return len(self.sets)

    def subset(self, mask: np.ndarray) -> "ItemTable":
        return ItemTable(
            self.systems,
            self.sets[mask],
            self.clusters[mask],
            {s: v[mask] for s, v in self.correct.items()},
            {s: v[mask] for s, v in self.p_gold.items()},
            None if self.recurrence is None else self.recurrence[mask],
        )

    def with_systems(self, systems: Sequence[str]) -> "ItemTable":
        """The same items with only `systems` (in that order)."""
        return ItemTable(
            list(systems),
            self.sets,
            self.clusters,
            {s: self.correct[s] for s in systems},
            {s: self.p_gold[s] for s in systems},
            self.recurrence,
        )

    @classmethod
    def concat(cls, tables: Sequence["ItemTable"]) -> "ItemTable":
        """Items of all tables, in order; systems are those every table has."""
        assert tables, "no tables to concatenate"
        systems = [s for s in tables[0].systems if all(s in t.systems for t in tables)]
        cat = lambda key: np.concatenate([getattr(t, key) for t in tables])  # noqa: E731
        return cls(
            systems,
            cat("sets"),
            cat("clusters"),
            {s: np.concatenate([t.correct[s] for t in tables]) for s in systems},
            {s: np.concatenate([t.p_gold[s] for t in tables]) for s in systems},
            None if any(t.recurrence is None for t in tables) else cat("recurrence"),
        )


def prediction_rows(
    items: Sequence[Mapping],
    predictions: Mapping[str, Sequence[str]],
    p_gold: Mapping[str, Sequence[float]],
) -> List[dict]:
    """predictions.jsonl rows: id, label, cluster key, predicted label per system,
    and per system the gold-label probability and correctness."""
    rows = []
    for i, it in enumerate(items):
        row = {"id": it["id"], "label": it["label"], "candidate": candidate_key(str(it.get("original_text", it["id"])))}
        row.update({s: predictions[s][i] for s in predictions})
        row["p_gold"] = {s: float(p_gold[s][i]) for s in predictions}
        row["correct"] = {s: predictions[s][i] == it["label"] for s in predictions}
        if RECURRENCE_KEY in it:
            row[RECURRENCE_KEY] = int(it[RECURRENCE_KEY])
        rows.append(row)
    return rows


def table_from_rows(rows: Sequence[Mapping], set_name: str) -> ItemTable:
    """An ItemTable from predictions.jsonl rows (rows without p_gold are refused:
    they come from an evaluate run older than the per-item scores)."""
    if not rows:
        raise ValueError(Errors.E334.format(set_name=set_name))
    missing = [r.get("id") for r in rows if "p_gold" not in r or "correct" not in r]
    if missing:
        raise ValueError(Errors.E335.format(set_name=set_name, missing=missing[:3]))
    systems = list(rows[0]["p_gold"])
    return ItemTable(
        systems,
        np.array([set_name] * len(rows), dtype=object),
        np.array([r.get("candidate", r["id"]) for r in rows], dtype=object),
        {s: np.array([bool(r["correct"][s]) for r in rows]) for s in systems},
        {s: np.array([float(r["p_gold"][s]) for r in rows]) for s in systems},
        np.array([int(r[RECURRENCE_KEY]) for r in rows]) if all(RECURRENCE_KEY in r for r in rows) else None,
    )


def read_prediction_rows(path: Union[str, Path]) -> List[dict]:
    """The rows of a predictions.jsonl (a named error for a missing file)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(Errors.E336.format(path=path))
    with open(path, encoding="utf8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_predictions(path: Union[str, Path], set_name: Optional[str] = None) -> ItemTable:
    return table_from_rows(read_prediction_rows(path), set_name or Path(path).parent.name)


def _units(clusters: np.ndarray, strata: Optional[np.ndarray]):
    """Cluster index per item, items per cluster, and one stratum per cluster."""
    keys, inverse = np.unique(clusters.astype(str), return_inverse=True)
    sizes = np.bincount(inverse, minlength=len(keys)).astype(float)
    if strata is None:
        return inverse, sizes, None
    unit_strata = np.empty(len(keys), dtype=object)
    unit_strata[inverse] = strata
    assert np.all(unit_strata[inverse] == strata), "a cluster of items spans two strata"
    return inverse, sizes, unit_strata


def compare_to_baseline(
    table: ItemTable,
    baseline: str = BASELINE,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    strata: Optional[Sequence] = None,
    eps: float = EPS,
) -> Dict[str, dict]:
    """Per system: n, accuracy, mean log p(gold), and vs the baseline the McNemar
    test and paired cluster-bootstrap CIs of the accuracy and log-prob differences.

    All systems' CIs come from the same resamples (one call, 2k statistics).
    """
    if baseline not in table.systems:
        raise ValueError(Errors.E338.format(baseline=baseline, systems=table.systems))
    n = len(table)
    assert n, "no items to compare"
    logp = {s: gold_log_prob(table.p_gold[s], eps) for s in table.systems}
    others = [s for s in table.systems if s != baseline]
    out: Dict[str, dict] = {}
    for s in table.systems:
        out[s] = {"n": n, "accuracy": float(table.correct[s].mean()), "mean_log_prob": float(logp[s].mean())}
    if not others:
        return out
    inverse, sizes, unit_strata = _units(table.clusters, None if strata is None else np.asarray(strata, dtype=object))
    diffs = np.stack(
        [table.correct[s].astype(float) - table.correct[baseline] for s in others]
        + [logp[s] - logp[baseline] for s in others],
        axis=1,
    )
    sums = np.zeros((len(sizes), diffs.shape[1]))
    np.add.at(sums, inverse, diffs)
    cis = paired_bootstrap(ratio_of_sums(sums, sizes), len(sizes), n_resamples, seed, unit_strata)
    k = len(others)
    for j, s in enumerate(others):
        test = mcnemar_exact(table.correct[s], table.correct[baseline])
        out[s].update(
            accuracy_diff=cis[j].to_dict(),
            log_prob_diff=cis[k + j].to_dict(),
            mcnemar={"only_a": test.only_a, "only_b": test.only_b, "p_value": test.p_value},
            clusters=len(sizes),
        )
    return out


__all__ = [
    "EPS",
    "RECURRENCE_KEY",
    "ItemTable",
    "candidate_key",
    "compare_to_baseline",
    "gold_log_prob",
    "prediction_rows",
    "read_prediction_rows",
    "read_predictions",
    "table_from_rows",
]
