"""Synonym recovery's word pairs: a rare word S and the frequent word O it stands for.

Two sources, each pair kept only where O is ONE wordpiece of the encoder (so that
O's input embedding is a real target, not a mean of pieces):

  rarified  the substitutions of the rarified test sets: `rarify`'s test.jsonl, whose
            items give each substitution's `original`, `substitute`, `kind` (synonym or
            misspelling) and token `index` in the rarified `text`; the further seeds' sets
            that rarify.json lists are read too. One pair per distinct (S, O), with the
            first rarified text S appears in (its context for the text systems).
  wordnet   pairs of single-word lemmas of one WordNet synset (no proper names, as
            rarification's synonyms), where S passes the `bertram` component's rare-word
            rule and O is one wordpiece and frequent (Zipf at least the rule's max_zipf);
            pairs the rarified sets already hold are left out.

Every decision comes from one `RareWordFinder`, the component's own
(`WordSources.finder`): the rule is never restated here. A source with more pairs
than `max_pairs` is cut to a seeded sample, and a fold (`rare_word_folds.py`) keeps the pairs
of one share of the rare words, so that a choice made on one fold is confirmed on
words it never saw.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc

from ..errors import Errors
from spacy_bertram import RareWordFinder
from spacy_bertram.project_support import PathLike, is_alphabetic
from ..downstream.downstream import read_test_items
from ..rare_word_folds import fold_members
from ..rarification.rarify import MISSPELLING, SYNONYM
from ..rarification.seed_sets import listed_sets

WORDNET = "wordnet"
#: The pair sources, as the subsets of the results are named.
SOURCES = (SYNONYM, MISSPELLING, WORDNET)
RARIFY_INFO = "rarify.json"
SUBSTITUTION_FIELDS = ("index", "original", "substitute", "kind")

Key = Callable[[str], str]


@dataclass(frozen=True)
class SynonymPair:
    """A rare word S (`substitute`) and the word O (`original`) whose embedding it should recover.

    `text` and `index`: the rarified text S appears in and its token index there (rarified pairs).
    `occurrences`: how many substitutions of the rarified sets this pair stands for.
    """

    substitute: str
    original: str
    source: str
    text: Optional[str] = None
    index: Optional[int] = None
    occurrences: int = 1


# -- the rarified sets ------------------------------------------------------------------------------


def read_substitutions(directories: Sequence[PathLike]) -> List[SynonymPair]:
    """One pair per substitution of the rarified sets, in order (each set's further seeds after it)."""
    pairs: List[SynonymPair] = []
    for directory in directories:
        for path in listed_sets(directory, RARIFY_INFO).values():
            for item in read_test_items(path):
                for sub in item.get("substitutions", []):
                    missing = [name for name in SUBSTITUTION_FIELDS if sub.get(name) is None]
                    if missing:
                        raise ValueError(
                            Errors.E396.format(path=Path(path) / "test.jsonl", id=item.get("id"), missing=missing)
                        )
                    pairs.append(
                        SynonymPair(
                            str(sub["substitute"]),
                            str(sub["original"]),
                            str(sub["kind"]),
                            str(item["text"]),
                            int(sub["index"]),
                        )
                    )
    return pairs


def one_piece(finder: RareWordFinder, word: str) -> bool:
    """True when the encoder spells the alphabetic `word` as one known wordpiece (its own embedding)."""
    if not is_alphabetic(word):
        return False
    pieces = list(finder.word_pieces(word))
    return len(pieces) == 1 and pieces[0] != finder.unk_id


def distinct_pairs(
    subs: Sequence[SynonymPair], finder: RareWordFinder, key: Key
) -> Tuple[List[SynonymPair], Dict[str, int]]:
    """The distinct (S, O) of the substitutions whose O is one wordpiece, each with its first text,
    and how many substitutions were dropped, and why."""
    kept: Dict[Tuple[str, str], SynonymPair] = {}
    dropped = {"original_not_one_wordpiece": 0, "substitute_is_original": 0}
    for pair in subs:
        if key(pair.substitute) == key(pair.original):
            dropped["substitute_is_original"] += 1
        elif not one_piece(finder, pair.original):
            dropped["original_not_one_wordpiece"] += 1
        else:
            ident = (key(pair.substitute), key(pair.original))
            first = kept.get(ident)
            kept[ident] = pair if first is None else replace(first, occurrences=first.occurrences + 1)
    return list(kept.values()), dropped


# -- WordNet ----------------------------------------------------------------------------------------


def synset_lemmas(wordnet) -> Dict[Tuple[str, int], List[str]]:
    """(pos, offset) -> the alphabetic lemmas of every synset with two or more, from WordNet's index.

    The index is read once when WordNet loads; parsing all 117,000 synsets would take half
    a minute. The index writes lemmas in lower case: `synonym_names` reads the synset itself.
    """
    groups: Dict[Tuple[str, int], List[str]] = {}
    for lemma, by_pos in wordnet._lemma_pos_offset_map.items():
        if not lemma.isalpha():
            continue
        for pos, offsets in by_pos.items():
            for offset in offsets:  # satellites are listed under "a" and "s": one synset
                members = groups.setdefault(("a" if pos == "s" else pos, offset), [])
                if lemma not in members:
                    members.append(lemma)
    return {k: v for k, v in groups.items() if len(v) >= 2}


def synonym_names(wordnet, pos: str, offset: int) -> List[str]:
    """The synset's single-word lemma names, proper names left out (as rarification's synonyms)."""
    names = wordnet.synset_from_pos_and_offset(pos, offset).lemma_names()
    return [n for n in dict.fromkeys(names) if n.isalpha() and n == n.lower()]


def rule_says_rare(finder: RareWordFinder, make_doc: Callable[[str], Doc]) -> Callable[[str], bool]:
    """Whether the component calls `word` rare where it stands alone in a doc: its whole rule
    (`finder.explain`: alphabetic, length, frequency, wordpieces, signal)."""

    def is_rare(word: str) -> bool:
        doc = make_doc(word)
        return len(doc) == 1 and finder.explain(doc[0]).rare

    return is_rare


def wordnet_pairs(
    wordnet,
    finder: RareWordFinder,
    make_doc: Callable[[str], Doc],
    exclude: Iterable[Tuple[str, str]] = (),
    key: Key = str,
) -> List[SynonymPair]:
    """Sorted distinct (S, O) of one synset: S rare by the component's rule (`rule_says_rare`),
    O one wordpiece and at least the rule's max_zipf; pairs in `exclude` ((key S, key O)) left out."""
    is_rare = rule_says_rare(finder, make_doc)
    threshold = finder.rule.max_zipf
    zipf = finder.frequencies.zipf
    skip = set(exclude)
    pairs: Set[Tuple[str, str]] = set()
    for (pos, offset), lemmas in synset_lemmas(wordnet).items():
        frequent = [w for w in lemmas if zipf(w) >= threshold]
        if not frequent or len(frequent) == len(lemmas):  # cheap test first: no pair possible
            continue
        originals = [w for w in frequent if one_piece(finder, w)]
        rare = [w for w in lemmas if w not in frequent and is_rare(w)]
        if not originals or not rare:
            continue
        names = set(synonym_names(wordnet, pos, offset))
        pairs.update(
            (s, o) for s in rare for o in originals if s in names and o in names and (key(s), key(o)) not in skip
        )
    return [SynonymPair(s, o, WORDNET) for s, o in sorted(pairs)]


# -- sampling and folds -----------------------------------------------------------------------------


def sample_pairs(pairs: Sequence[SynonymPair], max_pairs: int, seed: int) -> List[SynonymPair]:
    """At most `max_pairs` of `pairs`: a seeded sample, in the pairs' own order."""
    if len(pairs) <= max_pairs:
        return list(pairs)
    chosen = set(random.Random(seed).sample(range(len(pairs)), max_pairs))
    return [pair for i, pair in enumerate(pairs) if i in chosen]


def select_fold(pairs: Sequence[SynonymPair], fold_of: Tuple[int, int], key: Key) -> List[SynonymPair]:
    """The pairs whose rare word is in fold `fold_of` of all the pairs' rare words (`folds.fold_members`)."""
    members = fold_members((key(p.substitute) for p in pairs), *fold_of)
    return [p for p in pairs if key(p.substitute) in members]


__all__ = [
    "SOURCES",
    "SynonymPair",
    "WORDNET",
    "distinct_pairs",
    "one_piece",
    "read_substitutions",
    "rule_says_rare",
    "sample_pairs",
    "select_fold",
    "synonym_names",
    "wordnet_pairs",
]
