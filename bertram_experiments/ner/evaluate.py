"""The NER evaluation of a project run: predictions, scores per fold and pooled, CIs, outputs.

Writes into OUT: fold-I.jsonl (the predictions, see `predict`), metrics.json
(per fold and pooled: P/R/F1 per system overall, per type, on rare-token
entities and the others, by bucket; ΔF1 CIs against stock overall and on
rare-token entities), report.md and f1_by_rarity.png (see `report`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Dict, List, Mapping, Sequence

from spacy_bertram.project_support import PathLike, check_output_dir, mark_json, use_device, write_json_atomic
from ..outputs import METRICS_FILE, NER_EVALUATE_OUTPUTS
from .compare import DEFAULT_RESAMPLES, compare_to_stock
from .folds import read_folds
from .predict import predict_folds, read_rows
from .report import PLOT_FILE, REPORT_FILE, plot_f1_by_rarity, write_report
from .scores import score_system
from .systems import STOCK, SYSTEMS

logger = logging.getLogger("spacy_bertram")


def summarise(
    rows: Sequence[Mapping], systems: Sequence[str], n_resamples: int, seed: int, stratify: bool
) -> Dict[str, object]:
    """Scores and CIs of one set of rows (one fold, or all folds pooled)."""
    types = sorted({s[2] for row in rows for s in row["gold"]})
    strata = [row["fold"] for row in rows] if stratify else None
    return {
        "texts": len(rows),
        "rare_tokens": sum(len(row["rare"]) for row in rows),
        "systems": {s: score_system(rows, s, types) for s in systems},
        "delta_f1": compare_to_stock(rows, systems, STOCK, n_resamples=n_resamples, seed=seed, strata=strata),
    }


def evaluate_ner(
    folds_dir: PathLike,
    training_dir: PathLike,
    output_dir: PathLike,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    gpu_id: int = -1,
    force: bool = False,
) -> Dict[str, object]:
    """Predict every fold with every system, score, bootstrap, write the outputs."""
    check_output_dir(output_dir, NER_EVALUATE_OUTPUTS, command="ner-evaluate", force=force, marked=[METRICS_FILE])
    use_device(gpu_id)
    start = time.time()
    info = read_folds(folds_dir)
    out = Path(output_dir)
    paths = predict_folds(folds_dir, training_dir, out)
    predicted = time.time() - start
    folds: List[List[Mapping]] = [read_rows([p]) for p in paths]
    pooled = [row for rows in folds for row in rows]
    metrics: Dict[str, object] = {
        "source": info.get("source"),
        "folds": len(folds),
        "seed": info.get("seed"),
        "bootstrap_resamples": n_resamples,
        "systems": list(SYSTEMS),
        "pooled": summarise(pooled, SYSTEMS, n_resamples, seed, stratify=True),
        "per_fold": [summarise(rows, SYSTEMS, n_resamples, seed, stratify=False) for rows in folds],
        "seconds": {"predict": round(predicted, 1)},
    }
    plot_f1_by_rarity(metrics, out / PLOT_FILE)
    metrics["seconds"]["total"] = round(time.time() - start, 1)  # type: ignore[index]
    write_json_atomic(out / METRICS_FILE, mark_json(metrics, "ner-evaluate"), overwrite=True)
    write_report(metrics, out / REPORT_FILE, train_summary=Path(training_dir) / "train.json")
    return metrics


__all__ = ["METRICS_FILE", "evaluate_ner", "summarise"]
