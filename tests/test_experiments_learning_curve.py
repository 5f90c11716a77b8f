"""bertram_experiments/learning_curve.py: points read, differences to the reference, table, plots, output rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bertram_experiments.learning_curve import format_markdown, learning_curve, write_learning_curve

from tests.util import invoke, make_point


def test_points_are_compared_with_the_reference_on_the_same_pairs(tmp_path):
    small = make_point(tmp_path, "small", 1000, 0, 0.02)
    large = make_point(tmp_path, "large", 8000, 4000, 0.07, intrinsic=False)
    curve = learning_curve([small, large], n_resamples=500)
    first, second = curve["points"]
    assert curve["reference"] == "small" and "versus_reference" not in first
    assert first["training"]["trained_words"] == 950 and second["training"]["multi_piece_share"] == 0.5
    assert first["measures"]["rarified_text_store"]["gain"]["estimate"] == pytest.approx(0.02)
    assert first["measures"]["crw_16"]["gain"]["estimate"] == pytest.approx(0.02)
    assert second["measures"]["crw_16"] is None  # no intrinsic.json: empty, not an error
    diff = second["versus_reference"]["wordnet_store"]
    assert diff["n"] == 60 and diff["difference"]["estimate"] == pytest.approx(0.05)
    assert 0.04 < diff["difference"]["low"] <= diff["difference"]["high"] < 0.06
    assert set(first["crw_by_contexts"]) == {"0", "4", "16", "32"}


def test_the_command_writes_the_table_and_plots_and_refuses_a_foreign_output(tmp_path):
    points = [str(make_point(tmp_path, n, w, o, s)) for n, w, o, s in (("a", 1000, 0, 0.01), ("b", 4000, 2000, 0.03))]
    out = tmp_path / "curve"
    result = invoke("learning-curve", *points, "--output", str(out), "--bootstrap", "200")
    assert result.exit_code == 0, result.output
    table = (out / "learning_curve.md").read_text()
    assert "| b | 3,800 | 50% | 110 |" in table and "+0.030 [+0.020, +0.040] *" in table
    assert (out / "learning_curve.png").stat().st_size > 1000 and (out / "learning_curve_contexts.png").is_file()
    assert json.loads((out / "learning_curve.json").read_text())["written_by"] == "learning-curve"
    again = invoke("learning-curve", *points, "--output", str(out), "--bootstrap", "200")
    assert again.exit_code == 0, again.output  # its own output: replaced
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "learning_curve.md").write_text("my notes")
    refused = invoke("learning-curve", *points, "--output", str(foreign))
    assert refused.exit_code != 0 and "E007" in refused.output
    assert (foreign / "learning_curve.md").read_text() == "my notes"


def test_a_directory_that_is_no_point_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"\[E398\].*train/metrics.json"):
        learning_curve([tmp_path])
    with pytest.raises(ValueError, match=r"\[E399\]"):
        learning_curve([])
    point = make_point(tmp_path, "broken", 100, 0, 0.0)
    (point / "intrinsic.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"\[E397\].*intrinsic.json"):
        write_learning_curve([point], tmp_path / "out")


def test_the_report_shows_the_curve_when_the_curve_workflow_ran(tmp_path):
    from bertram_experiments.report.report import write_report

    from tests.util import _two_sets

    metrics = tmp_path / "metrics"
    _two_sets(metrics)
    report = metrics / "report.md"
    assert "Learning curve" not in write_report(report, ["a", "b"], metrics_dir=metrics).read_text()
    point = make_point(tmp_path, "p", 1000, 0, 0.02)
    write_learning_curve([point], metrics / "curve", n_resamples=100)
    text = write_report(report, ["a", "b"], metrics_dir=metrics).read_text()
    assert "## Learning curve: what limits the vectors" in text and "| p | 950 | 0% |" in text
    assert "![gains against training words](curve/learning_curve.png)" in text


@pytest.mark.slow
def test_the_curve_script_trains_each_point_once_and_draws_the_curve(bertram_assets, tiny_bert_path, tmp_path):
    """scripts/learning_curve.sh end to end on the tiny encoder (no measures asked for): each point's
    targets and model, the curve; a second run redoes nothing."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    store = str(bertram_assets["store"])
    result = invoke(
        "targets",
        store,
        str(tmp_path / "big"),
        "--base-model",
        tiny_bert_path,
        "--min-count",
        "2",
        "--multi-piece-words",
        "20",
        "--ota-steps",
        "1",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "CURVE_WORDNET": "0",
        "PYTHONPATH": str(root),
        "CURVE_TRAIN": f"--base-model {tiny_bert_path} --mode inplace --epochs 1 1 1 --max-seq-length 24 "
        "--pool-contexts 4 --max-contexts 4 --batch-words 8 8 8",
    }
    argv = [
        "bash",
        str(root / "scripts" / "learning_curve.sh"),
        str(tmp_path / "curve"),
        store,
        str(tmp_path / "big"),
        "small:20:0",
        "mixed:20:10",
    ]
    run = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    curve = json.loads((tmp_path / "curve" / "curve" / "learning_curve.json").read_text())
    small, mixed = curve["points"]
    assert mixed["training"]["trained_words"] == small["training"]["trained_words"] + 10
    assert mixed["training"]["multi_piece_share"] > small["training"]["multi_piece_share"]
    model = tmp_path / "curve" / "mixed" / "train" / "model" / "weights.safetensors"
    stamp = model.stat().st_mtime_ns
    again = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert model.stat().st_mtime_ns == stamp  # finished points are not trained again
    bad = subprocess.run(argv[:4] + [str(tmp_path / "big"), "nocolons"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "NAME:CORPUS_WORDS:MULTI_PIECE_WORDS" in bad.stderr


def test_the_gain_per_doubling_of_the_training_words(tmp_path):
    points = [make_point(tmp_path, n, w, 0, g) for n, w, g in (("a", 1000, 0.01), ("b", 2000, 0.03), ("c", 4000, 0.05))]
    curve = learning_curve(points, n_resamples=100)
    # trained words are 95% of each: the doublings stay doublings
    assert curve["per_doubling"]["wordnet_store"] == pytest.approx(0.02)
    assert curve["per_doubling"]["crw_16"] == pytest.approx(0.02)
    assert "`rarified_text_store` +0.020" in "\n".join(format_markdown(curve))
    assert learning_curve(points[:2], n_resamples=100)["per_doubling"] == {}
