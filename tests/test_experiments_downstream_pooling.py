"""bertram_experiments/downstream/pooling.py: pooling per-set outputs and the strata of shared texts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bertram_experiments.downstream.paired import ItemTable
from bertram_experiments.downstream.pooling import discover_sets, pool_files, pool_tables, strata_of

from tests.util import SYSTEMS, _two_sets, table


def test_pooling_two_files_gives_the_concatenated_figures(tmp_path: Path):
    _two_sets(tmp_path)
    sets = discover_sets([tmp_path / "a", tmp_path / "b", tmp_path / "b" / ".." / "a"])
    assert list(sets) == ["a", "a/seed-1", "b"]  # a directory given twice counts once
    result = pool_files([tmp_path / "a", tmp_path / "b"], tmp_path / "pooled", n_resamples=1000)
    pooled = result["pooled"]
    # 6 items: baseline right on t1(a), u2, v1 = 3/6; slash right on all but v1? v1 slash "neg" -> right: 6/6
    assert result["n_items"] == 6 and result["sets"] == {"a": 3, "a/seed-1": 2, "b": 1}
    assert pooled["baseline"]["accuracy"] == pytest.approx(3 / 6)
    assert pooled["bertram_slash"]["accuracy"] == pytest.approx(6 / 6)
    assert pooled["bertram_slash"]["mcnemar"]["only_a"] == 3 and pooled["bertram_slash"]["mcnemar"]["only_b"] == 0
    logs = {
        s: np.log([0.9, 0.4, 0.3, 0.2, 0.9, 0.7]) if s == "baseline" else np.log([0.8, 0.6, 0.7, 0.6, 0.8, 0.5])
        for s in SYSTEMS
    }
    assert pooled["baseline"]["mean_log_prob"] == pytest.approx(logs["baseline"].mean())
    assert pooled["bertram_slash"]["log_prob_diff"]["estimate"] == pytest.approx(
        (logs["bertram_slash"] - logs["baseline"]).mean()
    )
    # t1 is in "a" and "a/seed-1": those two sets are one stratum, 5 distinct texts in all
    assert result["strata"] == {"a": ["a", "a/seed-1"], "b": ["b"]}
    assert result["n_clusters"] == 5 and pooled["bertram_slash"]["clusters"] == 5
    assert result["per_set"]["a/seed-1"]["bertram_slash"]["accuracy"] == 1.0
    assert json.loads((tmp_path / "pooled" / "pooled.json").read_text())["n_items"] == 6
    assert (tmp_path / "pooled" / "pooled.md").read_text().startswith("Pooled over 3 rarified sets: 6 items")
    with pytest.raises(ValueError, match=r"\[E345\].*evaluate step"):
        discover_sets([tmp_path / "missing"])


def test_strata_join_sets_that_share_texts_only():
    t = ItemTable.concat(
        [
            table("x", ["c1", "c2"], [1, 1], [1, 1], [0.9, 0.9], [0.9, 0.9]),
            table("y", ["c3"], [1], [1], [0.9], [0.9]),
            table("z", ["c3", "c4"], [1, 1], [1, 1], [0.9, 0.9], [0.9, 0.9]),
            table("w", ["c2"], [1], [1], [0.9], [0.9]),
        ]
    )
    assert strata_of(t).tolist() == ["x", "x", "y", "y", "y", "x"]
    res = pool_tables({"x": t.subset(t.sets == "x"), "w": t.subset(t.sets == "w")}, n_resamples=100)
    assert res["strata"] == {"x": ["x", "w"]} and res["n_clusters"] == 2


def test_the_contexts_are_compared_with_the_spelling_alone_on_the_same_items():
    """Each context system against its injection's form-only system: a hand-computed toy of 4 texts."""
    correct = {
        "baseline": [0, 0, 0, 0],
        "bertram_slash_form": [1, 0, 0, 1],
        "bertram_slash_doc": [1, 1, 0, 1],
        "bertram_slash_store": [0, 0, 0, 1],
        "bertram_recentre_form": [0, 0, 0, 0],
    }
    p_gold = {s: np.full(4, 0.5) for s in correct}
    toy = ItemTable(
        list(correct),
        np.array(["a"] * 4),
        np.array(["t1", "t2", "t3", "t4"]),
        {s: np.array(v, dtype=bool) for s, v in correct.items()},
        p_gold,
    )
    result = pool_tables({"a": toy}, n_resamples=500)
    against = result["contexts_over_form"]
    assert set(against) == {"bertram_slash_form"}  # recentre has no context system to compare
    assert against["bertram_slash_form"]["bertram_slash_doc"]["accuracy_diff"]["estimate"] == pytest.approx(0.25)
    assert against["bertram_slash_form"]["bertram_slash_store"]["accuracy_diff"]["estimate"] == pytest.approx(-0.25)
    assert against["bertram_slash_form"]["bertram_slash_doc"]["mcnemar"]["only_a"] == 1
    from bertram_experiments.downstream.pooling import pooled_markdown

    text = "\n".join(pooled_markdown(result))
    assert "What the contexts add to the spelling alone" in text and "+25.0" in text


