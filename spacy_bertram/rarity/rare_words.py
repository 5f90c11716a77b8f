"""Which tokens are rare to the encoder: the configurable rule and its frequency sources.

A token gets a BERTRAM vector when the *encoder* lacks a good representation of
it: it is alphabetic, it is a whole word (not a piece the tokenizer split off,
as "wo" and "n't" of "won't"), the encoder's tokenizer cuts it into 2+
wordpieces or maps it to the unknown token (a one-piece word has an embedding
trained on every occurrence of it, which BERTRAM can only approximate), and
its world frequency is below a Zipf threshold.

Frequencies are on the Zipf scale (`frequencies`): wordfreq's for the
pipeline's language, with corpus counts (`counts.tsv` in a BERTRAM model
directory, or a context store's corpus) as a second estimate where wordfreq
does not list a word, never trusted below their resolution.

Dataset rarification (the project's `bertram_experiments.rarification.rarify`) reads the same rule
through the same `RareWordFinder`, so the words rarification puts in and the words the
component injects are rare on one scale.

The rule is a registered function (`spacy-bertram.RareWords.v1`) so that a
pipeline config states it in full and users can register their own.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from spacy.tokens import Doc, Token

from ..bounds import describe, is_count
from ..errors import Errors
from .frequencies import DEFAULT_MAX_ZIPF, Frequencies, FrequentForms, check_max_zipf
from ..types import DEFAULT_MIN_WORDPIECES


FREQUENCY_SOURCES = ("auto", "model", "wordfreq", "store")
#: Apostrophes that mark a clitic piece ("n't", "'ll", "’ve").
APOSTROPHES = ("'", "\u2019")
#: Possessive endings, which follow a whole written word ("Zelenskyy|'s", "Joneses|'"); a lone
#: apostrophe is as often a quotation mark ("'kumquat'"). Names in the possessive are the rare
#: words NER cares about most, so these never make their neighbour a split piece.
POSSESSIVES = frozenset({"'s", "'S", "\u2019s", "\u2019S", "'", "\u2019"})


@dataclass(frozen=True)
class RareWordRule:
    """Settings that decide which tokens get BERTRAM vectors.

    frequencies: "auto" (wordfreq in the pipeline's language, the model's training
        counts for words wordfreq does not list; the counts alone where wordfreq has
        no list for the language), "wordfreq", "model" (the counts alone) or
        "store" (the context store's corpus counts alone).
    max_zipf: a token is rare when its Zipf frequency is below this (3.0 is about
        once per million words; "fewer than 1000 in WWC" as the paper puts it).
    alpha_only: only alphabetic tokens (no numbers, punctuation, emoji); when
        False a token still needs at least one letter.
    min_wordpieces: only tokens the encoder cuts into at least this many
        wordpieces; a token the tokenizer maps to its unknown token always
        qualifies. 2 (default): one-piece words keep their trained embedding;
        1 opts them in.
    min_length: shortest token, in characters.
    skip_split_pieces: skip pieces of a word the tokenizer split ("wo" and "n't"
        of "won't", "gon" and "na" of "gonna"): their meaning is the whole word's.
        A word in the possessive ("Zelenskyy's") is not such a piece.
    """

    frequencies: str = "auto"
    max_zipf: float = DEFAULT_MAX_ZIPF
    alpha_only: bool = True
    min_wordpieces: int = DEFAULT_MIN_WORDPIECES
    min_length: int = 2
    skip_split_pieces: bool = True

    def __post_init__(self) -> None:
        if self.frequencies not in FREQUENCY_SOURCES:
            raise ValueError(
                Errors.E156.format(
                    setting="rare_words.frequencies", choices=", ".join(FREQUENCY_SOURCES), value=self.frequencies
                )
            )
        check_max_zipf(self.max_zipf)
        if not (is_count(self.min_wordpieces, "tokens") and is_count(self.min_length, "tokens")):
            raise ValueError(
                Errors.E040.format(
                    bounds=describe("tokens"), min_wordpieces=self.min_wordpieces, min_length=self.min_length
                )
            )

    def reject_token(self, token: Token) -> Optional[str]:
        """Why the cheap, table-free part of the rule rejects `token`, or None."""
        text = token.text
        if token.is_space or len(text) < self.min_length:
            return f"shorter than min_length {self.min_length}" if not token.is_space else "whitespace"
        if self.alpha_only:
            if not (token.is_alpha or is_alphabetic(text)):
                return "not alphabetic"
        elif not any(ch.isalpha() for ch in text) or any(ch.isspace() for ch in text):
            return "no letter"
        if self.skip_split_pieces and is_split_piece(token):
            return "a piece of a word the tokenizer split"
        return None

    def is_candidate(self, token: Token) -> bool:
        """The cheap, table-free part of the rule."""
        return self.reject_token(token) is None


def is_alphabetic(text: str) -> bool:
    """Letters, and the combining marks many scripts write vowels with (Devanagari "हिन्दी").

    `str.isalpha` (and so spaCy's `is_alpha`) is False for those marks.
    """
    return any(ch.isalpha() for ch in text) and all(
        ch.isalpha() or unicodedata.category(ch) in ("Mn", "Mc", "Me") for ch in text
    )


def _glues(text: str) -> bool:
    """A neighbour that makes a token part of a longer word: letters or a clitic ("n't", "'ll"),
    but not a possessive ending or a quotation mark."""
    if text in POSSESSIVES:
        return False
    return text[:1].isalpha() or any(mark in text for mark in APOSTROPHES)


def is_split_piece(token: Token) -> bool:
    """True for a token written without a space next to letters or a clitic: a piece of
    one written word that the tokenizer split ("wo|n't", "ca|n't", "gon|na", "can|not").
    A word before a possessive ("kumquat|'s") or inside quotation marks is a whole word."""
    doc = token.doc
    if not token.whitespace_ and token.i + 1 < len(doc) and _glues(doc[token.i + 1].text):
        return True
    if token.i > 0:
        before = doc[token.i - 1]
        if not before.whitespace_ and _glues(before.text):
            return True
    return False


@dataclass(frozen=True)
class RareDecision:
    """The rule's decision for one token, with the figures it rests on."""

    text: str
    rare: bool
    reason: str
    zipf: Optional[float] = None
    wordpieces: Optional[int] = None

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "rare": self.rare,
            "reason": self.reason,
            "zipf": None if self.zipf is None else round(self.zipf, 2),
            "wordpieces": self.wordpieces,
        }


def _always(word: str) -> bool:
    return True


class RareWordFinder:
    """Applies a rule with a frequency source and the encoder's tokenizer, memoised per word.

    `word_pieces(word)` gives the encoder's wordpiece ids of a word ([] if the
    tokenizer drops it); `unk_id` is its unknown token. `has_signal(word)` is
    False for words BERTRAM would see nothing of (every character n-gram unknown
    and every wordpiece the unknown token); such tokens keep their stock encoding
    rather than get a vector made of UNKs.
    """

    def __init__(
        self,
        rule: RareWordRule,
        frequencies: Frequencies,
        word_pieces: Callable[[str], Sequence[int]],
        has_signal: Callable[[str], bool],
        unk_id: Optional[int] = None,
        memo_size: int = 200_000,
        frequent: Optional[FrequentForms] = None,
    ) -> None:
        self.rule = rule
        self.frequencies = frequencies
        self.frequent = frequent
        self.word_pieces = word_pieces
        self.has_signal = has_signal
        self.unk_id = unk_id
        self.memo_size = memo_size
        self._memo: Dict[str, RareDecision] = {}

    @classmethod
    def build(
        cls,
        rule: RareWordRule,
        frequencies: Frequencies,
        word_pieces: Callable[[str], Sequence[int]],
        *,
        unk_id: Optional[int] = None,
        has_signal: Optional[Callable[[str], bool]] = None,
    ) -> "RareWordFinder":
        """The finder as everything builds it (the component, rarification, the experiments' subsets): with the
        frequencies' table of forms at or above max_zipf where they have one (wordfreq's), and, without
        `has_signal`, every word seen as having some signal (a rule that needs no BERTRAM model)."""
        frequent_forms = getattr(frequencies, "frequent_forms", None)
        return cls(
            rule,
            frequencies,
            word_pieces,
            has_signal if has_signal is not None else _always,
            unk_id=unk_id,
            frequent=frequent_forms(rule.max_zipf) if frequent_forms is not None else None,
        )

    def forget(self) -> None:
        """Drop the memoised decisions: the next doc pays the rule in full, as text never seen does."""
        self._memo.clear()

    def decide_word(self, word: str) -> RareDecision:
        """The table and tokenizer part of the rule for a word (memoised)."""
        known = self._memo.get(word)
        if known is not None:
            return known
        zipf = self._frequent_zipf(word)
        if zipf is None:
            zipf = float(self.frequencies.zipf(word))
        pieces = list(self.word_pieces(word))
        unknown = self.unk_id is not None and self.unk_id in pieces
        if zipf >= self.rule.max_zipf:
            why = f"frequent: Zipf {zipf:.2f} >= max_zipf {self.rule.max_zipf}"
            decision = RareDecision(word, False, why, zipf, len(pieces))
        elif not pieces:
            decision = RareDecision(word, False, "the tokenizer drops it", zipf, 0)
        elif len(pieces) < self.rule.min_wordpieces and not unknown:
            decision = RareDecision(
                word,
                False,
                f"the encoder has it as {len(pieces)} wordpiece(s) (min_wordpieces "
                f"{self.rule.min_wordpieces}): its own embedding is kept",
                zipf,
                len(pieces),
            )
        elif not self.has_signal(word):
            decision = RareDecision(
                word, False, "BERTRAM sees nothing of it (unknown n-grams and wordpieces)", zipf, len(pieces)
            )
        else:
            why = "unknown to the encoder" if unknown else f"{len(pieces)} wordpieces"
            decision = RareDecision(
                word, True, f"rare: Zipf {zipf:.2f} < {self.rule.max_zipf}, {why}", zipf, len(pieces)
            )
        if len(self._memo) >= self.memo_size:
            self._memo.clear()
        self._memo[word] = decision
        return decision

    def _frequent_zipf(self, word: str) -> Optional[float]:
        """The Zipf of a form the frequent-form table holds at or above max_zipf (None: ask the source)."""
        if self.frequent is None or self.frequent.min_zipf < self.rule.max_zipf:
            return None
        return self.frequent.zipf(word)

    def is_rare_word(self, word: str) -> bool:
        """`decide_word(word).rare`, with a form the frequent-form table holds answered from it: frequent,
        whatever its wordpieces, so neither wordfreq nor the tokenizer is asked."""
        known = self._memo.get(word)
        if known is not None:
            return known.rare
        if self._frequent_zipf(word) is not None:
            return False
        return self.decide_word(word).rare

    def explain(self, token: Token) -> RareDecision:
        """Whether `token` is rare, and why."""
        rejected = self.rule.reject_token(token)
        if rejected is not None:
            return RareDecision(token.text, False, rejected)
        return self.decide_word(token.text)

    def find(self, doc: Doc) -> List[int]:
        """Indices of the rare tokens of `doc`, in order."""
        return [t.i for t in doc if self.rule.is_candidate(t) and self.is_rare_word(t.text)]


def group_by_word(doc: Doc, indices: Iterable[int], key: Callable[[str], str]) -> Dict[str, List[int]]:
    """Token indices grouped by the word form the network sees (one vector per group)."""
    groups: Dict[str, List[int]] = {}
    for i in indices:
        groups.setdefault(key(doc[i].text), []).append(i)
    return groups
