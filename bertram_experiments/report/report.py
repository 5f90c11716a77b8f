"""The markdown report of a project run: what each step produced and how long it took.

Reads the JSON files the steps write (splits.json, baseline.json, rarify.json,
metrics.json per dataset; BERTRAM's metrics.json; prepare.json) and writes one
markdown file with the accuracy table (All / WN / Msp, difference to the
baseline, exact McNemar p), the frequency plot, rarification and training
figures, and the seconds of every step. With the pool step's pooled.json the
pooled table (all rarified sets, bootstrap CIs) and its per-set rows come first,
with the synonym step's synonyms.json the synonym-recovery table beside its oracle rows;
the `ner` and `ner-full` workflows' reports (metrics/ner/report.md, metrics/ner-full/report.md), if they ran,
are sections.
Missing pieces are reported as missing, never invented.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from ..errors import Errors
from spacy_bertram.project_support import PathLike, atomic_path, text_mark
from ..outputs import CURVE_OUTPUTS, NER_CURVE_PLOT, PLOT_FILE, REPORT_FILE
from ..downstream.pooling import load_pooled, pooled_markdown
from ..synonyms.recovery import format_markdown as synonym_markdown
from ..system_names import system_title
from ..tables import format_ci, markdown_table, percent


def _load(path: Optional[PathLike]) -> Optional[Dict[str, Any]]:
    if path is None:
        return None
    path = Path(path)
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf8"))


def accuracy_table(metrics: Dict[str, Any]) -> List[str]:
    """Markdown rows: system, All, WN, Msp (accuracy %), Δ All, McNemar p (All), and where
    evaluate wrote them, the paired bootstrap CI of Δ All and the gold-label log-probability."""
    acc = metrics["accuracy"]
    base = acc["baseline"]["All"]["accuracy"]
    paired = metrics.get("vs_baseline") or {}
    n = {k: acc["baseline"][k]["n"] for k in ("All", "WN", "Msp")}
    header = [
        "system",
        f"All (n={n['All']})",
        f"WN (n={n['WN']})",
        f"Msp (n={n['Msp']})",
        "Δ All",
        "McNemar p (All)",
        "wins / losses vs baseline",
    ] + (["Δ All [95% CI]", "mean log p(gold)", "Δ log p(gold) [95% CI]"] if paired else [])
    rows = []
    for system in metrics["systems"]:
        row = acc[system]
        if system == "baseline":
            delta, p, wl = "", "", ""
        else:
            delta = f"{100 * (row['All']['accuracy'] - base):+.1f}" if base is not None else "n/a"
            test = metrics["mcnemar_vs_baseline"][system]["All"]
            p, wl = f"{test['p_value']:.3g}", f"{test['only_a']} / {test['only_b']}"
        cells = [system_title(system), *(percent(row[k]["accuracy"]) for k in ("All", "WN", "Msp")), delta, p, wl]
        if paired:
            figures = paired.get(system, {})
            cells += [
                format_ci(figures.get("accuracy_diff"), 100, 1),
                f"{figures['mean_log_prob']:.3f}" if "mean_log_prob" in figures else "",
                format_ci(figures.get("log_prob_diff"), 1, 3),
            ]
        rows.append(cells)
    return markdown_table(header, rows)


def pooled_section(pooled: Dict[str, Any]) -> List[str]:
    """The pooled table and the per-set rows (`evaluation.downstream.pooling`)."""
    return ["## Pooled: baseline vs +BERTRAM on all rarified sets", ""] + pooled_markdown(pooled) + [""]


def synonym_section(path: PathLike) -> List[str]:
    """The synonym-recovery table (`evaluation.synonyms.recovery`), or a line saying it is missing."""
    lines = ["## Synonym recovery: how close the vectors come to the replaced word's embedding", ""]
    metrics = _load(path)
    if metrics is None:
        return lines + [f"No synonym-recovery results at {path}: the synonyms step has not run.", ""]
    return (
        lines
        + [
            "The oracle rows put the replaced word's own input embedding at the rare substitute. Each system's vector "
            "for a rare word is compared here with that embedding (the replaced word is one wordpiece): the cosine, "
            "and the replaced word's rank among the vocabulary by cosine to the vector.",
            "",
        ]
        + synonym_markdown(metrics)
        + [""]
    )


VARIANT_RE = re.compile(r"(.+)-(zipf[\d.]+|\d+)")


@dataclass(frozen=True)
class DatasetDirs:
    """Where the steps put one dataset's outputs (project.yml's layout)."""

    splits: Path
    baseline: Path
    rarified: Path
    metrics: Path

    @classmethod
    def layout(
        cls,
        name: str,
        corpus_dir: PathLike = "corpus",
        training_dir: PathLike = "training",
        metrics_dir: PathLike = "metrics",
    ) -> "DatasetDirs":
        """`NAME` or `NAME-VARIANT` (e.g. bbc-zipf3: the same splits and baseline, rarified-zipf3)."""
        variant = VARIANT_RE.fullmatch(name)
        base, rarified = (variant.group(1), f"rarified-{variant.group(2)}") if variant else (name, "rarified")
        return cls(
            Path(corpus_dir) / base / "splits",
            Path(training_dir) / base / "baseline",
            Path(corpus_dir) / base / rarified,
            Path(metrics_dir) / name,
        )


def dataset_section(name: str, dirs: DatasetDirs, report_dir: Path) -> List[str]:
    """Tables and figures for one dataset."""
    splits = _load(dirs.splits / "splits.json")
    baseline = _load(dirs.baseline / "baseline.json")
    rarified = _load(dirs.rarified / "rarify.json")
    metrics = _load(dirs.metrics / "metrics.json")
    out = [f"## {name}", ""]
    if metrics is None:
        return out + [f"No evaluation found under {dirs.metrics}: the evaluate step has not run.", ""]
    out += accuracy_table(metrics) + [""]
    out.append(
        "Accuracy in %. Δ All: points over the baseline. McNemar: exact two-sided test on the items "
        "where exactly one of the two systems is right (wins = system right and baseline wrong)."
        + (
            " CIs: paired bootstrap over items; log p(gold): natural log of the textcat's gold-label "
            "probability, clipped at 1e-6."
            if metrics.get("vs_baseline")
            else ""
        )
    )
    verdicts = []
    for system in metrics["systems"]:
        if system == "baseline":
            continue
        test = metrics["mcnemar_vs_baseline"][system]["All"]
        delta = metrics["accuracy"][system]["All"]["accuracy"] - metrics["accuracy"]["baseline"]["All"]["accuracy"]
        word = "significant" if test["p_value"] < 0.05 else "not significant"
        verdicts.append(f"{system_title(system)} {100 * delta:+.1f} points ({word}, p = {test['p_value']:.3g})")
    if verdicts:
        out.append("On All: " + "; ".join(verdicts) + ".")
    cov = metrics.get("substitute_coverage") or {}
    if cov:
        out.append(
            "Share of substituted words that got a BERTRAM vector: "
            + ", ".join(f"{system_title(k)} {100 * v:.0f}%" for k, v in cov.items())
            + "."
        )
    if metrics.get("seed_sets"):
        out.append(
            f"Further rarification seeds evaluated: {', '.join(metrics['seed_sets'])} (rows in the pooled section)."
        )
    png = dirs.metrics / "accuracy_by_frequency.png"
    if png.is_file():
        out += ["", f"![accuracy by frequency]({os.path.relpath(png, report_dir)})"]
    out.append("")
    facts = []
    if splits:
        facts.append(
            f"data: {splits['train']} train / {splits['dev']} dev / {splits['test_candidates']} test "
            f"candidates, texts cut to {splits['max_words']} words (mean {splits['mean_words']}), "
            f"{splits['skipped_empty']} empty texts skipped"
        )
    if baseline:
        dev = baseline.get("dev", {})
        score = dev.get("cats_macro_f", dev.get("cats_score"))
        facts.append(
            f"baseline: {baseline['max_steps']} steps, dev macro F "
            f"{percent(score) if score is not None else 'n/a'}, embedding drift "
            f"{baseline.get('embedding_drift', 'n/a')} (0 = frozen)"
        )
    if rarified:
        facts.append(
            f"rarification: {rarified['n_candidates']} candidates, {rarified['n_correct']} correct, "
            f"{rarified['n_items']} rarified items ({rarified['not_flipped']} did not flip within "
            f"{rarified['max_masks']} masks, {rarified['skipped_no_candidates']} had no word with a rare "
            f"synonym); {rarified['synonyms']} synonym and {rarified['misspellings']} misspelling "
            f"substitutions, {rarified['mean_masks']} per item; substitutes below Zipf "
            f"{rarified.get('max_zipf', 'n/a')} with 2+ wordpieces"
        )
        stats = rarified.get("substitutes")
        if stats:
            facts.append(
                "substitutes: wordpieces "
                + _buckets(stats["wordpieces"])
                + "; Zipf "
                + _buckets(stats["zipf"])
                + "; corpus occurrences (contexts available) "
                + _buckets(stats["corpus_occurrences"])
            )
    out += [f"- {f}" for f in facts] + [""]
    return out


def _buckets(counts: Dict[str, int]) -> str:
    return ", ".join(f"{label}: {n}" for label, n in counts.items())


def similarity_metrics(directory: Path) -> Dict[str, Dict[str, Any]]:
    """Set name -> metrics of every `similarity` output in `directory` ({} if none)."""
    paths = sorted(directory.glob("*.json")) if directory.is_dir() else []
    return {path.stem: _load(path) or {} for path in paths}


def similarity_section(metrics: Dict[str, Dict[str, Any]]) -> List[str]:
    """Spearman's rho per word-similarity set, if `similarity` has run."""
    rows = []
    for name, data in metrics.items():
        for subset, label in (("all", "all pairs"), ("multi_piece", "rare word split into 2+ wordpieces")):
            result = data.get("results", {}).get(subset, {})
            if "bertram" in result:
                rows.append(
                    [
                        name,
                        label,
                        result["n"],
                        f"{result['subword_mean']['spearman']:.3f}",
                        f"{result['bertram']['spearman']:.3f}",
                    ]
                )
    if not rows:
        return []
    return [
        "",
        "## Word similarity",
        "",
        "Spearman's rho between human scores and cosines in the encoder's input-embedding space; the "
        "first word is embedded as the stock encoder sees it (subword mean), the second by each system, "
        "with contexts from the corpus store.",
        "",
        *markdown_table(("set", "pairs", "n", "subword mean", "BERTRAM"), rows, text_columns=2),
    ]


