"""Two label curves on the same folds, subsets and seeds, paired run by run and text by text.

Two curves that differ in one setting (the context store, say) are each read against their own
stock runs; their two Δs overlap long before the settings are the same. Here each system's score
of one curve is set against the same system's score of the other on the same runs (fold, draw,
size, seed) and test texts, with `bootstrap.runs_bootstrap`'s two intervals, as a curve's own
points are (`summary.summarise_point`): after - before, per size and subset. The stock runs of two
curves trained with the same settings are the same runs, so their difference is 0: a check that
the curves are comparable, shown beside the with-bertram one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from spacy_bertram.project_support import PathLike
from ..bootstrap import DEFAULT_RESAMPLES
from ..errors import Errors
from ..ner.predict import read_rows
from .runs import PREDICTIONS_FILE, RUN_FILE, SYSTEMS, Unit
from .summary import CURVE_SUBSETS, MEASURES, aligned_runs, paired_counts_difference, run_counts

UnitKey = Tuple[int, int, int, int]
#: How a label-curve training directory lays out its runs (`Unit.directory`).
RUN_GLOB = f"fold-*/draw-*/n-*/seed-*/{RUN_FILE}"


def is_curve_runs(path: PathLike) -> bool:
    """A `label-curve` training directory: finished runs under fold-*/draw-*/n-*/seed-*."""
    return Path(path).is_dir() and any(Path(path).glob(RUN_GLOB))


def read_curve_runs(directory: PathLike) -> Tuple[str, Dict[UnitKey, dict], Dict[UnitKey, List[Mapping]]]:
    """The task, each finished run's record and its predicted rows, by (fold, draw, size, seed)."""
    records: Dict[UnitKey, dict] = {}
    rows: Dict[UnitKey, List[Mapping]] = {}
    tasks = set()
    for path in sorted(Path(directory).glob(RUN_GLOB)):
        record = json.loads(path.read_text(encoding="utf8"))
        unit = Unit(record["fold"], record["draw"], record["size"], record["seed"])
        predictions = unit.directory(Path(directory)) / PREDICTIONS_FILE
        if not predictions.is_file():
            continue
        key = (unit.fold, unit.draw, unit.size, unit.seed)
        records[key], rows[key] = record, read_rows([predictions])
        tasks.add(record["identity"]["task"])
    if len(tasks) != 1:
        raise ValueError(Errors.E433.format(path=directory, tasks=", ".join(sorted(tasks)) or "none"))
    return tasks.pop(), records, rows


def compare_curve_runs(
    before: PathLike, after: PathLike, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Dict[str, Any]:
    """Per size, subset and system: after - before in the curve's measure, on the runs and texts both have."""
    task, first_records, first_rows = read_curve_runs(before)
    other_task, _, second_rows = read_curve_runs(after)
    if other_task != task:
        raise ValueError(Errors.E429.format(kinds=f"a {task} curve and a {other_task} curve"))
    shared = sorted(first_rows.keys() & second_rows.keys())
    for key in shared:
        if [row["id"] for row in first_rows[key]] != [row["id"] for row in second_rows[key]]:
            raise ValueError(Errors.E434.format(before=before, after=after, unit=key))
    if not shared:
        raise ValueError(Errors.E430.format(before=before, after=after))
    measure = MEASURES[task][3]
    by_size: Dict[int, List[UnitKey]] = defaultdict(list)
    for key in shared:
        by_size[key[2]].append(key)
    points, left_out = [], []
    for size in sorted(by_size):
        per_fold = defaultdict(int)
        for key in by_size[size]:
            per_fold[key[0]] += 1
        if len(set(per_fold.values())) > 1:  # a curve still running: its folds are not paired run for run yet
            left_out.append(size)
            continue
        records = [first_records[key] for key in by_size[size]]
        texts, n_runs = aligned_runs(records, first_rows)
        later, _ = aligned_runs(records, second_rows)
        folds = [text["fold"] for text in texts]
        point: Dict[str, Any] = {"size": size, "runs": len(records), "texts": len(texts)}
        for subset in CURVE_SUBSETS:
            cell = {}
            for system in SYSTEMS:
                first, second = (run_counts(task, side, n_runs, system, subset) for side in (texts, later))
                score_before, score_after, n, delta = paired_counts_difference(
                    task, first, second, folds, n_resamples, seed
                )
                cell[system] = {"before": score_before, "after": score_after, "n": n, "delta": delta}
            point[subset] = cell
        points.append(point)
    return {
        "kind": "label-curve",
        "task": task,
        "measure": measure,
        "before": str(before),
        "after": str(after),
        "runs_before": len(first_rows),
        "runs_after": len(second_rows),
        "runs_shared": len(shared),
        "points": points,
        "sizes_left_out": left_out,
        "n_resamples": n_resamples,
        "seed": seed,
    }


__all__ = ["compare_curve_runs", "is_curve_runs", "read_curve_runs"]
