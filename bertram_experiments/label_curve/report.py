"""A curve's table and plot, and the markdown that puts every task's curve side by side."""

from __future__ import annotations

from pathlib import Path
from typing import List, Mapping, Optional, Sequence

from ..plots import pyplot, save_png
from ..tables import format_ci, markdown_table, percent

SUBSET_TITLES = {"all": "all test items", "rare": "items with a rare token"}
CURVE_FILE, CURVE_MD, CURVE_PNG = "curve.json", "curve.md", "curve.png"
#: label-curve-report's figure: every curve, one panel each
CURVES_PNG = "curves.png"


def ratio(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.2f}x"


def curve_table(curve: Mapping) -> List[str]:
    """One row per point: scores, Δ [95% CI over test texts and runs] in points, and the cost ratios."""
    measure = curve["measure"]
    rows = []
    for point in curve["points"]:
        cells = [point["size"], point["runs"]]
        for subset in ("all", "rare"):
            figures = point[subset]
            cells += [
                f"{percent(figures['stock'])} / {percent(figures['bertram'])}",
                figures["n"],
                format_ci(figures["delta"]["texts_and_seeds"], scale=100, digits=1, star=True),
            ]
        cost = point["cost"]
        cells += [ratio(cost["train_ratio"]), ratio(cost["predict_ratio"]), ratio(cost.get("cold_predict_ratio"))]
        rows.append(cells)
    header = [
        "labelled texts",
        "runs",
        f"{measure} stock / bertram",
        "n",
        "Δ [95% CI]",
        f"{measure}, rare: stock / bertram",
        "n rare",
        "Δ rare [95% CI]",
        "train time",
        "predict time",
        "predict, cold cache",
    ]
    return markdown_table(header, rows, text_columns=0)


def curve_markdown(curve: Mapping) -> List[str]:
    lines = [f"### {curve['name']} ({curve['task']})", ""]
    lines += curve_table(curve)
    lines += [
        "",
        f"Runs per point: {curve['folds']} fold(s) x {curve['draws']} draw(s) x {len(curve['seeds'])} "
        f"seed(s); n: {curve['unit']} per run; Δ in points, 95% CI over test texts and runs "
        "(* = excludes 0); time: with bertram over stock, summed over the runs; prediction with the vector "
        "cache the runs share warm, and from a cold cache (the first run over a fold's test texts).",
        "",
    ]
    return lines


def draw_curve(ax, curve: Mapping) -> None:
    """The gain against labelled texts (log scale), with its CI band, overall and on the rare subset."""
    sizes = [p["size"] for p in curve["points"]]
    for subset, style in (("all", "-"), ("rare", "--")):
        cis = [p[subset]["delta"]["texts_and_seeds"] for p in curve["points"]]
        ax.plot(sizes, [100 * c["estimate"] for c in cis], style, marker="o", label=SUBSET_TITLES[subset])
        ax.fill_between(sizes, [100 * c["low"] for c in cis], [100 * c["high"] for c in cis], alpha=0.2)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("labelled training texts")
    ax.set_ylabel(f"Δ {curve['measure']} (points)")
    ax.set_title(f"{curve['name']}: with bertram − stock, 95% CI")
    ax.legend(fontsize=8)


def plot_curve(curve: Mapping, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    draw_curve(ax, curve)
    fig.tight_layout()
    return save_png(fig, path, dpi=120)


def plot_curves(curves: Sequence[Mapping], path: Path) -> Path:
    """Every task's curve, one panel each, side by side (the README's figure)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(curves), figsize=(4.5 * len(curves), 3.8), squeeze=False)
    for ax, curve in zip(axes[0], curves):
        draw_curve(ax, curve)
    fig.tight_layout()
    return save_png(fig, path, dpi=110)


def combined_markdown(curves: Sequence[Mapping]) -> List[str]:
    lines = ["## Learning curves over labelled data (real text)", "", f"![every curve]({CURVES_PNG})", ""]
    for curve in curves:
        lines += curve_markdown(curve)
        lines += [f"![{curve['name']}]({curve['name']}.png)", ""]
    return lines


__all__ = [
    "CURVES_PNG",
    "CURVE_FILE",
    "CURVE_MD",
    "CURVE_PNG",
    "combined_markdown",
    "curve_markdown",
    "curve_table",
    "plot_curve",
    "plot_curves",
]
