"""Learning curves: what BERTRAM's vectors gain as its training set changes, one directory per point.

A point is one training run and its measures on real rare words, laid out as
`scripts/learning_curve.sh` (the project's `curve` workflow) writes them:

  POINT/train/metrics.json        `train`'s metrics: training words, multi-piece share, seconds
  POINT/synonyms-rarified.json    `synonym-recovery` on the rarified sets' substitutions
  POINT/synonyms-wordnet.json     `synonym-recovery` on WordNet pairs (one fold of the rare words)
  POINT/intrinsic.json            `intrinsic` on CRW and Card-660

Every measure is the gain over the subword mean (what the stock encoder sees) with its 95% CI, as
each command reports it; a missing file leaves its measures empty rather than failing, so a curve
can be drawn while its last points still run. For the synonym measures each point's difference
to the first point (the reference) gets a paired bootstrap CI of its own, over the same pairs
(clustered by original word), so "more words helped" is a claim with an interval, not a reading
of two overlapping bars. Measures against the number of contexts at inference come from the CRW
systems that read 0, 4, 16 and 32 contexts.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from .errors import Errors
from spacy_bertram.project_support import PathLike, mark_json, text_mark, write_bytes_atomic, write_json_atomic
from .outputs import CURVE_OUTPUTS
from .plots import pyplot, save_png
from .tables import format_ci, markdown_table
from .comparison.runs import paired_system_difference, scores_of_pairs

#: The files of a point (see the module docstring).
TRAIN_METRICS = Path("train") / "metrics.json"
RARIFIED, WORDNET, INTRINSIC = "synonyms-rarified.json", "synonyms-wordnet.json", "intrinsic.json"
#: The intrinsic subset the curves read: the pairs whose rare word the component's default rule picks.
RULE_SUBSET = "rule_zipf<3.0"
#: CRW systems by the contexts they read at inference.
CONTEXT_SYSTEMS = (("bertram_form", 0), ("bertram_4", 4), ("bertram_16", 16), ("bertram_32", 32))


@dataclass(frozen=True)
class Measure:
    key: str
    title: str
    file: str
    read: Callable[[Mapping[str, Any]], Optional[Dict[str, Any]]]
    #: for synonym measures: (subset, system), whose per-pair cosines are compared with the reference
    pairs: Optional[tuple] = None


def _synonym(subset: str, system: str) -> Callable[[Mapping[str, Any]], Optional[Dict[str, Any]]]:
    def read(metrics: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
        figures = metrics.get("subsets", {}).get(subset, {}).get("systems", {}).get(system)
        if not figures or "gain" not in figures:
            return None
        return {
            "value": figures["mean_cosine"],
            "gain": figures["gain"],
            "n": figures["n"],
            "hits_at_10": figures["hits_at_10"],
        }

    return read


def _intrinsic(dataset: str, system: str) -> Callable[[Mapping[str, Any]], Optional[Dict[str, Any]]]:
    def read(metrics: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
        cell = (metrics.get("sets", {}).get(dataset) or {}).get("subsets", {}).get(RULE_SUBSET, {})
        figures = cell.get("systems", {}).get(system)
        if not figures or "difference" not in figures:
            return None
        out = {"value": figures["spearman"], "gain": figures["difference"], "n": cell.get("n")}
        if "vs_form" in figures:
            out["vs_form"] = figures["vs_form"]
        return out

    return read


MEASURES = (
    Measure(
        "rarified_text_store",
        "rarified synonyms, BERTRAM text + store: cosine gain",
        RARIFIED,
        _synonym("synonym", "bertram_text_store"),
        ("synonym", "bertram_text_store"),
    ),
    Measure(
        "rarified_form",
        "rarified synonyms, BERTRAM form only: cosine gain",
        RARIFIED,
        _synonym("synonym", "bertram_form"),
        ("synonym", "bertram_form"),
    ),
    Measure(
        "wordnet_store",
        "WordNet synonyms, BERTRAM store contexts: cosine gain",
        WORDNET,
        _synonym("wordnet", "bertram_store"),
        ("wordnet", "bertram_store"),
    ),
    Measure(
        "wordnet_form",
        "WordNet synonyms, BERTRAM form only: cosine gain",
        WORDNET,
        _synonym("wordnet", "bertram_form"),
        ("wordnet", "bertram_form"),
    ),
    Measure("crw_16", f"CRW {RULE_SUBSET}, 16 contexts: Δ Spearman", INTRINSIC, _intrinsic("crw", "bertram_16")),
    Measure("crw_form", f"CRW {RULE_SUBSET}, form only: Δ Spearman", INTRINSIC, _intrinsic("crw", "bertram_form")),
    Measure(
        "card_fed",
        f"Card-660 {RULE_SUBSET}, what the component feeds: Δ Spearman",
        INTRINSIC,
        _intrinsic("card", "fed"),
    ),
    Measure(
        "card_form", f"Card-660 {RULE_SUBSET}, form only: Δ Spearman", INTRINSIC, _intrinsic("card", "bertram_form")
    ),
)


def _load(path: Path) -> Optional[Dict[str, Any]]:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf8"))
    except (OSError, ValueError) as err:
        raise ValueError(Errors.E397.format(path=str(path), err=err)) from err


def training_set(metrics: Mapping[str, Any]) -> Dict[str, Any]:
    """The point's x values: training words, multi-piece share, seconds (targets + training)."""
    targets = metrics.get("targets", {})
    words, held = int(targets.get("words", 0)), int(targets.get("held_out", 0))
    n_ota = int(targets.get("n_ota", 0))
    seconds = metrics.get("seconds_this_call", {}).get("total")
    return {
        "words": words,
        "trained_words": words - held,
        "multi_piece": n_ota,
        "multi_piece_share": round(n_ota / words, 4) if words else None,
        "corpus_words": targets.get("n_corpus", words),
        "seconds_training": seconds,
        "seconds_targets": targets.get("seconds"),
    }


