"""The NER report: the pooled table's figures and CIs, buckets, per type, per fold, and the plot."""

from __future__ import annotations

from bertram_experiments.ner.evaluate import summarise
from bertram_experiments.ner.report import delta, plot_f1_by_rarity, write_report

SYSTEMS = ["stock", "bertram", "bertram_test_time"]


def toy_metrics():
    rows = []
    for i in range(10):
        gold = [[0, 1, "person"], [2, 4, "product"]]
        found = gold if i < 8 else gold[:1]
        rows.append(
            {
                "fold": i % 2,
                "gold": gold,
                "rare": [3],
                "pred": {"stock": gold[:1], "bertram": found, "bertram_test_time": gold[:1] + [[5, 6, "person"]]},
            }
        )
    folds = [[r for r in rows if r["fold"] == f] for f in (0, 1)]
    return {
        "source": "toy",
        "folds": 2,
        "seed": 0,
        "bootstrap_resamples": 100,
        "systems": SYSTEMS,
        "pooled": summarise(rows, SYSTEMS, 100, 0, stratify=True),
        "per_fold": [summarise(r, SYSTEMS, 100, 0, stratify=False) for r in folds],
        "seconds": {"predict": 1.0},
    }


def test_report_tables(tmp_path):
    text = write_report(toy_metrics(), tmp_path / "report.md").read_text(encoding="utf8")
    # stock: P 100, R 50, F1 66.7; bertram: TP 18 FN 2 -> F1 94.7; rare: stock 0, bertram 16/18 -> 88.9
    assert "| stock | 100.0 | 50.0 | 66.7 |  | 0.0 |  | 100.0 |" in text
    assert "| trained with bertram | 100.0 | 90.0 | 94.7 | +28.1 [" in text
    assert "| 88.9 | +88.9 [" in text and "F1 (n=20)" in text and "rare-token entities (n=10)" in text
    assert "| 1 rare token | 10 | 0.0 | 88.9 | 0.0 |" in text
    assert "| product | 10 | – / 0.0 / 0.0 | 100.0 / 80.0 / 88.9 |" in text
    assert text.count("\n| 0 | 5 | 10 |") == 1 and "Seconds: predict 1.0" in text


def test_delta_formats_points_and_stars():
    assert delta({"estimate": 0.031, "low": 0.004, "high": 0.06, "no_difference": False}) == "+3.1 [+0.4, +6.0] *"
    assert delta({"estimate": -0.01, "low": -0.03, "high": 0.01, "no_difference": True}) == "-1.0 [-3.0, +1.0]"
    assert delta(None) == ""


def test_plot_is_a_png(tmp_path):
    path = plot_f1_by_rarity(toy_metrics(), tmp_path / "plot.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
