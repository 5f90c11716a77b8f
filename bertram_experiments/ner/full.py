"""The `ner-full` evaluation: frozen and fine-tuned embeddings, several seeds, the learning curve.

Reads the runs `ner-train` wrote under TRAINING_ROOT/VARIANT/seed-S (VARIANT is
`frozen`, the embedding layer frozen as in the quick `ner` workflow, or `tuned`,
fine-tuned with the rest of the encoder as spaCy does by default) and writes
into OUT:

- VARIANT/seed-S/fold-I.jsonl: every system's predictions (see `predict`), and
  VARIANT/seed-S/step-N/fold-I.jsonl at each checkpoint of a run trained with
  `--checkpoints` (the learning curve: stock and trained with bertram; its last
  point is the run's model-best, the pipeline the table scores);
- metrics.json: per variant, each system's P/R/F1 pooled over folds and seeds,
  ΔF1 against stock overall and on rare-token entities with the two intervals
  of `seeds` (texts; texts and seeds) and the per-seed ΔF1, per type; the curve's
  points; the listener's gradient at rare tokens (`attribution`, first seed, fold 0);
  the embedding drift and the training seconds of every run;
- report.md and learning_curve.png (`full_report`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import Dict, List, Mapping, Sequence

from spacy.tokens import DocBin

from ..errors import Errors
from spacy_bertram import VectorCache
from spacy_bertram.project_support import PathLike, check_output_dir, mark_json, use_device, write_json_atomic
from ..outputs import METRICS_FILE, NER_FULL_OUTPUTS, TRAIN_SUMMARY
from .compare import DEFAULT_RESAMPLES, compare_to_stock
from .attribution import rare_token_gradients
from .folds import fold_dir, read_folds
from .full_report import write_full_report
from .predict import predict_folds, read_rows
from .scores import score_system
from .seeds import pooled_rows, seeded_delta_f1
from .systems import BERTRAM, STOCK, SYSTEMS, load_systems

logger = logging.getLogger("spacy_bertram")

#: Training variants, as directory names under the training root.
VARIANTS = ("frozen", "tuned")
CURVE_SYSTEMS = (STOCK, BERTRAM)
SEED_DIR = re.compile(r"^seed-(\d+)$")
#: Test texts of fold 0 whose listener gradients are measured (per variant, its first seed).
GRADIENT_TEXTS = 300


def seed_dir(root: PathLike, variant: str, seed: int) -> Path:
    return Path(root) / variant / f"seed-{int(seed)}"


def find_runs(training_root: PathLike) -> Dict[str, Dict[int, Path]]:
    """{variant: {seed: run directory}} of every finished `ner-train` run under the root."""
    runs: Dict[str, Dict[int, Path]] = {}
    for variant in VARIANTS:
        base = Path(training_root) / variant
        found = (
            {
                int(m.group(1)): d
                for d in sorted(base.glob("seed-*"))
                if (m := SEED_DIR.match(d.name)) and (d / TRAIN_SUMMARY).is_file()
            }
            if base.is_dir()
            else {}
        )
        if found:
            runs[variant] = dict(sorted(found.items()))
    if not runs:
        raise ValueError(Errors.E419.format(path=str(training_root)))
    return runs


def train_summary(run: Path) -> Mapping:
    return json.loads((run / TRAIN_SUMMARY).read_text(encoding="utf8"))


def summarise_seeds(
    runs: Sequence[Sequence[Mapping]], systems: Sequence[str], n_resamples: int, seed: int
) -> Dict[str, object]:
    """Scores pooled over folds and seeds, and the seeded ΔF1 intervals."""
    pooled = pooled_rows(runs)
    types = sorted({s[2] for row in runs[0] for s in row["gold"]})
    return {
        "texts": len(runs[0]),
        "seeds": len(runs),
        "rare_tokens": sum(len(row["rare"]) for row in runs[0]),
        "systems": {s: score_system(pooled, s, types) for s in systems},
        "delta_f1": seeded_delta_f1(runs, systems, STOCK, n_resamples=n_resamples, seed=seed),
    }


def curve_points(
    folds_dir: PathLike,
    run: Path,
    out: Path,
    steps: Sequence[int],
    max_steps: int,
    final_rows: Sequence[Mapping],
    n_resamples: int,
    seed: int,
    caches: Dict[str, VectorCache],
) -> List[Dict[str, object]]:
    """F1 of stock and trained-with-bertram at each checkpoint, then the run's model-best (its predictions
    `final_rows`, the run's last step as its x), with ΔF1 CIs (texts)."""
    points = []
    for step in [*steps, max_steps]:
        if step == max_steps:
            rows = final_rows
        else:
            rows = read_rows(
                predict_folds(
                    folds_dir, run, out / f"step-{step}", checkpoint=step, systems=CURVE_SYSTEMS, caches=caches
                )
            )
        scores = {s: score_system(rows, s, types=()) for s in CURVE_SYSTEMS}
        points.append(
            {
                "step": step,
                "model": "model-best" if step == max_steps else f"checkpoint at step {step}",
                "f1": {s: {sub: scores[s]["subsets"][sub]["f"] for sub in ("all", "rare")} for s in CURVE_SYSTEMS},
                "delta_f1": compare_to_stock(
                    rows, CURVE_SYSTEMS, STOCK, n_resamples=n_resamples, seed=seed, strata=[row["fold"] for row in rows]
                )[BERTRAM],
            }
        )
    return points


