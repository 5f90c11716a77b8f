"""compare-runs: two runs of one evaluation, paired on the items both scored."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy
import pytest
from typer.testing import CliRunner

from bertram_experiments.app import app
from bertram_experiments.comparison.runs import (
    compare_downstream_runs,
    compare_intrinsic_runs,
    compare_synonym_runs,
    run_kind,
)
from spacy_bertram.fileio import mark_json

from tests.util import synonym_file


def test_synonym_runs_differ_by_what_changed_on_the_shared_pairs(tmp_path):
    before = [
        ("synonym", f"rare{i}", f"word{i % 4}", {"subword_mean": (0.1, 50), "bertram_form": (0.2, 20 if i % 2 else 5)})
        for i in range(8)
    ]
    after = [
        (src, s, o, {"subword_mean": scores["subword_mean"], "bertram_form": (0.25, 5)})
        for src, s, o, scores in before[:6]
    ] + [("synonym", "only-after", "word9", {"bertram_form": (0.9, 1)})]
    result = compare_synonym_runs(
        synonym_file(tmp_path / "a.json", before), synonym_file(tmp_path / "b.json", after), n_resamples=200
    )
    assert result["pairs_shared"] == 6 and result["sources"]["synonym"]["clusters"] == 4
    form = result["sources"]["synonym"]["systems"]["bertram_form"]
    assert form["cosine_diff"]["estimate"] == pytest.approx(0.05) and form["cosine_diff"]["low"] == pytest.approx(0.05)
    # hits@10 before: pairs 0, 2, 4 (rank 5) of the six shared; after: all six
    assert form["before"]["hits_at_10"] == pytest.approx(0.5) and form["hits_diff"]["estimate"] == pytest.approx(0.5)
    same = result["sources"]["synonym"]["systems"]["subword_mean"]
    assert same["cosine_diff"]["estimate"] == 0 and same["cosine_diff"]["high"] == 0


def evaluate_dir(path: Path, correct_of, p_gold_of, seed_sets=()) -> Path:
    """An evaluate output: predictions.jsonl of 2 systems over 6 items (2 per text), and metrics.json."""
    for name in ("", *seed_sets):
        directory = path / name
        directory.mkdir(parents=True, exist_ok=True)
        rows = [
            {
                "id": f"item-{i}",
                "label": "a",
                "candidate": f"text-{i // 2}",
                "correct": {s: bool(correct_of(s, i)) for s in ("baseline", "bertram_recentre_form")},
                "p_gold": {s: float(p_gold_of(s, i)) for s in ("baseline", "bertram_recentre_form")},
            }
            for i in range(6)
        ]
        (directory / "predictions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf8")
    (path / "metrics.json").write_text(json.dumps({"seed_sets": list(seed_sets)}), encoding="utf8")
    return path


def test_downstream_runs_are_paired_item_by_item_over_the_seed_sets(tmp_path):
    before = evaluate_dir(tmp_path / "before", lambda s, i: i < 3, lambda s, i: 0.5, seed_sets=("seed-1",))
    after = evaluate_dir(
        tmp_path / "after",
        lambda s, i: i < 3 or (s != "baseline" and i == 3),
        lambda s, i: 0.5 if s == "baseline" else 0.25,
        seed_sets=("seed-1",),
    )
    result = compare_downstream_runs([before], [after], n_resamples=200)
    assert result["items_shared"] == 12 and result["clusters"] == 3
    base, form = result["systems"]["baseline"], result["systems"]["bertram_recentre_form"]
    assert base["after"]["accuracy_diff"]["estimate"] == 0
    assert form["after"]["accuracy_diff"]["estimate"] == pytest.approx(2 / 12)  # item-3 in both sets, of 12
    assert form["after"]["log_prob_diff"]["estimate"] == pytest.approx(numpy.log(0.25) - numpy.log(0.5))
    assert form["after"]["mcnemar"]["only_a"] == 2 and form["after"]["mcnemar"]["only_b"] == 0


def test_two_systems_of_two_runs_are_paired_as_one_system_of_each(tmp_path):
    """--pair BEFORE:AFTER: one kind of contexts against another, each from its own run, on the same items; a
    system a run lacks, or a pair given for runs that are not evaluate outputs, is named."""
    before = evaluate_dir(tmp_path / "before", lambda s, i: i < 3, lambda s, i: 0.5)
    after = evaluate_dir(tmp_path / "after", lambda s, i: i < 2 if s == "baseline" else i < 5, lambda s, i: 0.25)
    result = compare_downstream_runs(
        [before], [after], n_resamples=200, system_pairs=[("baseline", "bertram_recentre_form")]
    )
    assert list(result["systems"]) == ["baseline:bertram_recentre_form"]
    paired = result["systems"]["baseline:bertram_recentre_form"]["after"]
    assert paired["accuracy_diff"]["estimate"] == pytest.approx(2 / 6)  # items 3 and 4: the after system's
    assert paired["mcnemar"]["only_a"] == 2 and paired["mcnemar"]["only_b"] == 0
    with pytest.raises(ValueError, match=r"\[E435\].*'baseline:bertram_slash_doc'"):
        compare_downstream_runs([before], [after], n_resamples=20, system_pairs=[("baseline", "bertram_slash_doc")])
    runner = CliRunner()
    out = tmp_path / "out"
    command = ["compare-runs", "--before", str(before), "--after", str(after), "--output", str(out)]
    written = runner.invoke(app, [*command, "--pair", "baseline:bertram_recentre_form", "--bootstrap-resamples", "50"])
    assert written.exit_code == 0, written.output
    assert "+BERTRAM (recentre, form only) against baseline (stock textcat)" in (out / "comparison.md").read_text()
    malformed = runner.invoke(app, [*command, "--force", "--pair", "baseline"])
    assert malformed.exit_code == 1 and "[E435]" in malformed.output
    a = synonym_file(tmp_path / "a.json", [("wordnet", "x", "y", {"subword_mean": (0.1, 3)})])
    synonyms = runner.invoke(
        app, ["compare-runs", "--before", str(a), "--after", str(a), "--output", str(tmp_path / "s"), "--pair", "x:y"]
    )
    assert synonyms.exit_code == 1 and "[E436]" in synonyms.output


def test_compare_runs_writes_both_files_and_refuses_mixed_or_unknown_runs(tmp_path):
    a = synonym_file(tmp_path / "a.json", [("wordnet", "x", "y", {"subword_mean": (0.1, 3)})])
    b = synonym_file(tmp_path / "b.json", [("wordnet", "x", "y", {"subword_mean": (0.2, 30)})])
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "compare-runs",
            "--before",
            str(a),
            "--after",
            str(b),
            "--output",
            str(tmp_path / "out"),
            "--bootstrap-resamples",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
    written = json.loads((tmp_path / "out" / "comparison.json").read_text(encoding="utf8"))
    assert written["written_by"] == "compare-runs" and "Δ cosine" in (tmp_path / "out" / "comparison.md").read_text()
    assert written["sources"]["wordnet"]["systems"]["subword_mean"]["hits_diff"]["estimate"] == -1
    directory = evaluate_dir(tmp_path / "eval", lambda s, i: True, lambda s, i: 0.9)
    with pytest.raises(ValueError, match="mix kinds"):
        run_kind([a, directory])
    with pytest.raises(ValueError, match="neither a synonym-recovery or intrinsic output"):
        run_kind([tmp_path / "nothing.json"])
    two = runner.invoke(
        app,
        ["compare-runs", "--before", str(a), "--before", str(a), "--after", str(b), "--output", str(tmp_path / "out2")],
    )
    assert two.exit_code == 1 and "are compared one against one" in two.output


def intrinsic_file(path: Path, cosines, chimera_rhos, without_items=False) -> Path:
    """An intrinsic output: CRW pairs (human = pair index) with `cosines` {system: per pair}, Chimera items with
    `chimera_rhos` {system: per item}."""
    n = len(next(iter(cosines.values())))
    crw = {
        "items": [
            {
                "word": f"w{i}",
                "rare": f"rare{i}",
                "occurrence": 0,
                "human": float(i),
                "cosine": {s: c[i] for s, c in cosines.items()},
            }
            for i in range(n)
        ]
    }
    chimera = {
        "items": [
            {"file": "l2.train", "item": str(i), "rho": {s: r[i] for s, r in chimera_rhos.items()}}
            for i in range(len(next(iter(chimera_rhos.values()))))
        ]
    }
    if without_items:
        del crw["items"]
    path.write_text(json.dumps(mark_json({"sets": {"crw": crw, "chimera": chimera}}, "intrinsic")), encoding="utf8")
    return path


def test_intrinsic_runs_differ_in_rho_on_the_shared_pairs_and_items(tmp_path):
    before = intrinsic_file(
        tmp_path / "a.json",
        {"subword_mean": [0.1, 0.2, 0.3, 0.4, 0.5], "fed": [0.5, 0.4, 0.3, 0.2, 0.1]},
        {"bertram_contexts": [0.2, None, 0.4]},
    )
    after = intrinsic_file(
        tmp_path / "b.json",
        {"subword_mean": [0.1, 0.2, 0.3, 0.4, 0.5], "fed": [0.1, 0.2, 0.3, 0.4, 0.5]},
        {"bertram_contexts": [0.4, 0.9, 0.6]},
    )
    assert run_kind([before, after]) == "intrinsic"
    result = compare_intrinsic_runs(before, after, n_resamples=200)
    crw = result["sets"]["crw"]
    assert crw["n"] == 5
    fed = crw["systems"]["fed"]  # rho -1 before, +1 after: the cosines now rank the pairs as the humans do
    assert fed["before"] == pytest.approx(-1) and fed["after"] == pytest.approx(1)
    assert fed["difference"]["estimate"] == pytest.approx(2) and fed["difference"]["low"] > 0
    same = crw["systems"]["subword_mean"]["difference"]
    assert same["estimate"] == 0 and same["low"] == 0 and same["high"] == 0
    contexts = result["sets"]["chimera"]["systems"]["bertram_contexts"]  # item 1 is undefined before: left out
    assert contexts["before"] == pytest.approx(0.3) and contexts["after"] == pytest.approx(0.633333, abs=1e-5)
    runner = CliRunner()
    printed = runner.invoke(
        app,
        [
            "compare-runs",
            "--before",
            str(before),
            "--after",
            str(after),
            "--output",
            str(tmp_path / "out"),
            "--bootstrap-resamples",
            "50",
        ],
    )
    assert printed.exit_code == 0, printed.output
    assert "Δ rho" in printed.output and "| crw | fed | 5 | -1.000 | 1.000 | +2.000" in printed.output
    old = intrinsic_file(tmp_path / "old.json", {"fed": [0.1, 0.2]}, {"bertram_contexts": [0.1]}, without_items=True)
    with pytest.raises(ValueError, match="run `python -m bertram_experiments intrinsic` again"):
        compare_intrinsic_runs(old, after)


def curve_runs(directory: Path, bertram_hits, task: str = "ner", ids=None) -> Path:
    """A label-curve training directory: 2 folds x sizes 10, 20 x seeds 0, 1, each run 4 test tweets with one gold
    entity each; stock finds the entity of tweet 0 only, bertram those `bertram_hits(fold, size, seed)` names."""
    for fold in (0, 1):
        for size in (10, 20):
            for seed in (0, 1):
                run = directory / f"fold-{fold}" / "draw-0" / f"n-{size}" / f"seed-{seed}"
                run.mkdir(parents=True)
                record = {"identity": {"task": task}, "fold": fold, "draw": 0, "size": size, "seed": seed}
                (run / "run.json").write_text(json.dumps(record), encoding="utf8")
                hits = bertram_hits(fold, size, seed)
                rows = [
                    {
                        "id": f"{fold}-{i}" if ids is None else ids[i],
                        "gold": [[0, 1, "person"]],
                        "rare": [0] if i < 2 else [],
                        "pred": {
                            "stock": [[0, 1, "person"]] if i == 0 else [],
                            "bertram": [[0, 1, "person"]] if i in hits else [],
                        },
                    }
                    for i in range(4)
                ]
                (run / "predictions.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n", encoding="utf8")
    return directory


def test_two_label_curves_are_paired_run_by_run_and_text_by_text(tmp_path):
    """F1 from TP / FP / FN summed over texts and runs: stock finds 1 entity of 4 in both curves (Δ 0), the
    with-bertram arm 1 before and 2 after at size 10 (F1 0.4 -> 2/3), the same at size 20."""
    from bertram_experiments.label_curve.compare import compare_curve_runs

    before = curve_runs(tmp_path / "general", lambda fold, size, seed: {0})
    after = curve_runs(tmp_path / "indomain", lambda fold, size, seed: {0, 1} if size == 10 else {0})
    assert run_kind([before, after]) == "label-curve"
    result = compare_curve_runs(before, after, n_resamples=200)
    assert result["runs_shared"] == 8 and [p["size"] for p in result["points"]] == [10, 20]
    small, large = result["points"]
    assert small["all"]["stock"]["delta"]["estimate"] == 0.0 and small["all"]["stock"]["n"] == 8
    assert small["all"]["bertram"]["before"] == pytest.approx(0.4)  # TP 1, FN 3 per run
    assert small["all"]["bertram"]["after"] == pytest.approx(2 / 3)  # TP 2, FN 2
    assert small["all"]["bertram"]["delta"]["estimate"] == pytest.approx(2 / 3 - 0.4)
    assert small["rare"]["bertram"]["after"] == pytest.approx(1.0) and small["rare"]["bertram"]["n"] == 4
    assert large["all"]["bertram"]["delta"]["estimate"] == 0.0
    runner = CliRunner()
    args = ["compare-runs", "--before", str(before), "--after", str(after), "--output", str(tmp_path / "out")]
    result = runner.invoke(app, [*args, "--bootstrap-resamples", "50"])
    assert result.exit_code == 0, result.output
    assert "| 10 | all | bertram | 8 | 40.0 | 66.7 |" in (tmp_path / "out" / "comparison.md").read_text()
    unfinished = tmp_path / "unfinished"
    shutil.copytree(after, unfinished)
    shutil.rmtree(unfinished / "fold-1" / "draw-0" / "n-20" / "seed-1")  # a curve still running
    partial = compare_curve_runs(before, unfinished, n_resamples=50)
    assert [p["size"] for p in partial["points"]] == [10] and partial["sizes_left_out"] == [20]
    other = curve_runs(tmp_path / "other", lambda fold, size, seed: {0}, ids=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match=r"\[E434\].*predicted other test texts"):
        compare_curve_runs(before, other)
    textcat = curve_runs(tmp_path / "textcat", lambda fold, size, seed: {0}, task="textcat")
    with pytest.raises(ValueError, match=r"\[E429\].*a ner curve and a textcat curve"):
        compare_curve_runs(before, textcat)
