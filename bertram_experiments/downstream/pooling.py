"""Pool the per-item results of several rarified evaluations (datasets x thresholds x seeds).

One rarified set has a few dozen items, too few to show a difference of a few
points. Pooling concatenates the items of many sets (each `evaluate` output dir
and the seed sets it lists) and reports the same figures as one set: accuracy,
mean gold-label log-probability, the exact McNemar test, and paired bootstrap CIs
of the differences to the baseline; plus one row per set.

What is resampled: clusters of items made from the same test text (the same
candidate appears in the set of every threshold and seed that kept it), so items
that are not independent are never counted as independent evidence. Resampling
is stratified: sets that share texts form one stratum (in practice one per
dataset), and each stratum keeps its number of clusters in every resample. The
McNemar test on the pooled items treats them as independent, which items of
several seeds of one text are not: its p-value is optimistic where seeds are
pooled; the cluster bootstrap CI is the figure to trust.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..errors import Errors, Warnings
from spacy_bertram.project_support import PathLike, atomic_path, write_json_atomic
from ..rarification.seed_sets import listed_sets
from .paired import DEFAULT_RESAMPLES, ItemTable, compare_to_baseline, read_predictions
from ..system_names import system_title
from ..tables import format_ci, markdown_table


def discover_sets(metrics_dirs: Sequence[PathLike]) -> Dict[str, Path]:
    """Set name -> predictions.jsonl for each evaluate output dir and the seed sets its
    metrics.json lists ("bbc", "bbc/seed-1", ...). Missing files are an error; a
    directory given twice counts once."""
    found: Dict[str, Path] = {}
    for directory in map(Path, dict.fromkeys(Path(d).resolve() for d in metrics_dirs)):
        if not (directory / "predictions.jsonl").is_file():
            raise ValueError(Errors.E345.format(directory=directory))
        for sub, path in listed_sets(directory, "metrics.json").items():
            name = f"{directory.name}/{sub}" if sub else directory.name
            if name in found:
                raise ValueError(Errors.E346.format(name=name))
            found[name] = path / "predictions.jsonl"
    if not found:
        raise ValueError(Errors.E347)
    return found


def strata_of(table: ItemTable) -> np.ndarray:
    """Per item, the first set of its group of sets that share test texts (union-find)."""
    order = list(dict.fromkeys(table.sets))
    parent = {s: s for s in order}

    def find(s: str) -> str:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    first: Dict[str, str] = {}
    for set_name, cluster in zip(table.sets, table.clusters):
        if cluster in first:
            a, b = find(first[cluster]), find(set_name)
            if a != b:  # keep the earlier set as the group's name
                a, b = sorted((a, b), key=order.index)
                parent[b] = a
        else:
            first[cluster] = set_name
    return np.array([find(s) for s in table.sets], dtype=object)


def pool_tables(tables: Mapping[str, ItemTable], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> Dict[str, Any]:
    """Pooled figures (clusters resampled within strata) and per-set figures."""
    pooled = ItemTable.concat(list(tables.values()))
    left_out = systems_left_out(tables, pooled.systems)
    if left_out:
        missing = "; ".join(f"{system}: {', '.join(sets)}" for system, sets in left_out.items())
        warnings.warn(Warnings.W017.format(systems=", ".join(left_out), missing=missing))
    strata = strata_of(pooled)
    groups: Dict[str, List[str]] = {}
    for set_name, stratum in zip(pooled.sets, strata):
        if set_name not in groups.setdefault(stratum, []):
            groups[stratum].append(set_name)
    return {
        "sets": {name: len(t) for name, t in tables.items()},
        "strata": groups,
        "systems": pooled.systems,
        "systems_left_out": left_out,
        "n_items": len(pooled),
        "n_clusters": int(len(np.unique(pooled.clusters.astype(str)))),
        "pooled": compare_to_baseline(pooled, n_resamples=n_resamples, seed=seed, strata=strata),
        "per_set": {name: compare_to_baseline(t, n_resamples=n_resamples, seed=seed) for name, t in tables.items()},
        "contexts_over_form": contexts_over_form(pooled, strata, n_resamples, seed),
        "memory_by_position": memory_by_position(pooled, strata, n_resamples, seed),
        "contexts_by_recurrence": contexts_by_recurrence(pooled, strata, n_resamples, seed),
        "n_resamples": n_resamples,
        "seed": seed,
    }


def systems_left_out(tables: Mapping[str, ItemTable], pooled_systems: Sequence[str]) -> Dict[str, List[str]]:
    """Systems some sets have and others lack, each with the sets lacking it: pooling keeps only the systems every
    set has, and says which it left out rather than dropping rows unseen."""
    every = [s for t in tables.values() for s in t.systems]
    extra = [s for s in dict.fromkeys(every) if s not in pooled_systems]
    return {s: [name for name, t in tables.items() if s not in t.systems] for s in extra}


def context_systems(systems: Sequence[str]) -> Dict[str, List[str]]:
    """Per injection's form-only system, the same injection's systems with contexts (doc, store, ...)."""
    out: Dict[str, List[str]] = {}
    for form in (s for s in systems if s.startswith("bertram_") and s.endswith("_form")):
        prefix = form[: -len("form")]
        with_contexts = [s for s in systems if s.startswith(prefix) and s != form]
        if with_contexts:
            out[form] = with_contexts
    return out


def contexts_over_form(
    pooled: ItemTable, strata: np.ndarray, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Dict[str, Dict[str, Any]]:
    """What the contexts add to the spelling alone: per injection, each context system (doc, store)
    against the same injection's form-only system, on the same items and resamples as the pool."""
    out: Dict[str, Dict[str, Any]] = {}
    for form, with_contexts in context_systems(pooled.systems).items():
        table = pooled.with_systems([form, *with_contexts])
        compared = compare_to_baseline(table, baseline=form, n_resamples=n_resamples, seed=seed, strata=strata)
        out[form] = {s: compared[s] for s in with_contexts}
    return out


