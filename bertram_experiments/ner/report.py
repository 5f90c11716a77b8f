"""The NER evaluation's markdown report and its plot (F1 by entity-rarity bucket per system).

Figures are percentages with one decimal; a ΔF1 whose 95% CI excludes 0 is
starred. matplotlib is imported only when the plot is drawn.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from spacy_bertram.project_support import PathLike, atomic_path
from ..outputs import PLOT_FILE, REPORT_FILE
from ..plots import pyplot, save_png
from ..tables import format_ci, markdown_table, percent
from .scores import BUCKETS

LABELS = {
    "stock": "stock",
    "bertram": "trained with bertram",
    "bertram_test_time": "bertram at test time only",
    "bertram_without": "trained with bertram, run without it",
}


def pct(value: Optional[float]) -> str:
    return percent(value, absent="–")


def delta(ci: Optional[Mapping]) -> str:
    """'+1.2 [-0.5, +2.9]' in points, starred when the CI excludes 0."""
    return format_ci(ci, 100, 1, star=True)


def main_table(summary: Mapping) -> List[str]:
    """One row per system: overall P/R/F1 and ΔF1, rare-token entities' F1 and ΔF1, the others' F1."""
    systems: Mapping = summary["systems"]
    first = next(iter(systems.values()))["subsets"]
    header = (
        "system",
        "P",
        "R",
        f"F1 (n={first['all']['n_gold']})",
        "ΔF1 vs stock [95% CI]",
        f"F1 rare-token entities (n={first['rare']['n_gold']})",
        "ΔF1 rare [95% CI]",
        f"F1 other (n={first['other']['n_gold']})",
    )
    rows = []
    for name, scores in systems.items():
        sub, cis = scores["subsets"], summary["delta_f1"].get(name, {})
        rows.append(
            [
                LABELS.get(name, name),
                pct(sub["all"]["p"]),
                pct(sub["all"]["r"]),
                pct(sub["all"]["f"]),
                delta(cis.get("all")),
                pct(sub["rare"]["f"]),
                delta(cis.get("rare")),
                pct(sub["other"]["f"]),
            ]
        )
    return markdown_table(header, rows)


def type_table(summary: Mapping) -> List[str]:
    systems: Mapping = summary["systems"]
    types = next(iter(systems.values()))["types"]
    return markdown_table(
        ("type", "n", *(f"{LABELS.get(s, s)} P / R / F1" for s in systems)),
        (
            [
                label,
                types[label]["n_gold"],
                *(" / ".join(pct(systems[s]["types"][label][k]) for k in ("p", "r", "f")) for s in systems),
            ]
            for label in types
        ),
    )


def fold_table(metrics: Mapping) -> List[str]:
    systems = metrics["systems"]
    rows = []
    for i, fold in enumerate(metrics["per_fold"]):
        scores = fold["systems"]
        n = next(iter(scores.values()))["subsets"]["all"]["n_gold"]
        cis = fold["delta_f1"].get("bertram", {})
        rows.append(
            [
                i,
                fold["texts"],
                n,
                *(pct(scores[s]["subsets"]["all"]["f"]) for s in systems),
                delta(cis.get("all")),
                delta(cis.get("rare")),
            ]
        )
    header = (
        "fold",
        "texts",
        "entities",
        *(f"F1 {LABELS.get(s, s)}" for s in systems),
        "ΔF1 trained with bertram",
        "ΔF1 rare, trained with bertram",
    )
    return markdown_table(header, rows, text_columns=0)


def bucket_table(pooled: Mapping) -> List[str]:
    systems = pooled["systems"]
    first = next(iter(systems.values()))
    return markdown_table(
        ("bucket", "n", *(LABELS.get(s, s) for s in systems)),
        (
            [bucket, first["buckets"][bucket]["n_gold"], *(pct(s["buckets"][bucket]["f"]) for s in systems.values())]
            for bucket in BUCKETS
        ),
    )


def write_report(metrics: Mapping, path: PathLike, train_summary: Optional[PathLike] = None) -> Path:
    """report.md: the pooled table, by bucket, per type, per fold, the plot and the times."""
    pooled = metrics["pooled"]
    times = dict(metrics.get("seconds", {}))
    if train_summary and Path(train_summary).is_file():
        times["train"] = json.loads(Path(train_summary).read_text(encoding="utf8")).get("seconds")
    lines = [
        "## Named entities: stock vs bertram, cross-validated",
        "",
        f"Data: {metrics.get('source')}; {metrics['folds']} folds by text (seed {metrics.get('seed')}), "
        f"every text tested once; {pooled['texts']} texts, {pooled['rare_tokens']} tokens the bertram "
        "component calls rare. Entity-level exact match. ΔF1 in points against stock, paired bootstrap "
        f"({metrics['bootstrap_resamples']} resamples of texts, within folds); * = the CI excludes 0.",
        "",
        "### Pooled over folds",
        "",
        *main_table(pooled),
        "",
        "### F1 by entity rarity (rare tokens per entity)",
        "",
        *bucket_table(pooled),
        "",
        f"![F1 by entity rarity]({PLOT_FILE})",
        "",
        "### Per type (pooled)",
        "",
        *type_table(pooled),
        "",
        "### Per fold",
        "",
        *fold_table(metrics),
        "",
        "Seconds: " + ", ".join(f"{k} {v}" for k, v in times.items()),
        "",
    ]
    with atomic_path(path, overwrite=True) as tmp:
        Path(tmp).write_text("\n".join(lines), encoding="utf8")
    return Path(path)


def plot_f1_by_rarity(metrics: Mapping, path: PathLike) -> Path:
    """Grouped bars: F1 per rarity bucket (x) for each system, pooled over folds."""
    plt = pyplot()

    systems: Dict[str, Mapping] = metrics["pooled"]["systems"]
    first = next(iter(systems.values()))["buckets"]
    width = 0.8 / len(systems)
    fig, ax = plt.subplots(figsize=(7, 4))
    for j, (name, scores) in enumerate(systems.items()):
        values = [
            100 * (scores["buckets"][b]["f"] if not math.isnan(scores["buckets"][b]["f"]) else 0) for b in BUCKETS
        ]
        ax.bar(
            [i + (j - (len(systems) - 1) / 2) * width for i in range(len(BUCKETS))],
            values,
            width,
            label=LABELS.get(name, name),
        )
    ax.set_xticks(range(len(BUCKETS)), [f"{b}\n(n={first[b]['n_gold']})" for b in BUCKETS])
    ax.set_ylabel("entity F1 (%)")
    ax.set_title("NER F1 by entity rarity (tokens the bertram component calls rare)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_png(fig, path, dpi=120)


__all__ = ["LABELS", "PLOT_FILE", "REPORT_FILE", "plot_f1_by_rarity", "write_report"]
