"""bertram_experiments/downstream/set_outputs.py: gold probabilities and per-item scores of a set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bertram_experiments.downstream.paired import candidate_key, read_predictions
from bertram_experiments.downstream.set_outputs import gold_probabilities

from tests.util import _two_sets


def test_gold_probabilities_pick_the_gold_column():
    items = [{"label": "b"}, {"label": "a"}]
    probs = np.array([[0.2, 0.8], [0.6, 0.4]])
    assert gold_probabilities(items, probs, ["a", "b"]).tolist() == [0.8, 0.6]


def test_set_outputs_keep_per_item_scores(tmp_path: Path):
    _two_sets(tmp_path)
    rows = [json.loads(line) for line in open(tmp_path / "a" / "predictions.jsonl")]
    assert rows[1]["p_gold"] == {"baseline": 0.4, "bertram_slash": 0.6}
    assert rows[1]["correct"] == {"baseline": False, "bertram_slash": True}
    assert rows[1]["bertram_slash"] == "neg" and rows[0]["candidate"] == candidate_key("t1")
    m = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert m["accuracy"]["bertram_slash"]["All"]["accuracy"] == 1.0
    assert m["vs_baseline"]["bertram_slash"]["accuracy_diff"]["estimate"] == pytest.approx(2 / 3)
    assert m["mcnemar_vs_baseline"]["bertram_slash"]["All"]["only_a"] == 2
    assert read_predictions(tmp_path / "a" / "predictions.jsonl").correct["baseline"].tolist() == [True, False, False]