def timing_rows(steps: Sequence[tuple]) -> List[str]:
    done = [seconds for _, seconds in steps if seconds is not None]
    rows = [[name, "not run" if seconds is None else f"{seconds:.0f}"] for name, seconds in steps]
    return markdown_table(("step", "seconds"), [*rows, ["total (steps that report their time)", f"{sum(done):.0f}"]])


def ner_section(ner_report: Path, report_dir: Path, plots: Sequence[str] = (PLOT_FILE,)) -> List[str]:
    """The `ner` (or `ner-full`) workflow's report (if it ran), its plots linked from where this report is."""
    if not ner_report.is_file():
        return []
    where = Path(os.path.relpath(ner_report.parent, report_dir))
    text = ner_report.read_text(encoding="utf8")
    for name in plots:
        text = text.replace(f"]({name})", f"]({(where / name).as_posix()})")
    return ["", *text.rstrip("\n").splitlines()]


def curve_section(curve_report: Path, report_dir: Path) -> List[str]:
    """The `curve` workflow's learning curve (if it ran): its table, its plots linked from here."""
    if not curve_report.is_file():
        return []
    where = Path(os.path.relpath(curve_report.parent, report_dir)).as_posix()
    text = curve_report.read_text(encoding="utf8")
    for name in CURVE_OUTPUTS[2:]:  # the plots
        text = text.replace(f"]({name})", f"]({where}/{name})")
    body = [line for line in text.rstrip("\n").splitlines()[1:] if line != "# Learning curve"]
    return ["", "## Learning curve: what limits the vectors", *body]