def test_the_memory_is_compared_with_the_doc_by_the_texts_seen_before():
    """Doc + memory against doc alone in bins of an item's position in its set: two sets of 30 items, the memory
    winning only past the 25th item of each set."""
    from bertram_experiments.downstream.pooling import memory_by_position, positions_in_sets, pooled_markdown

    sets = np.array(["a"] * 30 + ["b"] * 30)
    assert list(positions_in_sets(np.array(["a", "b", "a", "a", "b"]))) == [0, 0, 1, 2, 1]
    doc = np.zeros(60, dtype=bool)
    memory = doc.copy()
    memory[[26, 28, 57]] = True  # positions 26, 28 of set a and 27 of set b
    toy = ItemTable(
        ["baseline", "bertram_slash_doc", "bertram_slash_memory", "bertram_recentre_memory"],
        sets,
        np.array([f"t{i}" for i in range(60)]),
        {"baseline": doc, "bertram_slash_doc": doc, "bertram_slash_memory": memory, "bertram_recentre_memory": memory},
        {
            s: np.full(60, 0.5)
            for s in ("baseline", "bertram_slash_doc", "bertram_slash_memory", "bertram_recentre_memory")
        },
    )
    result = memory_by_position(toy, np.array(["a"] * 60, dtype=object), n_resamples=200)
    assert set(result) == {"bertram_slash_memory"}  # recentre has no doc system here
    bins = result["bertram_slash_memory"]["bins"]
    assert list(bins) == ["0-24", "25-99"]  # no item at 100 or more
    assert bins["0-24"]["n"] == 50 and bins["0-24"]["accuracy_diff"]["estimate"] == 0
    assert bins["25-99"]["n"] == 10 and bins["25-99"]["accuracy_diff"]["estimate"] == pytest.approx(3 / 10)
    text = "\n".join(pooled_markdown(pool_tables({"a": toy.subset(sets == "a"), "b": toy.subset(sets == "b")}, 200)))
    assert "The streaming memory over a stream" in text and "| 25-99 | 10 |" in text


