"""The substitution dictionary of rarification: rare same-POS WordNet synonyms
(most frequent sense, inflected like the original) and keyboard misspellings.
"""

from __future__ import annotations

import random
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy_bertram import CountTable, RareWordFinder, RareWordRule
from spacy_bertram.project_support import (
    DEFAULT_MIN_WORDPIECES,
    PathLike,
    WordfreqFrequencies,
    WorldFrequencies,
    load_wordnet,
)


# ---------------------------------------------------------------------------
# Substitution dictionary

#: Rare for rarification: below this Zipf value (the threshold the paper describes,
#: "fewer than 100 occurrences in WWC", about a billion words); its "-1000" variant is Zipf 3.
DEFAULT_RARIFY_MAX_ZIPF = 2.0

#: Penn Treebank tag -> WordNet POS. Proper nouns are left alone on purpose:
#: replacing a name by a "synonym" changes what the text is about.
TAG_TO_WORDNET = {
    **{t: "n" for t in ("NN", "NNS")},
    **{t: "v" for t in ("VB", "VBD", "VBG", "VBN", "VBP", "VBZ")},
    **{t: "a" for t in ("JJ", "JJR", "JJS")},
    **{t: "r" for t in ("RB", "RBR", "RBS")},
}
#: Tags whose inflection only counts when lemminflect knows it ("felicitouser").
_DICTIONARY_ONLY_TAGS = {"JJR", "JJS", "RBR", "RBS"}
_QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _keyboard_neighbours() -> Dict[str, str]:
    grid = {c: (r, i) for r, row in enumerate(_QWERTY_ROWS) for i, c in enumerate(row)}
    out: Dict[str, str] = {}
    for c, (r, i) in grid.items():
        out[c] = "".join(d for d, (r2, i2) in grid.items() if d != c and abs(r - r2) <= 1 and abs(i - i2) <= 1)
    return out


KEYBOARD_NEIGHBOURS = _keyboard_neighbours()


def match_case(original: str, word: str) -> str:
    """Give `word` the capitalisation pattern of `original`."""
    if len(original) > 1 and original.isupper():
        return word.upper()
    if original[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def inflect(lemma: str, tag: str) -> Optional[str]:
    """`lemma` inflected for a Penn tag with lemminflect; None when unknown."""
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=False)
    if not forms and tag not in _DICTIONARY_ONLY_TAGS:
        forms = getInflection(lemma, tag=tag, inflect_oov=True)
    if forms:
        return forms[0]
    return lemma if tag in ("NN", "VB", "VBP", "JJ", "RB") else None


def misspell_candidates(word: str, rng: random.Random, tries: int = 50) -> Iterable[str]:
    """Random single edits of an inner character (first and last stay).

    Edits: swap two adjacent inner characters, drop one, duplicate one, or
    replace one by a QWERTY neighbour. Words shorter than 4 letters or with
    non-letters are not misspelt (an edit would make them unreadable).
    """
    if len(word) < 4 or not word.isalpha():
        return
    inner = range(1, len(word) - 1)
    for _ in range(tries):
        i = rng.choice(inner)
        edit = rng.choice(("swap", "drop", "duplicate", "replace"))
        if edit == "swap" and i + 1 < len(word) - 1:
            yield word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        elif edit == "drop":
            yield word[:i] + word[i + 1 :]
        elif edit == "duplicate":
            yield word[:i] + word[i] + word[i:]
        elif edit == "replace":
            near = KEYBOARD_NEIGHBOURS.get(word[i].lower())
            if near:
                yield word[:i] + match_case(word[i], rng.choice(near)) + word[i + 1 :]


def substitute_rarity(
    max_zipf: float = DEFAULT_RARIFY_MAX_ZIPF,
    counts: Optional[CountTable] = None,
    word_pieces: Optional[Callable[[str], Sequence[int]]] = None,
    unk_id: Optional[int] = None,
    lang: str = "en",
) -> RareWordFinder:
    """The `bertram` component's rare-word rule for substitutes: wordfreq's Zipf below
    `max_zipf` (corpus `counts` for words wordfreq lacks) and 2+ wordpieces of the
    encoder's tokenizer (`word_pieces`; without it the wordpiece test is off).
    No BERTRAM model is needed: a substitute only has to be rare to the encoder."""
    rule = RareWordRule(max_zipf=max_zipf, min_wordpieces=DEFAULT_MIN_WORDPIECES if word_pieces is not None else 1)
    return RareWordFinder.build(
        rule,
        WorldFrequencies(WordfreqFrequencies(lang), counts),
        word_pieces if word_pieces is not None else (lambda word: [word]),
        unk_id=unk_id,
    )


