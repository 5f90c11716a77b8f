"""A paired comparison of two runs of the same evaluation.

Two models each measured against the stock baseline give two CIs that overlap long before
the models are the same: each CI carries the whole item-to-item spread. Scored on the same
items with the same resamples, the difference between the runs has a CI of its own, narrow
where the runs agree item by item. `before` is the reference; every figure is after - before.

- synonym recovery: the pairs both runs scored (source, rare word, original), each system's
  cosine and hits@10 per pair; original words resampled as clusters (as `synonym-recovery`).
- downstream (`evaluate` outputs, pooled as `pool` pools them, given in the same order for both
  runs): the items both runs predicted, each system's accuracy and log p(gold); test texts
  resampled as clusters within their strata.
- intrinsic (`intrinsic` JSON files): per set, the pairs (CRW, Card-660) or items (Chimeras) both
  runs scored, each system's Spearman rho (Chimeras: the mean of the items' rhos); pairs or items
  resampled.

The CI is over items only: two training runs of one recipe also differ (docs/evaluation.md
measures by how much), so a model comparison is read against that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from spacy_bertram.project_support import PathLike, output_mark
from ..downstream.paired import DEFAULT_RESAMPLES, ItemTable, compare_to_baseline, read_prediction_rows, table_from_rows
from ..downstream.pooling import comparison_cells, discover_sets, strata_of
from ..bootstrap import paired_difference
from ..errors import Errors
from ..intrinsic.intrinsic import item_key, item_statistic, item_systems
from ..label_curve.compare import is_curve_runs
from ..synonyms.recovery import compare as compare_synonym_scores
from ..system_names import system_title
from ..tables import format_ci, markdown_table

BEFORE, AFTER = "before", "after"


def run_kind(paths: Sequence[PathLike]) -> str:
    """ "synonyms" for `synonym-recovery` JSON files, "intrinsic" for `intrinsic` JSON files, "downstream" for
    `evaluate` output directories, "label-curve" for `label-curve` training directories."""
    kinds = set()
    for path in map(Path, paths):
        if path.is_dir() and (path / "predictions.jsonl").is_file():
            kinds.add("downstream")
        elif path.is_file() and output_mark(path) == "synonym-recovery":
            kinds.add("synonyms")
        elif path.is_file() and output_mark(path) == "intrinsic":
            kinds.add("intrinsic")
        elif is_curve_runs(path):
            kinds.add("label-curve")
        else:
            raise ValueError(Errors.E428.format(path=path))
    if len(kinds) != 1:
        raise ValueError(Errors.E429.format(kinds=", ".join(sorted(kinds))))
    return kinds.pop()


# -- synonym recovery ---------------------------------------------------------------------------------


def pair_scores(path: PathLike) -> Dict[Tuple[str, str, str], Dict[str, Tuple[float, int]]]:
    """(source, rare word, original) -> system -> (cosine, rank), from a `synonym-recovery` output."""
    with open(path, encoding="utf8") as file_:
        return scores_of_pairs(json.load(file_)["pairs"])


def scores_of_pairs(rows: Sequence[Mapping[str, Any]]) -> Dict[Tuple[str, str, str], Dict[str, Tuple[float, int]]]:
    """(source, rare word, original) -> system -> (cosine, rank), from the pair rows `synonym-recovery` writes."""
    return {
        (r["source"], r["substitute"], r["original"]): {
            s: (float(c), int(r["rank"][s])) for s, c in r["cosine"].items()
        }
        for r in rows
    }


def paired_system_difference(
    first: Mapping[tuple, Mapping[str, Tuple[float, int]]],
    second: Mapping[tuple, Mapping[str, Tuple[float, int]]],
    keys: Sequence[tuple],
    system: str,
    n_resamples: int,
    seed: int,
) -> Dict[str, Any]:
    """One system's figures in both runs on the same pairs, and second - first (cosine, hits@10) with CIs
    from one paired bootstrap over the original words."""
    scores = {
        f"{BEFORE}:{system}": _columns([first[k][system] for k in keys]),
        f"{AFTER}:{system}": _columns([second[k][system] for k in keys]),
    }
    clusters = [key[2].lower() for key in keys]
    compared = compare_synonym_scores(scores, clusters, n_resamples, seed, baseline=f"{BEFORE}:{system}")
    after_figures = compared[f"{AFTER}:{system}"]
    return {
        "n": len(keys),
        BEFORE: compared[f"{BEFORE}:{system}"],
        AFTER: after_figures,
        "cosine_diff": after_figures["gain"],
        "hits_diff": after_figures["hits_gain"],
    }


def compare_synonym_runs(
    before: PathLike, after: PathLike, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Dict[str, Any]:
    """Per pair source and system both runs score: after - before in mean cosine and hits@10."""
    first, second = pair_scores(before), pair_scores(after)
    shared = sorted(first.keys() & second.keys())
    if not shared:
        raise ValueError(Errors.E430.format(before=before, after=after))
    sources: Dict[str, Any] = {}
    for source in dict.fromkeys(key[0] for key in shared):
        keys = [key for key in shared if key[0] == source]
        systems = [s for s in first[keys[0]] if all(s in first[k] and s in second[k] for k in keys)]
        per_system = {
            system: paired_system_difference(first, second, keys, system, n_resamples, seed) for system in systems
        }
        sources[source] = {"n": len(keys), "clusters": len({key[2].lower() for key in keys}), "systems": per_system}
    return {
        "kind": "synonyms",
        BEFORE: str(before),
        AFTER: str(after),
        "pairs_before": len(first),
        "pairs_after": len(second),
        "pairs_shared": len(shared),
        "sources": sources,
        "n_resamples": n_resamples,
        "seed": seed,
    }


def _columns(scores: Sequence[Tuple[float, int]]) -> Tuple[np.ndarray, np.ndarray]:
    return np.asarray([c for c, _ in scores]), np.asarray([r for _, r in scores])


# -- intrinsic -----------------------------------------------------------------------------------------


def _intrinsic_items(path: PathLike) -> Dict[str, Dict[tuple, Dict[str, Any]]]:
    """set -> item key -> row, from an `intrinsic` output."""
    with open(path, encoding="utf8") as file_:
        sets = json.load(file_)["sets"]
    out: Dict[str, Dict[tuple, Dict[str, Any]]] = {}
    for name, data in sets.items():
        if "items" not in data:
            raise ValueError(Errors.E432.format(path=path, set=name))
        out[name] = {item_key(name, row): row for row in data["items"]}
    return out


def compare_intrinsic_runs(
    before: PathLike, after: PathLike, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> Dict[str, Any]:
    """Per set and system both runs score: after - before in Spearman rho on the items both scored."""
    first, second = _intrinsic_items(before), _intrinsic_items(after)
    sets: Dict[str, Any] = {}
    for name in [n for n in first if n in second]:
        keys = sorted(first[name].keys() & second[name].keys())
        if len(keys) < 2:
            continue
        a_rows, b_rows = [first[name][k] for k in keys], [second[name][k] for k in keys]
        per_system = {}
        for system in item_systems(name, a_rows + b_rows):
            statistic, old = item_statistic(name, a_rows, system)
            _, new = item_statistic(name, b_rows, system)
            per_system[system] = {
                BEFORE: statistic(old),
                AFTER: statistic(new),
                "difference": paired_difference(statistic, new, old, n_resamples=n_resamples, seed=seed).to_dict(),
            }
        sets[name] = {
            "n": len(keys),
            "items_before": len(first[name]),
            "items_after": len(second[name]),
            "systems": per_system,
        }
    if not sets:
        raise ValueError(Errors.E430.format(before=before, after=after))
    return {
        "kind": "intrinsic",
        BEFORE: str(before),
        AFTER: str(after),
        "sets": sets,
        "n_resamples": n_resamples,
        "seed": seed,
    }


# -- downstream -----------------------------------------------------------------------------------------


def pooled_items(metrics_dirs: Sequence[PathLike]) -> Tuple[ItemTable, List[str]]:
    """Every item of the `evaluate` outputs (and their seed sets), and its place, "k/seed-set/id" for the k-th
    directory given: two runs align by the order they are given in, whatever their directories are named."""
    tables, places = [], []
    for position, directory in enumerate(metrics_dirs):
        for set_name, path in discover_sets([directory]).items():
            rows = read_prediction_rows(path)
            tables.append(table_from_rows(rows, set_name))
            seed_set = set_name[len(Path(directory).resolve().name) :]
            places.extend(f"{position}{seed_set}/{row['id']}" for row in rows)
    return ItemTable.concat(tables), places


def compare_downstream_runs(
    before: Sequence[PathLike],
    after: Sequence[PathLike],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    system_pairs: Sequence[Tuple[str, str]] = (),
) -> Dict[str, Any]:
    """Per system both runs have (or per (before system, after system) of `system_pairs`, to compare two systems of two
    runs, such as one kind of contexts with another): after - before in accuracy and log p(gold) on the items both
    predicted."""
    (first, first_ids), (second, second_ids) = pooled_items(before), pooled_items(after)
    position = {item: i for i, item in enumerate(second_ids)}
    pairs = [(i, position[item]) for i, item in enumerate(first_ids) if item in position]
    if not pairs:
        raise ValueError(Errors.E430.format(before=", ".join(map(str, before)), after=", ".join(map(str, after))))
    a_rows, b_rows = (np.asarray(index) for index in zip(*pairs))
    first, second = first.subset(a_rows), second.subset(b_rows)
    strata = strata_of(first)
    unknown = [f"{a}:{b}" for a, b in system_pairs if a not in first.systems or b not in second.systems]
    if unknown:
        raise ValueError(Errors.E435.format(pairs=unknown, before=first.systems, after=second.systems))
    compared_pairs = list(system_pairs) or [(s, s) for s in first.systems if s in second.systems]
    per_system = {}
    for system_before, system_after in compared_pairs:
        names = (f"{BEFORE}:{system_before}", f"{AFTER}:{system_after}")
        table = ItemTable(
            list(names),
            first.sets,
            first.clusters,
            dict(zip(names, (first.correct[system_before], second.correct[system_after]))),
            dict(zip(names, (first.p_gold[system_before], second.p_gold[system_after]))),
        )
        compared = compare_to_baseline(table, baseline=names[0], n_resamples=n_resamples, seed=seed, strata=strata)
        key = system_after if system_before == system_after else f"{system_before}:{system_after}"
        per_system[key] = {BEFORE: compared[names[0]], AFTER: compared[names[1]]}
    return {
        "kind": "downstream",
        BEFORE: [str(p) for p in before],
        AFTER: [str(p) for p in after],
        "items_before": len(first_ids),
        "items_after": len(second_ids),
        "items_shared": len(pairs),
        "clusters": int(len(np.unique(first.clusters.astype(str)))),
        "systems": per_system,
        "n_resamples": n_resamples,
        "seed": seed,
    }


# -- the table ------------------------------------------------------------------------------------------


def curve_comparison_markdown(result: Mapping[str, Any]) -> List[str]:
    """One row per size, subset and system: the measure before and after, and after - before with both CIs."""
    rows = [
        [
            point["size"],
            subset,
            system,
            figures["n"],
            f"{100 * figures[BEFORE]:.1f}",
            f"{100 * figures[AFTER]:.1f}",
            format_ci(figures["delta"]["texts"], 100, 1, star=True),
            format_ci(figures["delta"]["texts_and_seeds"], 100, 1, star=True),
        ]
        for point in result["points"]
        for subset in ("all", "rare")
        for system, figures in point[subset].items()
    ]
    measure = result["measure"]
    header = (
        "labelled texts",
        "subset",
        "system",
        "n",
        f"{measure} before",
        "after",
        "Δ, points [95% CI over texts]",
        "Δ [95% CI over texts and runs]",
    )
    note = (
        f"{result['runs_shared']} runs (fold, draw, size, seed) finished in both curves; test texts drawn within their "
        f"fold, and with them each fold's runs ({result['n_resamples']} resamples). rare: the entities (texts) with a "
        "token the pipeline calls rare."
    )
    if result.get("sizes_left_out"):
        sizes = ", ".join(map(str, result["sizes_left_out"]))
        note += f" Left out: {sizes} labelled texts, whose folds do not both have the same finished runs."
    return [*markdown_table(header, rows, text_columns=3), "", note + " * = the CI excludes 0."]


def pair_title(key: str) -> str:
    """A system both runs have, or "BEFORE:AFTER" for two systems compared: "after's title against before's"."""
    system_before, _, system_after = key.rpartition(":")
    if not system_before:
        return system_title(key)
    return f"{system_title(system_after)} against {system_title(system_before)}"


def comparison_markdown(result: Mapping[str, Any]) -> List[str]:
    """One row per system (and pair source): before, after, and after - before with its CI."""
    if result["kind"] == "synonyms":
        rows = [
            [
                source,
                system,
                figures["n"],
                f"{figures[BEFORE]['mean_cosine']:.3f}",
                f"{figures[AFTER]['mean_cosine']:.3f}",
                format_ci(figures["cosine_diff"], 1, 3, star=True),
                f"{100 * figures[BEFORE]['hits_at_10']:.1f}",
                f"{100 * figures[AFTER]['hits_at_10']:.1f}",
                format_ci(figures["hits_diff"], 100, 1, star=True),
            ]
            for source, cell in result["sources"].items()
            for system, figures in cell["systems"].items()
        ]
        header = (
            "pairs",
            "system",
            "n",
            "cosine before",
            "after",
            "Δ cosine [95% CI]",
            "hits@10 % before",
            "after",
            "Δ hits@10, points [95% CI]",
        )
        note = (
            f"{result['pairs_shared']} pairs scored by both runs; original words resampled as clusters "
            f"({result['n_resamples']} resamples)."
        )
        return [*markdown_table(header, rows, text_columns=2), "", note + " * = the CI excludes 0."]
    if result["kind"] == "label-curve":
        return curve_comparison_markdown(result)
    if result["kind"] == "intrinsic":
        rows = [
            [
                name,
                system,
                cell["n"],
                f"{figures[BEFORE]:.3f}",
                f"{figures[AFTER]:.3f}",
                format_ci(figures["difference"], 1, 3, star=True),
            ]
            for name, cell in result["sets"].items()
            for system, figures in cell["systems"].items()
        ]
        header = ("set", "system", "n", "rho before", "after", "Δ rho [95% CI]")
        note = (
            f"Pairs (Chimeras: items) scored by both runs, resampled ({result['n_resamples']} resamples); "
            "Chimeras' rho is the mean of the items' rhos."
        )
        return [*markdown_table(header, rows, text_columns=2), "", note + " * = the CI excludes 0."]
    rows = [
        [pair_title(system), *comparison_cells(figures[AFTER]), f"{100 * figures[BEFORE]['accuracy']:.1f}"]
        for system, figures in result["systems"].items()
    ]
    header = (
        "system",
        "n",
        "accuracy % after",
        "Δ accuracy, points [95% CI]",
        "McNemar p (wins / losses)",
        "mean log p(gold) after",
        "Δ log p(gold) [95% CI]",
        "accuracy % before",
    )
    note = (
        f"{result['items_shared']} items predicted by both runs, {result['clusters']} test texts resampled as "
        f"clusters within their strata ({result['n_resamples']} resamples)."
    )
    return [*markdown_table(header, rows, text_columns=1), "", note + " * = the CI excludes 0."]


__all__ = [
    "compare_downstream_runs",
    "compare_intrinsic_runs",
    "compare_synonym_runs",
    "comparison_markdown",
    "curve_comparison_markdown",
    "paired_system_difference",
    "run_kind",
    "scores_of_pairs",
]
