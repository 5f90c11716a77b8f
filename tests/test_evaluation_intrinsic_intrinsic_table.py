"""The intrinsic evaluation's printed table."""
from __future__ import annotations

from spacy_bertram.evaluation.intrinsic.intrinsic_table import format_table


def test_table_says_when_the_model_caps_the_contexts():
    table = format_table({"sets": {}, "model_max_contexts": 16})
    assert "at most 16 contexts per word" in table and "bertram_32 used 16" in table
    assert "bertram_16" not in table


def _diff(estimate, low, high):
    return {"estimate": estimate, "low": low, "high": high, "no_difference": low <= 0 <= high}


def test_rows_give_the_difference_to_the_form_and_the_header_the_coverage():
    cell = {"n": 10, "systems": {
        "subword_mean": {"spearman": 0.3, "n": 10},
        "bertram_form": {"spearman": 0.2, "n": 10, "difference": _diff(-0.1, -0.2, 0.05)},
        "bertram_dict": {"spearman": 0.4, "n": 10, "difference": _diff(0.1, 0.02, 0.2),
                         "vs_form": _diff(0.2, -0.01, 0.3)},
    }}
    crw = {"path": "crw", "pairs": 10, "rare_words": 8, "rare_words_without_contexts": 0, "baseline": "subword_mean",
           "definitions": {"rare_words": 8, "with_definitions": 5, "share": 0.625},
           "subsets": {"all": cell, "with_definitions": cell}}
    table = format_table({"sets": {"crw": crw}, "bootstrap": 100, "seed": 0, "fold": "1/2"})
    assert "\nwith_definitions  bertram_form " in table and "\nall               bertram_form " in table
    assert "dictionary entries for 5 of 8 rare words" in table and "Fold 1/2 of the rare words." in table
    row = next(line for line in table.splitlines() if "bertram_dict" in line)
    assert row.endswith("+0.100  [+0.020, +0.200]  higher  | vs bertram_form   +0.200  [-0.010, +0.300]  no difference")