class SubstitutionDictionary:
    """Rare same-POS synonyms (most frequent WordNet sense) and misspellings.

    Rare = the component's rule (`rarity`, see `substitute_rarity`): on the Zipf
    scale and, given the encoder's tokenizer, 2+ wordpieces. `frequencies` (corpus
    counts, wordfreq estimates for unlisted words) says which strings are real words
    and records each substitute's estimated corpus count.
    """

    def __init__(
        self,
        frequencies: Optional[CountTable] = None,
        max_zipf: float = DEFAULT_RARIFY_MAX_ZIPF,
        wordnet=None,
        wordnet_dir: Optional[PathLike] = None,
        rarity: Optional[RareWordFinder] = None,
    ) -> None:
        if wordnet is None:
            wordnet = load_wordnet(wordnet_dir, command="rarify")
        self.wordnet = wordnet
        self.frequencies = frequencies if frequencies is not None else CountTable.wordfreq_estimates()
        counts = self.frequencies if self.frequencies.counts else None
        self.rarity = rarity if rarity is not None else substitute_rarity(max_zipf, counts)
        self.max_zipf = self.rarity.rule.max_zipf
        self._cache: Dict[Tuple[str, str, str], List[str]] = {}

    def _first_synset(self, word: str, lemma: str, wn_pos: str):
        for key in (lemma.lower(), word.lower()):
            if key:
                synsets = self.wordnet.synsets(key, wn_pos)
                if synsets:
                    return synsets[0]
        base = self.wordnet.morphy(word.lower(), wn_pos)
        synsets = self.wordnet.synsets(base, wn_pos) if base else []
        return synsets[0] if synsets else None

    def synonyms(self, word: str, tag: str, lemma: str = "") -> List[str]:
        """All single-word synonyms of the most frequent sense, inflected like `word`."""
        wn_pos = TAG_TO_WORDNET.get(tag)
        if wn_pos is None or not word.isalpha():
            return []
        synset = self._first_synset(word, lemma or word, wn_pos)
        if synset is None:
            return []
        own = {word.lower(), (lemma or word).lower()}
        out: List[str] = []
        for name in synset.lemma_names():
            if not name.isalpha() or name.lower() in own or name != name.lower():
                continue  # multi-word, hyphenated, the word itself, or a proper name
            form = inflect(name, tag)
            if form and form.lower() not in own and match_case(word, form) not in out:
                out.append(match_case(word, form))
        return out

    def rare_synonyms(self, word: str, tag: str, lemma: str = "") -> List[str]:
        """Synonyms that are rare to the encoder (the component's rule)."""
        key = (word, tag, lemma)
        if key not in self._cache:
            self._cache[key] = [s for s in self.synonyms(word, tag, lemma) if self.rarity.is_rare_word(s)]
        return self._cache[key]

    def describe(self, word: str) -> Tuple[float, Optional[float], Optional[int]]:
        """A substitute's estimated corpus count, Zipf and wordpieces, as rarify.json reports them."""
        decision = self.rarity.decide_word(word)
        return self.frequencies.estimated_count(word), decision.zipf, decision.wordpieces

    def is_misspelling(self, candidate: str) -> bool:
        """Not a real word (wordfreq, corpus counts, WordNet) and rare."""
        if self.frequencies.is_known(candidate):
            return False
        if self.wordnet.synsets(candidate.lower()):
            return False
        return self.rarity.is_rare_word(candidate)

    def misspelling(self, word: str, rng: random.Random) -> Optional[str]:
        """A random misspelling of `word` that is no real word, or None."""
        for candidate in misspell_candidates(word, rng):
            if candidate != word and self.is_misspelling(candidate):
                return candidate
        return None
