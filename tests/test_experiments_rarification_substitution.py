"""bertram_experiments/rarification/substitution.py: synonyms and misspellings that keep the part of speech."""

from __future__ import annotations

import random


from bertram_experiments.rarification import rarify as R
from bertram_experiments.rarification.substitution import (
    TAG_TO_WORDNET,
    SubstitutionDictionary,
    misspell_candidates,
)

from tests.util import needs_tagger, needs_wordnet


def test_misspelling_edits_keep_outer_letters():
    rng = random.Random(0)
    cands = list(misspell_candidates("farmer", rng, tries=40))
    assert cands and all(c[0] == "f" and c[-1] == "r" and c != "farmer" for c in cands)
    assert all(abs(len(c) - 6) <= 1 for c in cands)
    assert list(misspell_candidates("cat", rng)) == []


@needs_wordnet
def test_synonyms_most_frequent_sense_inflected_and_rare(subs):
    assert subs.synonyms("cars", "NNS", "car") == ["autos", "automobiles", "machines", "motorcars"]
    assert subs.synonyms("Farmer", "NN", "farmer")[0] == "Husbandman"
    assert "speediest" in subs.rare_synonyms("quickest", "JJS", "quick")
    rare = subs.rare_synonyms("happily", "RB", "happily")
    assert rare and all(subs.frequencies.estimated_count(w) < 1000 for w in rare)
    assert "merrily" not in SubstitutionDictionary(max_zipf=2.0).rare_synonyms("happily", "RB")
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
