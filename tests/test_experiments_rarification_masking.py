"""bertram_experiments/rarification/masking.py: the masking procedure (`rarify`: the seed-free masking pass, then
the seeded substitution) on a toy classifier, seeds sharing one masking pass, bad input, and (with WordNet +
spaCy's small English pipeline) rarification end to end."""

from __future__ import annotations

import json
import math
import string

import numpy as np
import pytest

from bertram_experiments.rarification.masking import MaskingResult, mask_candidates, rarify, substitute_masked
from bertram_experiments.rarification.rarify import TaggedToken
from bertram_experiments.rarification.records import Record, UnknownLabelError

from tests.util import needs_tagger, needs_wordnet


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
        out.append([TaggedToken(w, "NN", w.lower(), " " if i < len(words) - 1 else "") for i, w in enumerate(words)])
    return out


class FakeFrequencies:
    def estimated_count(self, word):
        return 7.0


class FakeSubs:
    """Duck-typed SubstitutionDictionary: fixed synonyms, fixed misspellings."""

    frequencies = FakeFrequencies()
    table = {
        "great": ["superb", "splendiferous"],
        "fun": ["amusive"],
        "awful": ["direful"],
        "boring": ["wearisome"],
        "dull": ["humdrum"],
    }

    def rare_synonyms(self, word, tag, lemma=""):
        return self.table.get(word.lower(), [])

    def misspelling(self, word, rng):
        return word[0] + word[2:] + "x"

    def describe(self, word):
        return self.frequencies.estimated_count(word), None, None


TOY = [
    Record("a great and fun film", "pos", "g"),  # 2.75 -> mask great 0.75 -> mask fun -0.25: flips
    Record("an awful fun plot", "neg", "a"),  # -1.25 -> mask awful 0.75: flips
    Record("awful boring dull plot", "neg", "d"),  # stays negative after 3 masks: not flipped
    Record("great plot", "neg", "w"),  # misclassified: dropped
    Record("a plot", "neg", "n"),  # correct, but nothing to mask
]


def test_masking_procedure_on_toy_classifier():
    res = rarify(TOY, toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, misspelling_rate=0.0)
    assert (res.n_candidates, res.n_correct) == (5, 4)
    assert (res.not_flipped, res.skipped_no_candidates) == (1, 1)
    assert [it.id for it in res.items] == ["g", "a"]
    for item in res.items:
        y = LABELS.index(item.label)
        assert toy_classifier([item.original_text])[0].argmax() == y  # original right
        assert toy_classifier([item.masked_text])[0].argmax() != y  # masked wrong
        assert item.p_masked < item.p_original
        assert 1 <= len(item.substitutions) <= 5
    g = res.items[0]
    # greedy order: the word that lowers p(pos) most first
    assert [s.original for s in g.substitutions] == ["great", "fun"]
    assert g.masked_text == "a [MASK] and [MASK] film"
    assert g.text.split()[1] in FakeSubs.table["great"] and g.text.split()[3] == "amusive"
    assert {s.kind for s in g.substitutions} == {"synonym"} and g.substitutions[0].count == 7.0


def test_max_masks_and_misspelling_rate():
    res = rarify(TOY[:1], toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, max_masks=1)
    assert res.items == [] and res.not_flipped == 1
    res = rarify(TOY[:2], toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, misspelling_rate=1.0)
    assert all(s.kind == "misspelling" for it in res.items for s in it.substitutions)
    assert res.items[1].text == "an afulx fun plot"


def test_seeds_share_one_masking_pass_and_differ_only_in_substitutes():
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
        direct = rarify(TOY, toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger, seed=seed, misspelling_rate=0.0)
        assert [it.to_dict() for it in result.items] == [it.to_dict() for it in direct.items]
        assert result.summary() == direct.summary()
        assert [(it.id, it.masked_text) for it in result.items] == [
            ("g", "a [MASK] and [MASK] film"),
            ("a", "an [MASK] fun plot"),
        ]
    # "great" has two rare synonyms: over six seeds both are drawn
    assert {r.items[0].substitutions[0].substitute for r in by_seed.values()} == {"superb", "splendiferous"}


def test_bad_input_errors():
    with pytest.raises(UnknownLabelError, match=r"\[E370\].*'sports'"):
        rarify([("a fun plot", "sports")], toy_classifier, LABELS, FakeSubs(), tagger=toy_tagger)
    with pytest.warns(UserWarning, match="empty text"):
        res = rarify(
            [("", "pos"), ("   ", "neg"), ("a great and fun film", "pos")],
            toy_classifier,
            LABELS,
            FakeSubs(),
            tagger=toy_tagger,
        )
    assert res.skipped_empty == 2 and len(res.items) == 1
    with pytest.raises(AssertionError, match=r"classifier gave shape"):
        rarify([("a fun plot", "pos")], lambda texts: np.ones((len(texts), 3)), LABELS, FakeSubs(), tagger=toy_tagger)


@needs_wordnet
@needs_tagger
def test_rarify_end_to_end_with_wordnet(subs, tagger):
    weights = {
        "dreadful": -2.0,
        "boring": -1.5,
        "mess": -1.0,
        "movie": 0.5,
        "farmer": 1.0,
        "happily": 2.0,
        "food": -0.5,
    }

    def classify(texts):
        out = []
        for doc in tagger(texts):
            score = sum(weights.get(t.text.lower(), 0.0) for t in doc)
            p = 1 / (1 + math.exp(-score))
            out.append([1 - p, p])
        return np.array(out)

    data = [("The movie was a dreadful, boring mess.", "neg"), ("The farmer happily sold tasty food.", "pos")]
    res = rarify(data, classify, LABELS, subs, tagger=tagger, seed=1)
    assert len(res.items) == 2
    for item in res.items:
        y = LABELS.index(item.label)
        assert classify([item.original_text])[0].argmax() == y
        assert classify([item.masked_text])[0].argmax() != y
        for s in item.substitutions:
            assert s.original in item.original_text and s.substitute in item.text
            assert s.kind in ("synonym", "misspelling") and s.count < 1000
    assert [s.original for s in res.items[0].substitutions] == ["dreadful", "boring", "mess"]