def versus_reference(
    point: Mapping[str, Any], reference: Mapping[str, Any], subset: str, system: str, n_resamples: int, seed: int
) -> Optional[Dict[str, Any]]:
    """The point's mean cosine minus the reference's on the pairs both scored, with a paired CI."""
    mine, theirs = scores_of_pairs(point.get("pairs", [])), scores_of_pairs(reference.get("pairs", []))
    shared = sorted(
        k for k in mine.keys() & theirs.keys() if k[0] == subset and system in mine[k] and system in theirs[k]
    )
    if len(shared) < 2:
        return None
    paired = paired_system_difference(theirs, mine, shared, system, n_resamples, seed)
    return {"n": len(shared), "difference": paired["cosine_diff"], "hits_difference": paired["hits_diff"]}


def read_point(directory: Path) -> Dict[str, Any]:
    train = _load(directory / TRAIN_METRICS)
    if train is None:
        raise ValueError(Errors.E398.format(point=str(directory), file=str(TRAIN_METRICS)))
    files = {name: _load(directory / name) for name in (RARIFIED, WORDNET, INTRINSIC)}
    measures = {m.key: m.read(files[m.file]) if files[m.file] else None for m in MEASURES}
    crw_sets = (files[INTRINSIC] or {}).get("sets", {}).get("crw", {})
    crw = crw_sets.get("subsets", {}).get(RULE_SUBSET, {}).get("systems", {})
    contexts = {str(k): crw[name]["difference"] for name, k in CONTEXT_SYSTEMS if "difference" in crw.get(name, {})}
    return {
        "name": directory.name,
        "path": str(directory),
        "training": training_set(train),
        "held_out": train.get("final"),
        "measures": measures,
        "crw_by_contexts": contexts,
        "_files": files,
    }


