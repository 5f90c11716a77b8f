"""Predictions: every system reads a fresh copy of the gold tokens; rarity comes from the bertram component."""

from __future__ import annotations

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span

from bertram_experiments.ner.predict import bare_copy, predict_fold, spans_of


class RareLongWords:
    """Stands in for the bertram component: only `rare_tokens` is asked."""

    def __init__(self, nlp, name):
        self.name = name

    def __call__(self, doc: Doc) -> Doc:
        return doc

    def rare_tokens(self, doc: Doc):
        return [t.i for t in doc if len(t) > 6]


Language.factory("test_rare_long_words", func=RareLongWords)


def system(pattern_label: str):
    nlp = spacy.blank("en")
    nlp.add_pipe("test_rare_long_words", name="bertram")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": pattern_label, "pattern": "Kumquatville"}])
    return nlp


def test_rows_hold_gold_rare_tokens_and_each_systems_spans():
    vocab = spacy.blank("en").vocab
    gold = Doc(vocab, words=["I", "love", "Kumquatville", "!"], spaces=[True, True, False, False])
    gold.ents = [Span(gold, 2, 3, label="geo-loc")]
    systems = {"stock": system("geo-loc"), "bertram": system("company")}
    rows = predict_fold(systems, [gold], [41], fold=3)
    assert rows == [
        {
            "id": 41,
            "fold": 3,
            "words": ["I", "love", "Kumquatville", "!"],
            "gold": [[2, 3, "geo-loc"]],
            "rare": [2],
            "pred": {"stock": [[2, 3, "geo-loc"]], "bertram": [[2, 3, "company"]]},
        }
    ]
    copy = bare_copy(systems["stock"], gold)
    assert copy.text == gold.text and not copy.ents and spans_of(gold) == [[2, 3, "geo-loc"]]