def write_report(
    output: PathLike,
    datasets: Sequence[str],
    corpus_dir: PathLike = "corpus",
    training_dir: PathLike = "training",
    metrics_dir: PathLike = "metrics",
    bertram_dir: Optional[PathLike] = None,
    prepare_dir: Optional[PathLike] = None,
    title: str = "spacy-bertram: rarified text classification",
    pooled: Optional[PathLike] = None,
    originals: Optional[PathLike] = None,
    synonyms: Optional[PathLike] = None,
) -> Path:
    """Write the markdown report for the datasets that have been evaluated; returns its path.
    With `pooled` (the pool step's pooled.json), the pooled table comes first; with `synonyms`
    (the synonym step's JSON) the synonym-recovery table after it, next to its oracle rows;
    with `originals` (the pooled do-no-harm evaluation on original texts), its table next."""
    out = Path(output)
    report_dir = out.parent
    lines = [text_mark("report"), f"# {title}", ""]  # the mark: the next run knows its own file
    layouts = {name: DatasetDirs.layout(name, corpus_dir, training_dir, metrics_dir) for name in datasets}
    done = {name: d for name, d in layouts.items() if (d.metrics / "metrics.json").is_file()}
    if not done:
        raise ValueError(Errors.E371.format(datasets=list(datasets), metrics_dir=metrics_dir))
    pooled_result = None
    if pooled is not None:
        pooled_result = load_pooled(pooled)
        lines += pooled_section(pooled_result)
    if synonyms is not None:
        lines += synonym_section(synonyms)
    if originals is not None:
        lines += ["## Do no harm: the original test texts, stock vs with bertram", ""]
        lines += pooled_markdown(load_pooled(originals), per_set=True) + [""]
    for name, dirs in done.items():
        lines += dataset_section(name, dirs, report_dir)
    skipped = [name for name in datasets if name not in done]
    if skipped:
        lines += [f"Not run: {', '.join(skipped)} (`python -m spacy project run dataset . --vars.dataset NAME`).", ""]
    bertram = _load(Path(bertram_dir) / "metrics.json") if bertram_dir else None
    prepare = _load(Path(prepare_dir) / "prepare.json") if prepare_dir else None
    lines += ["## BERTRAM", ""]
    if bertram:
        final, base = bertram.get("final", {}), bertram.get("baseline", {})
        lines.append(
            f"Mode {bertram.get('mode')}, {bertram.get('targets', {}).get('words')} training words. Held-out "
            f"words: cosine to the target {final.get('cosine', float('nan')):.3f} (subword mean "
            f"{base.get('cosine', float('nan')):.3f}), MRR {final.get('mrr', float('nan')):.3f} "
            f"(subword mean {base.get('mrr', float('nan')):.3f})."
        )
        ablation = bertram.get("ablation") or []
        if ablation:
            lines += [
                "",
                *markdown_table(
                    ("held-out words: model", "cosine", "MRR"),
                    ([row["model"], f"{row['cosine']:.3f}", f"{row['mrr']:.3f}"] for row in ablation),
                ),
            ]
            lines.append("")
    else:
        lines.append("No BERTRAM training metrics found.")
    if prepare:
        lines.append(f"Corpus: {prepare.get('total_words')} words, vocabulary {prepare.get('vocab_size')}.")
    wordsim = similarity_metrics(Path(metrics_dir) / "wordsim")
    lines += similarity_section(wordsim)
    lines += curve_section(Path(metrics_dir) / "curve" / "learning_curve.md", report_dir)
    lines += ner_section(Path(metrics_dir) / "ner" / REPORT_FILE, report_dir)
    lines += ner_section(Path(metrics_dir) / "ner-full" / REPORT_FILE, report_dir, plots=(NER_CURVE_PLOT,))
    lines += ["", "## Time per step", ""]
    steps: List[tuple] = [("prepare (corpus -> context store)", prepare.get("seconds") if prepare else None)]
    if bertram and "total" in bertram.get("seconds_this_call", {}):
        steps.append(("train BERTRAM (targets, stages, ablation)", bertram["seconds_this_call"]["total"]))
    for name, dirs in done.items():
        shared = [("split", dirs.splits / "splits.json"), ("train baseline", dirs.baseline / "baseline.json")]
        own = [("rarify", dirs.rarified / "rarify.json"), ("evaluate", dirs.metrics / "metrics.json")]
        # a threshold variant (bbc-1000) reuses its dataset's split and baseline: count them once
        for step, path in own if VARIANT_RE.fullmatch(name) else shared + own:
            data = _load(path)
            steps.append((f"{name}: {step}", data.get("seconds") if data else None))
    if pooled_result is not None:
        steps.append(("pool", pooled_result.get("seconds")))
    if synonyms is not None:
        steps.append(("synonym recovery", (_load(synonyms) or {}).get("seconds")))
    steps += [(f"word similarity: {name}", data.get("seconds")) for name, data in wordsim.items()]
    lines += timing_rows(steps) + [""]
    with atomic_path(out, overwrite=True) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf8")
    return out


__all__ = [
    "DatasetDirs",
    "accuracy_table",
    "curve_section",
    "dataset_section",
    "pooled_section",
    "synonym_section",
    "write_report",
]