def learning_curve(points: Sequence[PathLike], n_resamples: int = 2000, seed: int = 0) -> Dict[str, Any]:
    """Every point's training set and measures; differences to the first point for the synonym measures."""
    if not points:
        raise ValueError(Errors.E399)
    read = [read_point(Path(p)) for p in points]
    reference = read[0]
    for point in read[1:]:
        point["versus_reference"] = {}
        for m in MEASURES:
            if m.pairs is None or not point["_files"][m.file] or not reference["_files"][m.file]:
                continue
            diff = versus_reference(point["_files"][m.file], reference["_files"][m.file], *m.pairs, n_resamples, seed)
            if diff is not None:
                point["versus_reference"][m.key] = diff
    for point in read:
        del point["_files"]
    curve = {
        "reference": reference["name"],
        "measures": {m.key: m.title for m in MEASURES},
        "rule_subset": RULE_SUBSET,
        "bootstrap": n_resamples,
        "seed": seed,
        "points": read,
    }
    curve["per_doubling"] = per_doubling(curve)
    return curve


def per_doubling(curve: Mapping[str, Any]) -> Dict[str, float]:
    """Each measure's least-squares slope of the gain against log2(training words), over the points
    that have it (three or more, at two or more sizes): the gain per doubling of the training set."""
    slopes: Dict[str, float] = {}
    for key in curve["measures"]:
        xy = [
            (np.log2(p["training"]["trained_words"]), p["measures"][key]["gain"]["estimate"])
            for p in curve["points"]
            if p["measures"].get(key) and p["training"]["trained_words"] > 0
        ]
        if len(xy) >= 3 and len({x for x, _ in xy}) >= 2:
            x, y = np.asarray(xy, dtype=float).T
            slopes[key] = float(np.polyfit(x, y, 1)[0])
    return slopes


def limits_sentence(curve: Mapping[str, Any]) -> str:
    """What the points say about the training set's size, in one sentence."""
    slopes = curve.get("per_doubling", {})
    if not slopes:
        return "Too few points (three at two sizes or more) to say how the measures follow the training set's size."
    rising = [f"`{k}` {v:+.3f}" for k, v in slopes.items() if v > 0]
    flat = [f"`{k}` {v:+.3f}" for k, v in slopes.items() if v <= 0]
    text = "Gain per doubling of the training words (least-squares slope over the points): "
    text += ", ".join(rising) if rising else "no measure rises"
    if flat:
        text += "; flat or falling: " + ", ".join(flat)
    return text + ". Read each slope against its cells' CIs: a slope smaller than their half-width is no trend."


def _cell(measure: Optional[Mapping[str, Any]]) -> str:
    return "" if not measure else format_ci(measure["gain"], 1, 3, star=True)


def format_markdown(curve: Mapping[str, Any]) -> List[str]:
    """One row per point: its training set, then each measure's gain over the subword mean [95% CI]."""
    keys = list(curve["measures"])
    rows = []
    for point in curve["points"]:
        t = point["training"]
        seconds = sum(s for s in (t["seconds_training"], t["seconds_targets"]) if s is not None)
        rows.append(
            [
                point["name"],
                f"{t['trained_words']:,}",
                f"{100 * (t['multi_piece_share'] or 0):.0f}%",
                f"{seconds:,.0f}",
                *(_cell(point["measures"].get(k)) for k in keys),
            ]
        )
    lines = markdown_table(("point", "training words", "multi-piece", "seconds", *keys), rows)
    lines += [
        "",
        limits_sentence(curve),
        "",
        "Measures: " + "; ".join(f"`{k}` {title}" for k, title in curve["measures"].items()) + ". "
        "Each cell: gain over the subword mean [95% CI], `*` where the CI excludes 0.",
        "",
    ]
    others = [p for p in curve["points"] if p.get("versus_reference")]
    if others:
        lines += [
            f"Difference to the reference point `{curve['reference']}` on the same pairs (paired bootstrap "
            "over original words): mean cosine [95% CI]; hits@10 points [95% CI].",
            "",
            *markdown_table(
                ("point", "measure", "n", "Δ cosine", "Δ hits@10"),
                (
                    [
                        point["name"],
                        key,
                        diff["n"],
                        format_ci(diff["difference"], 1, 3, star=True),
                        format_ci(diff["hits_difference"], 100, 1, star=True),
                    ]
                    for point in others
                    for key, diff in point["versus_reference"].items()
                ),
                text_columns=2,
            ),
            "",
        ]
    return lines


