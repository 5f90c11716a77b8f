"""Folds of the rare-word sets: by rare word, fixed seed, a partition."""

from __future__ import annotations

import pytest

from bertram_experiments.rare_word_folds import fold_members, parse_fold, select_fold
from bertram_experiments.intrinsic.rare_sets import CardSet, ChimeraItem, CrwSet

WORDS = [f"word{i}" for i in range(41)]


def test_parse_fold_names_the_bad_value():
    assert parse_fold("1/3") == (1, 3)
    for bad in ("2/2", "0/1", "a/2", "0", "-1/2"):
        with pytest.raises(ValueError, match=f"--fold '{bad}'"):
            parse_fold(bad)


def test_folds_partition_the_words_the_same_way_every_time():
    folds = [fold_members(WORDS, i, 2) for i in range(2)]
    assert folds[0] | folds[1] == set(WORDS) and not folds[0] & folds[1]
    assert {len(f) for f in folds} == {20, 21}
    assert fold_members(reversed(WORDS), 0, 2) == folds[0]  # the order of the input does not matter
    assert folds[0] != set(WORDS[::2])  # shuffled, not alphabetical


def test_pairs_of_one_word_stay_together_and_chimeras_go_by_item():
    pairs = [("a", w, 1.0) for w in WORDS] + [("b", w, 2.0) for w in WORDS]
    chimeras = {"l2": [ChimeraItem(w, ["s"], "s", ["p"], [1.0]) for w in WORDS]}
    crw, card, chim = select_fold((1, 2), CrwSet("p", pairs, {}), CardSet("p", pairs), chimeras)
    kept = {p[1] for p in crw.pairs}
    assert kept == fold_members(WORDS, 1, 2) and len(crw.pairs) == 2 * len(kept) and card.pairs == crw.pairs
    assert {item.item_id for item in chim["l2"]} == kept
    assert select_fold((0, 2), None, None, None) == (None, None, None)
