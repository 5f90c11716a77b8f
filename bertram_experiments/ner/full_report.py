"""The `ner-full` report (report.md) and its learning-curve plot.

Tables per training variant (frozen / fine-tuned embeddings): every system's F1
pooled over folds and seeds with ΔF1 against stock and its two intervals (texts;
texts and seeds) and the per-seed ΔF1; the per-type gain; the curve's points;
the embedding drift; the cost benchmark's figures when benchmarks/ner.py wrote
them beside the report.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import List, Mapping

from spacy_bertram.project_support import atomic_path
from ..outputs import NER_COST_FILE, NER_CURVE_PLOT, REPORT_FILE
from ..plots import pyplot, save_png
from ..tables import markdown_table
from .report import LABELS, delta, pct
from .systems import BERTRAM, STOCK

VARIANT_LABELS = {"frozen": "embeddings frozen", "tuned": "embeddings fine-tuned (spaCy's default)"}
SUBSET_LABELS = {"all": "all entities", "rare": "rare-token entities"}


def seeds_text(per_seed: List[float]) -> str:
    return ", ".join(f"{100 * v:+.1f}" for v in per_seed)


def variant_table(summary: Mapping) -> List[str]:
    """One row per system and subset: F1, ΔF1 with both intervals, the per-seed ΔF1."""
    systems = summary["systems"]
    rows = []
    for name, scores in systems.items():
        for subset in ("all", "rare"):
            sub = scores["subsets"][subset]
            ci = summary["delta_f1"].get(name, {}).get(subset)
            rows.append(
                [
                    LABELS.get(name, name),
                    f"{SUBSET_LABELS[subset]} (n={sub['n_gold']})",
                    pct(sub["f"]),
                    delta(ci and ci["texts"]),
                    delta(ci and ci["texts_and_seeds"]),
                    seeds_text(ci["per_seed"]) if ci else "",
                ]
            )
    return markdown_table(
        ("system", "entities", "F1", "ΔF1 [95% CI: texts]", "ΔF1 [95% CI: texts and seeds]", "ΔF1 per seed"), rows
    )


def type_gain_table(summary: Mapping) -> List[str]:
    """Per entity type: n, stock F1, trained-with-bertram F1 and the difference (pooled over folds and seeds)."""
    stock, bertram = summary["systems"][STOCK]["types"], summary["systems"][BERTRAM]["types"]
    rows = []
    for label in sorted(stock, key=lambda t: -stock[t]["n_gold"]):
        a, b = stock[label]["f"], bertram[label]["f"]
        gain = "–" if math.isnan(a) or math.isnan(b) else f"{100 * (b - a):+.1f}"
        rows.append([label, stock[label]["n_gold"] // max(1, summary["seeds"]), pct(a), pct(b), gain])
    return markdown_table(("type", "n", "F1 stock", "F1 trained with bertram", "difference"), rows)


def curve_table(curve: Mapping) -> List[str]:
    rows = []
    for point in curve["points"]:
        f1 = point["f1"]
        rows.append(
            [
                point["step"],
                pct(f1[STOCK]["all"]),
                pct(f1[BERTRAM]["all"]),
                delta(point["delta_f1"]["all"]),
                pct(f1[STOCK]["rare"]),
                pct(f1[BERTRAM]["rare"]),
                delta(point["delta_f1"]["rare"]),
            ]
        )
    return markdown_table(
        ("step", "F1 stock", "F1 bertram", "ΔF1 [95% CI]", "F1 rare stock", "F1 rare bertram", "ΔF1 rare [95% CI]"),
        rows,
        text_columns=0,
    )


def gradient_table(gradients: Mapping) -> List[str]:
    """The listener's gradient at rare tokens against the others, per system (`attribution`)."""
    rows = []
    for name, g in gradients["systems"].items():
        token_share = g["n_rare"] / max(1, g["n_rare"] + g["n_other"])
        rows.append(
            [
                LABELS.get(name, name),
                f"{g['rare']:.4f}",
                f"{g['other']:.4f}",
                f"{g['ratio']:.2f}",
                f"{100 * g['rare_share_of_gradient']:.1f}%",
                f"{100 * token_share:.1f}%",
            ]
        )
    return markdown_table(
        (
            "system",
            "mean norm at rare tokens",
            "at other tokens",
            "ratio",
            "rare tokens' share of the gradient",
            "rare tokens' share of the tokens",
        ),
        rows,
    )


def drift_line(summary: Mapping) -> str:
    drifts = [
        r["embedding_drift"] for t in summary["trainings"] for r in t["runs"] if r.get("embedding_drift") is not None
    ]
    if not drifts:
        return "Embedding drift: not measured."
    return (
        f"Largest absolute change of an embedding weight against the pretrained encoder: "
        f"{min(drifts):.4f} to {max(drifts):.4f} over {len(drifts)} runs."
    )