def _plot(
    curve: Mapping[str, Any], keys: Sequence[str], x_of: Callable[[Mapping[str, Any]], float], xlabel: str, axes
) -> None:
    for ax, key in zip(axes, keys):
        shown = [(x_of(p), p["measures"][key], p) for p in curve["points"] if p["measures"].get(key)]
        for x, m, p in sorted(shown, key=lambda item: item[0]):
            share = p["training"]["multi_piece_share"] or 0.0
            gain = m["gain"]
            ax.errorbar(
                [x],
                [gain["estimate"]],
                yerr=[[gain["estimate"] - gain["low"]], [gain["high"] - gain["estimate"]]],
                fmt="o" if share < 0.25 else "s",
                color="tab:blue" if share < 0.25 else "tab:orange",
                capsize=3,
            )
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.set_title(textwrap.fill(curve["measures"][key], 36), fontsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.grid(alpha=0.3)


def plot_curves(curve: Mapping[str, Any], path: PathLike) -> Path:
    """Each measure's gain [95% CI] against the training words (log scale); squares: a multi-piece
    share of 25% or more, circles: less."""
    plt = pyplot()
    keys = list(curve["measures"])
    fig, axes = plt.subplots(2, (len(keys) + 1) // 2, figsize=(4 * ((len(keys) + 1) // 2), 7.5), layout="constrained")
    axes = list(np.asarray(axes).ravel())
    _plot(curve, keys, lambda p: p["training"]["trained_words"], "training words (log)", axes)
    for ax in axes:
        ax.set_xscale("log")
    fig.suptitle("Gain over the subword mean [95% CI]; squares: 25%+ multi-piece training words")
    return save_png(fig, path)


def plot_contexts(curve: Mapping[str, Any], path: PathLike) -> Path:
    """CRW (rule subset) Δ Spearman against the contexts read at inference, one line per point."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for point in curve["points"]:
        by = point["crw_by_contexts"]
        ks = sorted(int(k) for k in by)
        if ks:
            ax.errorbar(
                ks,
                [by[str(k)]["estimate"] for k in ks],
                yerr=[
                    [by[str(k)]["estimate"] - by[str(k)]["low"] for k in ks],
                    [by[str(k)]["high"] - by[str(k)]["estimate"] for k in ks],
                ],
                marker="o",
                capsize=3,
                label=point["name"],
            )
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("contexts read at inference")
    ax.set_ylabel(f"CRW {RULE_SUBSET}: Δ Spearman vs subword mean")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no CRW results", ha="center", transform=ax.transAxes)
    return save_png(fig, path)


def write_learning_curve(
    points: Sequence[PathLike], output_dir: PathLike, n_resamples: int = 2000, seed: int = 0
) -> Dict[str, Any]:
    """learning_curve.json, .md and the two plots under `output_dir`."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    curve = learning_curve(points, n_resamples, seed)
    write_json_atomic(out / CURVE_OUTPUTS[0], mark_json(curve, "learning-curve"), overwrite=True)
    lines = [text_mark("learning-curve"), "# Learning curve", ""] + format_markdown(curve)
    lines += [
        f"![gains against training words]({CURVE_OUTPUTS[2]})",
        "",
        f"![CRW against contexts at inference]({CURVE_OUTPUTS[3]})",
        "",
    ]
    write_bytes_atomic(out / CURVE_OUTPUTS[1], ("\n".join(lines) + "\n").encode("utf8"), overwrite=True)
    plot_curves(curve, out / CURVE_OUTPUTS[2])
    plot_contexts(curve, out / CURVE_OUTPUTS[3])
    return curve


__all__ = [
    "MEASURES",
    "format_markdown",
    "learning_curve",
    "limits_sentence",
    "per_doubling",
    "plot_contexts",
    "plot_curves",
    "read_point",
    "versus_reference",
    "write_learning_curve",
]
