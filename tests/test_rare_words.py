"""rare_words.py: count tables, the rare-word rule, and which frequencies the component uses."""
from __future__ import annotations

import shutil

import numpy
import pytest
import spacy

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram.rare_words import CountTable, RareWordRule, WordfreqFrequencies, zipf_from_count

from conftest import bertram_config, make_bertram_dir, make_nlp, same_vectors


# -- rare-word rule ----------------------------------------------------------------------


def test_count_table_zipf_and_casing(tmp_path):
    table = CountTable({"the": 60_000, "kumquat": 1, "Paris": 50}, total=1_000_000)
    assert table.zipf("the") == pytest.approx(zipf_from_count(60_000, 1_000_000)) == pytest.approx(7.778, abs=1e-3)
    assert table.zipf("The") == table.zipf("the")  # sentence-initial capital
    assert table.zipf("unseen") == 0.0 and table.zipf("kumquat") == pytest.approx(3.0)
    assert CountTable.from_bytes(table.to_bytes()).counts == table.counts
    (tmp_path / "counts.tsv").write_text("the\t5\nkumquat\t1\n", encoding="utf8")
    assert CountTable.from_model_dir(tmp_path).total == 6
    (tmp_path / "counts.tsv").write_text("the\t5\nkumquat one\n", encoding="utf8")
    with pytest.raises(ValueError, match="Corrupt word-count file .*counts.tsv.*line 2"):
        CountTable.from_model_dir(tmp_path)
    (tmp_path / "counts.tsv").unlink()  # one documented name: another is refused, not ignored
    (tmp_path / "counts.json").write_text('{"total": 100, "counts": {"the": 50}}', encoding="utf8")
    with pytest.raises(ValueError, match="has counts.json, but word counts are read from counts.tsv"):
        CountTable.from_model_dir(tmp_path)
    assert CountTable.from_model_dir(tmp_path / "nowhere") is None
    assert WordfreqFrequencies().zipf("the") > 6 > 3 > WordfreqFrequencies().zipf("kumquat")


def test_rule_settings_are_validated():
    with pytest.raises(ValueError, match="frequencies"):
        RareWordRule(frequencies="web")
    with pytest.raises(ValueError, match="min_wordpieces"):
        RareWordRule(min_wordpieces=0)
    for zipf in (-1.0, 0.0, float("nan")):  # no token would ever be rare
        with pytest.raises(ValueError, match=r"rare_words.max_zipf must be above 0 .*got"):
            RareWordRule(max_zipf=zipf)


def test_rare_tokens_by_wordfreq_alpha_only_and_wordpieces(bertram_dir, tiny_bert_path):
    text = "The kumquat and 42 quokkas ate a tarantula ! cat"
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    doc = nlp(text)
    assert sorted(doc[i].text for i in doc._.bertram) == ["kumquat", "quokkas", "tarantula"]
    assert all(v.dtype == numpy.float32 and v.shape == (32,) for v in doc._.bertram.values())
    # Only words the encoder splits into 2+ pieces; "cat" is one piece (and rare by this table).
    nlp = make_nlp(bertram_dir, tiny_bert_path, rare_words={"max_zipf": 8.0, "min_wordpieces": 2})
    rare = {doc[i].text for i in nlp(text)._.bertram}
    assert "kumquat" in rare and "cat" not in rare and "The" not in rare
    nlp = make_nlp(bertram_dir, tiny_bert_path, rare_words={"max_zipf": 8.0, "alpha_only": False, "min_length": 1})
    assert "42" not in {doc[i].text for i in nlp(text)._.bertram}  # still needs a letter


def test_model_counts_replace_wordfreq(bertram_dir, tiny_bert_path, tmp_path):
    counts = {"the": 10**6, "kumquat": 10**5, "ate": 10**5}
    model = make_bertram_dir(tmp_path / "m", tiny_bert_path, counts=counts)
    nlp = make_nlp(model, tiny_bert_path)
    pipe = nlp.get_pipe("bertram")
    assert pipe.table is not None and pipe._finder.frequencies is pipe.table
    doc = nlp("the kumquat ate tarantulas")  # kumquat is frequent in the model's own corpus
    assert [doc[i].text for i in doc._.bertram] == ["tarantulas"]
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(model)  # the table now travels with the pipeline
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("bertram").table.counts == pipe.table.counts
    assert same_vectors(loaded("the kumquat ate tarantulas"), doc)
    doc = make_nlp(bertram_dir, tiny_bert_path, rare_words={"frequencies": "wordfreq"})("the kumquat ate tarantulas")
    assert [doc[i].text for i in doc._.bertram] == ["kumquat", "tarantulas"]


# -- 5. word frequencies: the model's counts, in the pipeline's language --------------------


def test_wordfreq_is_asked_in_the_pipeline_language(bertram_dir, tiny_bert_path):  # noqa: F811
    nlp = spacy.blank("ru")
    nlp.add_pipe("bertram", config={**bertram_config(bertram_dir, tiny_bert_path),
                                    "rare_words": {"frequencies": "wordfreq"}})
    nlp.initialize()
    frequencies = nlp.get_pipe("bertram")._finder.frequencies
    assert frequencies.lang == "ru" and frequencies.zipf("привет") > 4  # an everyday Russian word
    unknown = spacy.blank("xx")
    unknown.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))
    with pytest.raises(ValueError, match="wordfreq has no word frequencies for the pipeline's language 'xx'.*"
                                         "frequencies = \"model\""):
        unknown.initialize()


def test_devanagari_words_are_alphabetic(tmp_path, minilm_path):
    assert RareWordRule().is_candidate(spacy.blank("hi")("किताब")[0])  # "किताब".isalpha() is False
    nlp = spacy.blank("hi")
    nlp.add_pipe("bertram", config={**bertram_config(make_bertram_dir(tmp_path / "m", "default"), "default"),
                                    "rare_words": {"frequencies": "wordfreq", "max_zipf": 5.6}})
    nlp.initialize()
    doc = nlp("हिन्दी की किताब")
    assert {doc[i].text for i in doc._.bertram} == {"हिन्दी", "किताब"}  # "की" is frequent


def test_a_model_with_counts_is_read_with_them_under_auto(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    from spacy_bertram import load_bertram, save_bertram

    model = save_bertram(load_bertram(bertram_dir), tmp_path / "m", counts={"kumquat": 10**6, "the": 10**6})
    assert (model / "counts.tsv").read_text(encoding="utf8").splitlines() == ["kumquat\t1000000", "the\t1000000"]
    pipe = make_nlp(str(model), tiny_bert_path).get_pipe("bertram")
    assert pipe._finder.frequencies is pipe.table and pipe.table.count("kumquat") == 10**6