#: Bins of an item's position in its set (the texts a streaming memory has seen before it), for
#: `memory_by_position`: [start, end) of the index in the set's order.
POSITION_BINS = ((0, 25), (25, 100), (100, None))


def positions_in_sets(sets: np.ndarray) -> np.ndarray:
    """Per item, its index among its set's items in their order: how many texts of its set came before it."""
    seen: Dict[str, int] = {}
    out = np.empty(len(sets), dtype=int)
    for i, set_name in enumerate(sets):
        out[i] = seen.get(set_name, 0)
        seen[set_name] = out[i] + 1
    return out


def bin_label(start: int, end: Optional[int]) -> str:
    """[start, end) of counts as a reader reads it: "0", "1-2", "3+"."""
    if end is None:
        return f"{start}+"
    return str(start) if end == start + 1 else f"{start}-{end - 1}"


def compare_in_bins(
    table: ItemTable,
    values: np.ndarray,
    bins: Sequence[Tuple[int, Optional[int]]],
    baseline: str,
    strata: np.ndarray,
    n_resamples: int,
    seed: int,
) -> Dict[str, Dict[str, Any]]:
    """`compare_to_baseline` on the items whose value falls in each bin ([start, end), end None for no end), with
    the pool's strata; a bin of fewer than two items is left out."""
    out: Dict[str, Dict[str, Any]] = {}
    for start, end in bins:
        mask = (values >= start) & (values < (end if end is not None else np.inf))
        if mask.sum() < 2:
            continue
        out[bin_label(start, end)] = compare_to_baseline(
            table.subset(mask), baseline=baseline, n_resamples=n_resamples, seed=seed, strata=strata[mask]
        )
    return out