def cost_lines(out: Path) -> List[str]:
    path = out / NER_COST_FILE
    if not path.is_file():
        return ["Not measured (benchmarks/ner.py --output " + str(path) + " writes it)."]
    cost = json.loads(path.read_text(encoding="utf8"))
    return [
        f"On {cost['texts']} test tweets ({cost['words']} tokens): stock {cost['words_per_s']['stock']} words/s, "
        f"with bertram cold {cost['words_per_s']['cold']} ({cost['cold_over_stock']}x stock's time), warm "
        f"{cost['words_per_s']['warm']} ({cost['warm_over_stock']}x); {cost['ms_per_rare_word']} ms per inferred "
        f"rare word; {100 * cost['texts_with_rare_share']:.1f}% of the tweets have a rare token, "
        f"{100 * cost['rare_share']:.1f}% of the tokens are rare ({cost['device']})."
    ]


def write_full_report(metrics: Mapping, out: Path) -> Path:
    """report.md and learning_curve.png in `out`."""
    lines = [
        "## Named entities at convergence: frozen and fine-tuned embeddings, several seeds",
        "",
        f"Data: {metrics.get('source')}; {metrics['folds']} folds by text (seed {metrics.get('fold_seed')}), every "
        "text tested once per training seed. Entity-level exact match; F1 pooled over folds and seeds (counts "
        "summed). ΔF1 in points against stock, paired bootstrap with "
        f"{metrics['bootstrap_resamples']} resamples: 'texts' draws texts within folds, 'texts and seeds' draws the "
        "training seeds of each fold too; * = the CI excludes 0.",
        "",
    ]
    curves = {}
    for variant, summary in metrics["variants"].items():
        settings = summary["settings"]
        lines += [
            f"### {VARIANT_LABELS.get(variant, variant)}",
            "",
            f"Seeds {', '.join(map(str, summary['seed_list']))}; {settings['max_steps']} steps of "
            f"{settings['batch_size']} padded words, learning rate {settings['learn_rate']}, model-best by "
            f"dev F1 (evaluated every {settings['eval_frequency']} steps). {summary['texts']} texts, "
            f"{summary['rare_tokens']} tokens the bertram component calls rare.",
            "",
            *variant_table(summary),
            "",
            "Per type (trained with bertram against stock):",
            "",
            *type_gain_table(summary),
            "",
            drift_line(summary),
            "",
        ]
        if summary.get("listener_gradient"):
            g = summary["listener_gradient"]
            lines += [
                f"The NER listener's gradient (its loss with respect to each token's transformer vector; "
                f"seed {summary['seed_list'][0]}, the first {g['texts']} test texts of fold {g['fold']}, "
                "gold entities, no update):",
                "",
                *gradient_table(g),
                "",
            ]
        if summary.get("curve"):
            curves[variant] = summary["curve"]
            lines += [
                f"Learning curve (seed {summary['curve']['seed']}; the pipelines saved at the first steps, "
                "then model-best, the table's pipeline, at the run's last step; ΔF1 CI over texts):",
                "",
                *curve_table(summary["curve"]),
                "",
            ]
    if curves:
        plot_learning_curves(curves, out / NER_CURVE_PLOT)
        lines += [f"![F1 against training steps]({NER_CURVE_PLOT})", ""]
    lines += [
        "### Cost",
        "",
        *cost_lines(out),
        "",
        "Seconds: " + ", ".join(f"{k} {v}" for k, v in metrics.get("seconds", {}).items()),
        "",
    ]
    path = out / REPORT_FILE
    with atomic_path(path, overwrite=True) as tmp:
        Path(tmp).write_text("\n".join(lines), encoding="utf8")
    return path


def plot_learning_curves(curves: Mapping[str, Mapping], path: Path) -> Path:
    """F1 against steps, all entities and rare-token entities, stock and bertram per variant."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for ax, subset in zip(axes, ("all", "rare")):
        for variant, curve in curves.items():
            steps = [p["step"] for p in curve["points"]]
            for system, style in ((STOCK, "--"), (BERTRAM, "-")):
                ax.plot(
                    steps,
                    [100 * p["f1"][system][subset] for p in curve["points"]],
                    style,
                    marker="o",
                    label=f"{LABELS[system]}, {variant}",
                )
        ax.set_title(f"F1, {SUBSET_LABELS[subset]}")
        ax.set_xlabel("training steps")
        ax.set_xscale("log")
    axes[0].set_ylabel("entity F1 (%)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    return save_png(fig, path, dpi=120)


__all__ = ["plot_learning_curves", "write_full_report"]
