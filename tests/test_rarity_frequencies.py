"""frequencies.py: count tables, their resolution, wordfreq, and the world scale with counts as a fallback."""

from __future__ import annotations

import pytest

from spacy_bertram.rarity.frequencies import (
    CountTable,
    WordfreqFrequencies,
    WorldFrequencies,
    check_max_zipf,
    zipf_from_count,
)


def test_count_table_zipf_and_casing(tmp_path):
    table = CountTable({"the": 60_000, "kumquat": 1, "Paris": 50}, total=1_000_000)
    assert table.zipf("the") == pytest.approx(zipf_from_count(60_000, 1_000_000)) == pytest.approx(7.778, abs=1e-3)
    assert table.zipf("The") == table.zipf("the")  # sentence-initial capital
    assert table.zipf("unseen") == 0.0 and table.zipf("kumquat") == pytest.approx(3.0)
    assert CountTable.from_bytes(table.to_bytes()).counts == table.counts
    (tmp_path / "counts.tsv").write_text("the\t5\nkumquat\t1\n", encoding="utf8")
    assert CountTable.from_model_dir(tmp_path).total == 6
    (tmp_path / "counts.tsv").write_text("the\t5\nkumquat one\n", encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E011\] Corrupt word-count file .*counts.tsv.*line 2"):
        CountTable.from_model_dir(tmp_path)
    (tmp_path / "counts.tsv").unlink()  # one documented name: another is refused, not ignored
    (tmp_path / "counts.json").write_text('{"total": 100, "counts": {"the": 50}}', encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E012\].*has counts.json, but word counts are read from counts.tsv"):
        CountTable.from_model_dir(tmp_path)
    assert CountTable.from_model_dir(tmp_path / "nowhere") is None
    assert WordfreqFrequencies().zipf("the") > 6 > 3 > WordfreqFrequencies().zipf("kumquat")


def test_corpus_counts_fill_wordfreq_gaps_and_know_their_resolution():
    counts = CountTable({"kumquat": 50_000, "zorblax": 40, "the": 10**5}, total=3_470_000)
    assert counts.resolution_zipf == pytest.approx(2.46, abs=0.01)  # one occurrence in 3.47M words
    world = WorldFrequencies(WordfreqFrequencies("en"), counts)
    assert world.zipf("kumquat") == pytest.approx(1.86, abs=0.05)  # wordfreq knows it: the corpus is not asked
    assert world.zipf("zorblax") == pytest.approx(zipf_from_count(40, 3_470_000))  # wordfreq lacks it
    assert world.zipf("blorptang") == 0.0


@pytest.mark.parametrize("bad", [0, -1, 9.5, float("nan"), float("inf"), True, "3"])
def test_a_max_zipf_off_the_scale_is_refused_by_name(bad):
    """NaN and infinity too: `zipf < nan` is false for every word, so nothing would be rare."""
    with pytest.raises(ValueError, match=r"\[E039\] --max-zipf must be a Zipf value above 0 and at most 9.*got"):
        check_max_zipf(bad, "--max-zipf")
    check_max_zipf(9)
    check_max_zipf(0.5, "--max-zipf")


def test_the_frequent_form_table_gives_wordfreqs_own_zipf_for_every_form_it_holds():
    """Every entry, lowercased, capitalised and upper-cased, is exactly zipf_frequency's value: the table answers
    for wordfreq, it does not approximate it. Forms below the threshold and non-ASCII forms are not answered."""
    from wordfreq import zipf_frequency

    from spacy_bertram.rarity.frequencies import frequent_wordfreq_forms

    table = WordfreqFrequencies("en").frequent_forms(3.0)
    assert table is frequent_wordfreq_forms("en", 3.0)  # built once per process
    assert len(table) > 25_000 and table.min_zipf == 3.0
    for word, zipf in table.zipf_of.items():
        assert zipf >= 3.0
        for form in (word, word.capitalize(), word.upper()):
            assert table.zipf(form) == zipf == zipf_frequency(form, "en"), form
    below = frequent_wordfreq_forms("en", 2.5)
    assert all(table.zipf(word) is None for word, zipf in below.zipf_of.items() if zipf < 3.0)
    assert table.zipf("kumquat") is None and zipf_frequency("kumquat", "en") < 3.0
    assert table.zipf("café") is None and table.zipf("don't") is None and table.zipf("b2b") is None
    assert WorldFrequencies(WordfreqFrequencies("en"), None).frequent_forms(3.0) is table