def listener_gradients(folds_dir: PathLike, run: Path, max_texts: int) -> Dict[str, object]:
    """The listener's gradient at rare tokens against the others (`attribution`), stock and trained with
    bertram, on fold 0's first `max_texts` test texts."""
    pipelines = load_systems(run, 0, systems=CURVE_SYSTEMS)
    gold = list(DocBin().from_disk(fold_dir(folds_dir, 0) / "test.spacy").get_docs(pipelines[STOCK].vocab))
    gold = gold[:max_texts]
    component = pipelines[BERTRAM].get_pipe("bertram")
    rare = [component.rare_tokens(doc) for doc in gold]
    return {"fold": 0, "texts": len(gold), "systems": rare_token_gradients(pipelines, gold, rare)}


def evaluate_full(
    folds_dir: PathLike,
    training_root: PathLike,
    output_dir: PathLike,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    gpu_id: int = -1,
    force: bool = False,
) -> Dict[str, object]:
    """Predict every variant, seed and checkpoint, pool, bootstrap, write metrics.json, report.md and the plot."""
    check_output_dir(output_dir, NER_FULL_OUTPUTS, command="ner-full-evaluate", force=force, marked=[METRICS_FILE])
    use_device(gpu_id)
    start = time.time()
    info = read_folds(folds_dir)
    out = Path(output_dir)
    variants: Dict[str, object] = {}
    caches: Dict[str, VectorCache] = {}  # one vector cache per BERTRAM model for every run and checkpoint
    for variant, runs in find_runs(training_root).items():
        per_seed, curve, gradients, trainings, first_settings = [], None, None, [], None
        for run_seed, run in runs.items():
            summary = train_summary(run)
            if summary["folds"] != info["folds"]:
                raise ValueError(
                    Errors.E420.format(variant=variant, seed=run_seed, got=summary["folds"], expected=info["folds"])
                )
            target = seed_dir(out, variant, run_seed)
            logger.info("%s seed %d: predicting %d folds", variant, run_seed, info["folds"])
            per_seed.append(read_rows(predict_folds(folds_dir, run, target, caches=caches)))
            settings = summary["settings"]
            first_settings = first_settings or settings
            trainings.append({"seed": run_seed, "seconds": summary["seconds"], "runs": summary["runs"]})
            if gradients is None:
                gradients = listener_gradients(folds_dir, run, GRADIENT_TEXTS)
            if settings.get("checkpoints") and curve is None:
                curve = {
                    "seed": run_seed,
                    "points": curve_points(
                        folds_dir,
                        run,
                        target,
                        settings["checkpoints"],
                        settings["max_steps"],
                        per_seed[-1],
                        n_resamples,
                        seed,
                        caches,
                    ),
                }
        variants[variant] = {
            **summarise_seeds(per_seed, SYSTEMS, n_resamples, seed),
            "seed_list": list(runs),
            "settings": first_settings,
            "curve": curve,
            "listener_gradient": gradients,
            "trainings": trainings,
        }
    metrics: Dict[str, object] = {
        "source": info.get("source"),
        "folds": info["folds"],
        "fold_seed": info.get("seed"),
        "bootstrap_resamples": n_resamples,
        "systems": list(SYSTEMS),
        "variants": variants,
        "seconds": {
            "evaluate": round(time.time() - start, 1),
            "train": round(sum(t["seconds"] for v in variants.values() for t in v["trainings"]), 1),
        },  # type: ignore[index, union-attr]
    }
    write_full_report(metrics, out)
    write_json_atomic(out / METRICS_FILE, mark_json(metrics, "ner-full-evaluate"), overwrite=True)
    return metrics


__all__ = ["CURVE_SYSTEMS", "VARIANTS", "curve_points", "evaluate_full", "find_runs", "seed_dir", "summarise_seeds"]
