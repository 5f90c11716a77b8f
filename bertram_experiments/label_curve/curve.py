"""One task's learning curve over labelled data, from the data to the table and the plot."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Dict, List, Mapping, Sequence, Tuple

from ..bootstrap import DEFAULT_RESAMPLES
from ..errors import Errors
from ..ner.predict import read_rows
from ..outputs import LABEL_CURVE_OUTPUTS, LABEL_CURVE_REPORT_OUTPUTS, LABEL_CURVE_RUNS
from .data import load_folds
from .report import (
    CURVE_FILE,
    CURVE_MD,
    CURVE_PNG,
    CURVES_PNG,
    combined_markdown,
    curve_markdown,
    plot_curve,
    plot_curves,
)
from .runs import PREDICTIONS_FILE, CurveSettings, Unit, run_curve
from .summary import MEASURES, summarise_curve
from spacy_bertram.project_support import PathLike, check_output_dir, write_bytes_atomic, write_json_atomic

REPORT_MD = "curves.md"
UNIT_NAMES = {"ner": "gold entities", "textcat": "test texts"}


def label_curve(
    name: str,
    data_dir: PathLike,
    training_dir: PathLike,
    output_dir: PathLike,
    settings: CurveSettings,
    n_resamples: int = DEFAULT_RESAMPLES,
    keep_models: bool = False,
    force: bool = False,
) -> Dict[str, object]:
    """Train every unfinished run, then write OUTPUT/curve.{json,md,png}; returns the curve."""
    check_output_dir(training_dir, LABEL_CURVE_RUNS, command="label-curve", force=force)
    check_output_dir(output_dir, LABEL_CURVE_OUTPUTS, command="label-curve", force=force)
    start = time.time()
    folds = load_folds(settings.task, data_dir)
    records = run_curve(settings, folds, training_dir, keep_models)
    rows_of: Dict[Tuple, List] = {}
    for record in records:
        unit = Unit(record["fold"], record["draw"], record["size"], record["seed"])
        rows_of[unit.fold, unit.draw, unit.size, unit.seed] = read_rows(
            [unit.directory(training_dir) / PREDICTIONS_FILE]
        )
    curve = {
        "name": name,
        "task": settings.task,
        "measure": MEASURES[settings.task][3],
        "unit": UNIT_NAMES[settings.task],
        "folds": len(folds),
        "draws": settings.draws,
        "seeds": list(settings.seeds),
        "pool": min(len(fold.pool) for fold in folds),
        "test_texts": sum(len(fold.test) for fold in folds),
        "settings": asdict(settings),
        "points": summarise_curve(settings.task, records, rows_of, n_resamples),
        "train_seconds": round(sum(sum(r["train_seconds"].values()) for r in records), 1),
        "seconds": round(time.time() - start, 1),
    }
    out = Path(output_dir)
    write_json_atomic(out / CURVE_FILE, curve, overwrite=True)
    write_bytes_atomic(out / CURVE_MD, ("\n".join(curve_markdown(curve)) + "\n").encode("utf8"), overwrite=True)
    plot_curve(curve, out / CURVE_PNG)
    return curve


def read_curve(directory: PathLike) -> Mapping:
    path = Path(directory) / CURVE_FILE
    if not path.is_file():
        raise ValueError(Errors.E427.format(path=directory, file=CURVE_FILE))
    return json.loads(path.read_text(encoding="utf8"))


def curves_report(curve_dirs: Sequence[PathLike], output_dir: PathLike, force: bool = False) -> Path:
    """OUTPUT/curves.md with every curve's table, each plot beside it as NAME.png, and curves.png (all of them)."""
    check_output_dir(output_dir, LABEL_CURVE_REPORT_OUTPUTS, command="label-curve-report", force=force)
    curves = [read_curve(directory) for directory in curve_dirs]
    out = Path(output_dir)
    plot_curves(curves, out / CURVES_PNG)
    for directory, curve in zip(curve_dirs, curves):
        write_bytes_atomic(out / f"{curve['name']}.png", (Path(directory) / CURVE_PNG).read_bytes(), overwrite=True)
    return write_bytes_atomic(
        out / REPORT_MD, ("\n".join(combined_markdown(curves)) + "\n").encode("utf8"), overwrite=True
    )


__all__ = ["curves_report", "label_curve", "read_curve"]