def memory_by_position(
    pooled: ItemTable, strata: np.ndarray, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Dict[str, Dict[str, Any]]:
    """The streaming memory over a stream: per injection, the doc + memory system against the same injection's
    doc system on the items at each position bin of their set (the memory starts empty for every set, so an
    item's position is the number of texts it may have remembered contexts from). {} without both systems."""
    out: Dict[str, Dict[str, Any]] = {}
    position = positions_in_sets(pooled.sets)
    for memory in (s for s in pooled.systems if s.startswith("bertram_") and s.endswith("_memory")):
        doc = memory[: -len("memory")] + "doc"
        if doc not in pooled.systems:
            continue
        pair = pooled.with_systems([doc, memory])
        by_bin = compare_in_bins(pair, position, POSITION_BINS, doc, strata, n_resamples, seed)
        bins = {label: figures[memory] for label, figures in by_bin.items()}
        out[memory] = {"against": doc, "bins": bins}
    return out


#: Bins of how many other texts of its set hold one of an item's substitutes (`RECURRENCE_KEY`), for
#: `contexts_by_recurrence`: [start, end) of the count.
RECURRENCE_BINS = ((0, 1), (1, 3), (3, None))


def contexts_by_recurrence(
    pooled: ItemTable, strata: np.ndarray, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Dict[str, Dict[str, Any]]:
    """What the contexts add to the spelling alone, split by whether an item's substitute recurs in other texts of
    its set: the set's own texts (in-domain, memory) can only give a word the contexts its set holds, a general
    store gives them either way. Per form-only system, each context system against it in each bin. {} where the
    files predate the per-item count."""
    if pooled.recurrence is None:
        return {}
    out: Dict[str, Dict[str, Any]] = {}
    for form, entry in context_systems(pooled.systems).items():
        table = pooled.with_systems([form, *entry])
        bins = compare_in_bins(table, pooled.recurrence, RECURRENCE_BINS, form, strata, n_resamples, seed)
        out[form] = {s: {label: figures[s] for label, figures in bins.items()} for s in entry}
    return out


def pool_files(
    metrics_dirs: Sequence[PathLike], output_dir: PathLike, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Dict[str, Any]:
    """Read the per-item files, pool them, write OUTPUT/pooled.json and OUTPUT/pooled.md."""
    start = time.time()
    paths = discover_sets(metrics_dirs)
    result = pool_tables({name: read_predictions(path, name) for name, path in paths.items()}, n_resamples, seed)
    result["files"] = {name: str(path) for name, path in paths.items()}
    result["seconds"] = round(time.time() - start, 2)
    out = Path(output_dir)
    write_json_atomic(out / "pooled.json", result, overwrite=True)
    with atomic_path(out / "pooled.md", overwrite=True) as tmp:
        tmp.write_text("\n".join(pooled_markdown(result)) + "\n", encoding="utf8")
    return result


# ---------------------------------------------------------------------------
# Markdown


def comparison_cells(figures: Mapping[str, Any]) -> List[str]:
    """n, accuracy %, Δ accuracy [CI], McNemar p (wins / losses), mean log p, Δ log p [CI]."""
    cells = [str(figures["n"]), f"{100 * figures['accuracy']:.1f}"]
    if "accuracy_diff" not in figures:  # the baseline
        return cells + ["", "", f"{figures['mean_log_prob']:.3f}", ""]
    test = figures["mcnemar"]
    return cells + [
        format_ci(figures["accuracy_diff"], 100, 1, star=True),
        f"{test['p_value']:.3g} ({test['only_a']} / {test['only_b']})",
        f"{figures['mean_log_prob']:.3f}",
        format_ci(figures["log_prob_diff"], 1, 3, star=True),
    ]


HEADER = (
    "n",
    "accuracy %",
    "Δ accuracy, points [95% CI]",
    "McNemar p (wins / losses)",
    "mean log p(gold)",
    "Δ log p(gold) [95% CI]",
)


def pooled_markdown(result: Mapping[str, Any], per_set: bool = True) -> List[str]:
    """The pooled table, then (optionally) one row per set and system."""
    name = system_title
    strata = "; ".join(f"{', '.join(sets)}" for sets in result["strata"].values())
    lines = [
        f"Pooled over {len(result['sets'])} rarified sets: {result['n_items']} items from "
        f"{result['n_clusters']} distinct test texts.",
        "",
        *markdown_table(
            ("system", *HEADER), ([name(s), *comparison_cells(result["pooled"][s])] for s in result["systems"])
        ),
    ]
    lines += [
        "",
        f"Paired bootstrap ({result['n_resamples']} resamples): test texts resampled as clusters (all their "
        f"rarified versions together), stratified by groups of sets sharing texts ({strata}). * = the CI "
        "excludes 0. The McNemar p treats pooled items as independent (optimistic across seeds). Log p(gold) "
        "is natural log, p clipped at 1e-6.",
    ]
    left_out = result.get("systems_left_out") or {}
    if left_out:
        lines += [
            "",
            "Left out, not in every set (evaluate those sets again to pool them): "
            + "; ".join(f"{name(system)} (missing in {', '.join(sets)})" for system, sets in left_out.items())
            + ".",
        ]
    if result.get("contexts_over_form"):
        lines += [
            "",
            "What the contexts add to the spelling alone (the same injection's form-only system as the "
            "baseline, same items and resamples):",
            "",
            *markdown_table(
                ("system", "against", *HEADER),
                (
                    [name(s), name(form), *comparison_cells(figures)]
                    for form, systems in result["contexts_over_form"].items()
                    for s, figures in systems.items()
                ),
                text_columns=2,
            ),
        ]
    if result.get("memory_by_position"):
        lines += [
            "",
            "The streaming memory over a stream: doc + memory against doc alone, by how many texts of its set "
            "came before the item (the memory starts empty for each set and system):",
            "",
            *markdown_table(
                ("system", "texts seen before", *HEADER),
                (
                    [name(s), label, *comparison_cells(figures)]
                    for s, entry in result["memory_by_position"].items()
                    for label, figures in entry["bins"].items()
                ),
                text_columns=2,
            ),
        ]
    if result.get("contexts_by_recurrence"):
        lines += [
            "",
            "What the contexts add to the spelling alone, by how many other texts of its set hold one of the "
            "item's substitutes (what the set's own texts can give a substitute beyond its own text):",
            "",
            *markdown_table(
                ("system", "against", "other texts", *HEADER),
                (
                    [name(s), name(form), label, *comparison_cells(figures)]
                    for form, systems in result["contexts_by_recurrence"].items()
                    for s, by_bin in systems.items()
                    for label, figures in by_bin.items()
                ),
                text_columns=3,
            ),
        ]
    if per_set:
        lines += [
            "",
            *markdown_table(
                ("set", "system", *HEADER),
                (
                    [set_name, name(s), *comparison_cells(figures[s])]
                    for set_name, figures in result["per_set"].items()
                    for s in result["systems"]
                    if s in figures
                ),
                text_columns=2,
            ),
        ]
    return lines


def load_pooled(path: PathLike) -> Dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ValueError(Errors.E348.format(path=path))
    return json.loads(path.read_text(encoding="utf8"))


__all__ = [
    "comparison_cells",
    "discover_sets",
    "load_pooled",
    "pool_files",
    "pool_tables",
    "pooled_markdown",
    "strata_of",
]