def test_the_contexts_are_split_by_how_many_other_texts_hold_the_substitute(tmp_path: Path):
    """Each context system against the spelling alone, in bins of the items' substitute recurrence (0, 1-2, 3+),
    read from predictions.jsonl; files without the count give no such table."""
    from bertram_experiments.downstream.paired import RECURRENCE_KEY, read_predictions, table_from_rows
    from bertram_experiments.downstream.pooling import pooled_markdown

    recurrence = np.array([0] * 10 + [1, 2] * 5 + [3, 7] * 5)
    form = np.zeros(30, dtype=bool)
    indomain = form.copy()
    indomain[[20, 21, 22, 23, 24, 25]] = True  # wins only where the substitute recurs in 3+ other texts
    store = form.copy()
    store[[0, 10, 20]] = True  # one win in every bin
    correct = {"baseline": form, "bertram_recentre_form": form, "bertram_recentre_indomain": indomain}
    correct["bertram_recentre_store"] = store
    toy = ItemTable(
        list(correct),
        np.array(["a"] * 30, dtype=object),
        np.array([f"t{i}" for i in range(30)], dtype=object),
        correct,
        {s: np.full(30, 0.5) for s in correct},
        recurrence,
    )
    result = pool_tables({"a": toy}, n_resamples=200)
    split = result["contexts_by_recurrence"]["bertram_recentre_form"]
    assert list(split) == ["bertram_recentre_indomain", "bertram_recentre_store"]
    assert list(split["bertram_recentre_indomain"]) == ["0", "1-2", "3+"]
    assert [split["bertram_recentre_indomain"][b]["n"] for b in ("0", "1-2", "3+")] == [10, 10, 10]
    assert [split["bertram_recentre_indomain"][b]["accuracy_diff"]["estimate"] for b in ("0", "1-2", "3+")] == [
        0,
        0,
        pytest.approx(0.6),
    ]
    assert [split["bertram_recentre_store"][b]["accuracy_diff"]["estimate"] for b in ("0", "1-2", "3+")] == [
        pytest.approx(0.1)
    ] * 3
    text = "\n".join(pooled_markdown(result))
    assert "by how many other texts of its set hold" in text and "| 3+ | 10 |" in text
    # the count travels through predictions.jsonl; a file from before it gives no split
    rows = [{"id": f"i{i}", "label": "x", "p_gold": {"baseline": 0.5}, "correct": {"baseline": True}} for i in range(3)]
    assert table_from_rows(rows, "old").recurrence is None
    for i, row in enumerate(rows):
        row[RECURRENCE_KEY] = i
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert read_predictions(path).recurrence.tolist() == [0, 1, 2]
    older = toy.subset(np.arange(30) < 30)
    older.recurrence = None
    assert pool_tables({"a": toy, "b": older}, n_resamples=50)["contexts_by_recurrence"] == {}


def test_a_system_some_sets_lack_is_left_out_by_name_not_silently(tmp_path: Path):
    """A set evaluated before a system existed lacks its column: pooling keeps the systems every set has, warns
    with the system and the sets lacking it, and says so in pooled.json and pooled.md."""
    from bertram_experiments.downstream.pooling import pooled_markdown

    old = table("old", ["c1", "c2"], [1, 0], [1, 1], [0.9, 0.2], [0.9, 0.8])
    new = table("new", ["c3", "c4"], [0, 1], [1, 1], [0.3, 0.9], [0.7, 0.9])
    new.systems.append("bertram_recentre_indomain")
    new.correct["bertram_recentre_indomain"] = np.array([1, 1], bool)
    new.p_gold["bertram_recentre_indomain"] = np.array([0.8, 0.95], float)
    with pytest.warns(UserWarning, match=r"\[W017\].*bertram_recentre_indomain left out.*: old\)"):
        result = pool_tables({"old": old, "new": new}, n_resamples=100)
    assert result["systems"] == ["baseline", "bertram_slash"]
    assert result["systems_left_out"] == {"bertram_recentre_indomain": ["old"]}
    assert result["pooled"]["bertram_slash"]["n"] == 4
    text = "\n".join(pooled_markdown(result))
    assert "Left out, not in every set" in text and "(missing in old)" in text
    # the same sets without the extra column: nothing left out, no such line
    plain = pool_tables({"old": old, "new": table("new", ["c3"], [0], [1], [0.3], [0.7])}, n_resamples=100)
    assert plain["systems_left_out"] == {} and "Left out" not in "\n".join(pooled_markdown(plain))
