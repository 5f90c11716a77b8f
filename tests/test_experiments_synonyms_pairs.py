"""bertram_experiments/synonyms/pairs.py: the pairs of synonym recovery, read from rarified sets and WordNet, the rule's
filter, the seeded sample and the folds by rare word."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import spacy

from spacy_bertram.model.encoder import word_piece_ids
from bertram_experiments.rare_word_folds import fold_members
from bertram_experiments.rarification.rarify import RarifiedItem, Substitution, write_substitutions_jsonl
from bertram_experiments.synonyms.pairs import (
    SynonymPair,
    distinct_pairs,
    read_substitutions,
    sample_pairs,
    select_fold,
    wordnet_pairs,
)
from spacy_bertram.rarity.frequencies import WordfreqFrequencies
from spacy_bertram.rarity.rare_words import RareWordFinder, RareWordRule

from tests.util import needs_wordnet


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert_path)


class Zipfs:
    """A frequency table by hand: Zipf per word, 0 for the others."""

    def __init__(self, table: Dict[str, float]) -> None:
        self.table = table

    def zipf(self, word: str) -> float:
        return self.table.get(word, 0.0)


def finder_for(tokenizer, frequencies, max_zipf: float = 3.0) -> RareWordFinder:
    """The component's rule (2+ wordpieces, Zipf below max_zipf) on the tiny BERT's tokenizer."""
    return RareWordFinder(
        RareWordRule(max_zipf=max_zipf),
        frequencies,
        lambda w: word_piece_ids(tokenizer, w),
        has_signal=lambda w: True,
        unk_id=tokenizer.unk_token_id,
    )


def item(i: int, text: str, subs: List[Tuple[int, str, str, str]]) -> RarifiedItem:
    return RarifiedItem(
        f"i{i}",
        "food",
        text,
        text,
        text,
        [Substitution(index, original, substitute, kind, "NN", 1.0) for index, original, substitute, kind in subs],
        0.9,
        0.1,
    )


def write_set(directory: Path, items, seed_sets=()) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_substitutions_jsonl(directory / "test.jsonl", items)
    (directory / "rarify.json").write_text(json.dumps({"seed": 0, "seed_sets": list(seed_sets)}), encoding="utf8")
    return directory


def test_substitutions_are_read_from_every_seed_set_and_made_distinct(tmp_path, tokenizer):
    """Two seeds of one text pick the same synonym: one pair that stands for two substitutions, with the first
    text; a pair whose original the encoder splits into pieces has no one-piece target and is dropped."""
    root = write_set(
        tmp_path / "rarified",
        [
            item(0, "the kumquat was sweet", [(1, "apple", "kumquat", "synonym")]),
            item(
                1, "a lemno and a tarantula", [(1, "lemon", "lemno", "misspelling"), (4, "dog", "tarantula", "synonym")]
            ),
        ],
        seed_sets=["seed-1"],
    )
    write_set(
        root / "seed-1",
        [
            item(0, "The kumquat was sweet", [(1, "apple", "kumquat", "synonym")]),
            item(2, "the quokka sold fruit", [(1, "kumquat", "quokka", "synonym")]),
        ],
    )
    (root / "seed-7").mkdir()  # not listed in rarify.json: never read
    write_substitutions_jsonl(
        root / "seed-7" / "test.jsonl", [item(9, "the zorbing", [(1, "dog", "zorbing", "synonym")])]
    )
    read = read_substitutions([root])
    assert [(p.substitute, p.original, p.source, p.index) for p in read] == [
        ("kumquat", "apple", "synonym", 1),
        ("lemno", "lemon", "misspelling", 1),
        ("tarantula", "dog", "synonym", 4),
        ("kumquat", "apple", "synonym", 1),
        ("quokka", "kumquat", "synonym", 1),
    ]
    assert read[0].text == "the kumquat was sweet" and read[3].text == "The kumquat was sweet"
    pairs, dropped = distinct_pairs(read, finder_for(tokenizer, WordfreqFrequencies("en")), str.lower)
    assert [(p.substitute, p.original, p.occurrences) for p in pairs] == [
        ("kumquat", "apple", 2),
        ("lemno", "lemon", 1),
        ("tarantula", "dog", 1),
    ]
    assert pairs[0].text == "the kumquat was sweet"  # the first text
    assert dropped == {"original_not_one_wordpiece": 1, "substitute_is_original": 0}


def test_a_substitution_without_its_fields_or_a_missing_set_is_named(tmp_path):
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "test.jsonl").write_text(
        json.dumps(
            {
                "id": "x7",
                "text": "a b",
                "substitutions": [{"original": "apple", "substitute": "kumquat", "kind": "synonym"}],
            }
        )
        + "\n",
        encoding="utf8",
    )
    with pytest.raises(ValueError, match=r"\[E396\].*test.jsonl: item x7 .*without \['index'\]"):
        read_substitutions([directory])
    with pytest.raises(ValueError, match=r"\[E320\].*nowhere"):
        read_substitutions([tmp_path / "nowhere"])


class FakeSynset:
    def __init__(self, names: List[str]) -> None:
        self.names = names

    def lemma_names(self) -> List[str]:
        return self.names


class FakeWordNet:
    """WordNet's index (lemmas in lower case, satellites under "a" and "s") and its synsets' lemma names."""

    def __init__(self, synsets: Dict[Tuple[str, int], List[str]]) -> None:
        self.synsets = synsets
        self._lemma_pos_offset_map: Dict[str, Dict[str, List[int]]] = {}
        self.parsed: List[Tuple[str, int]] = []
        for (pos, offset), names in synsets.items():
            for name in names:
                for listed in ("a", "s") if pos == "a" else (pos,):
                    self._lemma_pos_offset_map.setdefault(name.lower(), {}).setdefault(listed, []).append(offset)

    def synset_from_pos_and_offset(self, pos: str, offset: int) -> FakeSynset:
        self.parsed.append((pos, offset))
        return FakeSynset(self.synsets[(pos, offset)])


ZIPF = {
    "fruit": 5.0,
    "kumquat": 1.0,
    "lemon": 1.0,
    "zorbing": 4.5,
    "quokka": 1.0,
    "tarantula": 1.0,
    "apple": 4.0,
    "dog": 5.0,
    "sweet": 5.0,
    "small": 5.0,
}


def test_wordnet_pairs_follow_the_rule(tokenizer):
    """S: rare by the component's rule; O: one wordpiece and frequent. A one-piece rare word (lemon) and a
    frequent multi-piece one (zorbing) are no S, lemon no O either; a proper name (Quokka) and multi-word or
    hyphenated lemmas are no word at all; a synset without a possible pair is never parsed."""
    wordnet = FakeWordNet(
        {
            ("n", 1): ["fruit", "kumquat", "lemon", "zorbing", "Quokka", "tarantula", "fruit_tree"],
            ("n", 2): ["apple", "kumquat"],
            ("a", 3): ["sweet", "small"],  # frequent only: no pair, not parsed
            ("n", 4): ["dog", "tarantula-like"],
        }
    )
    finder = finder_for(tokenizer, Zipfs(ZIPF))
    make_doc = spacy.blank("en").make_doc
    pairs = wordnet_pairs(wordnet, finder, make_doc)
    assert [(p.substitute, p.original, p.source) for p in pairs] == [
        ("kumquat", "apple", "wordnet"),
        ("kumquat", "fruit", "wordnet"),
        ("tarantula", "fruit", "wordnet"),
    ]
    assert sorted(wordnet.parsed) == [("n", 1), ("n", 2)]
    excluded = wordnet_pairs(wordnet, finder, make_doc, exclude=[("kumquat", "apple")])
    assert [(p.substitute, p.original) for p in excluded] == [("kumquat", "fruit"), ("tarantula", "fruit")]
    # at max_zipf 1.0 nothing is rare: no pair
    assert wordnet_pairs(wordnet, finder_for(tokenizer, Zipfs(ZIPF), max_zipf=1.0), make_doc) == []


@needs_wordnet
@pytest.mark.slow
def test_wordnet_pairs_from_the_real_wordnet(tokenizer):
    from spacy_bertram.dictionary.wordnet import load_wordnet

    finder = finder_for(tokenizer, WordfreqFrequencies("en"))
    pairs = wordnet_pairs(load_wordnet(), finder, spacy.blank("en").make_doc)
    found = {(p.substitute, p.original) for p in pairs}
    assert ("motorcar", "car") in found  # car.n.01: rare motorcar, one-piece car
    assert ("automobile", "car") not in found  # Zipf 3.9: frequent
    assert all(len(word_piece_ids(tokenizer, o)) == 1 and finder.frequencies.zipf(o) >= 3.0 for _, o in found)
    assert all(finder.is_rare_word(s) and s.isalpha() and s == s.lower() for s, _ in found)
    assert len(found) == len(pairs) > 100


def pairs_of(words: List[str]) -> List[SynonymPair]:
    return [SynonymPair(w, o, "wordnet") for w in words for o in ("fruit", "dog")]


def test_folds_split_by_rare_word_and_the_sample_is_seeded():
    words = [f"word{i}" for i in range(12)]
    pairs = pairs_of(words)
    first, second = select_fold(pairs, (0, 2), str), select_fold(pairs, (1, 2), str)
    first_words, second_words = {p.substitute for p in first}, {p.substitute for p in second}
    assert not first_words & second_words and first_words | second_words == set(words)
    assert len(first) + len(second) == len(pairs) and len(first) == 2 * len(first_words)  # both pairs of a word
    assert first_words == fold_members(words, 0, 2)
    assert select_fold(pairs, (0, 2), str) == first
    sample = sample_pairs(pairs, 5, seed=0)
    assert len(sample) == 5 and sample == sample_pairs(pairs, 5, seed=0) != sample_pairs(pairs, 5, seed=1)
    assert sample == [p for p in pairs if p in sample]  # the pairs' own order
    assert sample_pairs(pairs, 100, seed=0) == pairs
