"""How frequent a word is, on the Zipf scale (log10 of occurrences per billion words).

One scale whatever the source: wordfreq's lists for a language (built from
billions of words: the world scale), the counts BERTRAM was trained on
(`counts.tsv` in its model directory, written by `train`), or the corpus behind
a context store. A corpus of N words cannot tell frequencies below one
occurrence in N (`CountTable.resolution_zipf`), so corpus counts are a second
estimate, for the words wordfreq does not list (`WorldFrequencies`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Protocol, Tuple

import srsly

from ..errors import Errors
from ..fileio import atomic_path
from ..types import PathLike


#: The file of a BERTRAM model directory that holds its training word counts
#: ("word<TAB>count" lines, as `prepare` writes them).
COUNTS_FILE = "counts.tsv"
#: Names a counts file might be given by mistake: refused, never silently ignored.
OTHER_COUNT_FILES = ("counts.json", "word_counts.json", "word_counts.tsv")
FORMAT_NAME = "spacy-bertram-frequencies"
#: Words per Zipf unit: wordfreq's Zipf z is 10**z occurrences per 10**9 words.
ZIPF_SCALE = 1_000_000_000
#: The rare-word rule's default threshold (about once per million words): below it a multi-piece
#: word gets a BERTRAM vector; training's extra multi-piece words are taken at or above it.
DEFAULT_MAX_ZIPF = 3.0


def zipf_from_count(count: int, total: int) -> float:
    """Zipf value of `count` occurrences in a corpus of `total` words (0 if unseen)."""
    if count <= 0 or total <= 0:
        return 0.0
    return max(0.0, math.log10(count * 1e9 / total))


def check_max_zipf(max_zipf: Any, what: str = "rare_words.max_zipf") -> None:
    """A rarity threshold on this scale: above 0 and at most 9 (wordfreq's top is about 8).

    NaN and infinity are refused as well: `zipf < nan` is false for every word, so
    nothing would be rare. Here, not in rare_words.py, so that the command line
    checks --max-zipf without importing spaCy.
    """
    if isinstance(max_zipf, bool) or not isinstance(max_zipf, (int, float)) or not 0 < max_zipf <= 9:
        raise ValueError(Errors.E039.format(what=what, max_zipf=max_zipf))


class Frequencies(Protocol):
    """Anything that can say how frequent a word is, on the Zipf scale."""

    source: str

    def zipf(self, word: str) -> float: ...


class CountTable:
    """Word counts with their corpus size: a model's training counts, shipped with it.

    Two rules read a table, each with its own queries:

    * the pipeline's rare-word rule (`count`, `zipf`): the higher count of the
      word as written and lowercased, so a sentence-initial "The" is as frequent
      as "the"; an unlisted word counts 0 (Zipf 0, rarest);
    * rarification's rule (`estimated_count`, `is_rare_count`, `is_known`): a
      raw count against a count threshold (100, or 1000), the count of the word
      as written if listed, else lowercased (a capitalised substitute keeps its
      own count), and an unlisted word estimated from wordfreq's list for
      `unseen` (a language code), scaled to the table's corpus size.

    `unseen` is not serialised (the pipeline's rule never estimates); with it a
    table may be empty (wordfreq alone, over `total` or 10**9 words).
    """

    source = "model"

    def __init__(self, counts: Mapping[str, int], total: Optional[int] = None, unseen: Optional[str] = None) -> None:
        self.counts: Dict[str, int] = {str(w): int(n) for w, n in counts.items() if int(n) > 0}
        self.unseen: Optional[WordfreqFrequencies] = WordfreqFrequencies(unseen) if unseen else None
        self.total = int(total) if total else sum(self.counts.values()) or (ZIPF_SCALE if self.unseen else 0)
        if not (self.counts or self.unseen) or self.total <= 0:
            raise ValueError(Errors.E008)

    @classmethod
    def wordfreq_estimates(cls, total: int = ZIPF_SCALE, lang: str = "en") -> "CountTable":
        """No counts: every word's count estimated from wordfreq for a corpus of `total` words."""
        return cls({}, total, unseen=lang)

    def __len__(self) -> int:
        return len(self.counts)

    @property
    def resolution_zipf(self) -> float:
        """The Zipf value of one occurrence: below it the table cannot tell words apart
        (3.47M words: Zipf 2.46; a billion words: Zipf 0)."""
        return zipf_from_count(1, self.total)

    def count(self, word: str) -> int:
        """The pipeline's count: the higher of the word as written and lowercased."""
        return max(self.counts.get(word, 0), self.counts.get(word.lower(), 0))

    def zipf(self, word: str) -> float:
        return zipf_from_count(self.count(word), self.total)

    def estimated_count(self, word: str) -> float:
        """Rarification's count: the first listed of the word as written and lowercased,
        else wordfreq's Zipf z for `unseen` as 10**z per 10**9 words over `total`
        (0 where wordfreq does not know the word, or without `unseen`)."""
        for key in (word, word.lower()):
            if key in self.counts:
                return float(self.counts[key])
        if self.unseen is None:
            return 0.0
        z = self.unseen.zipf(word)
        return 0.0 if z <= 0 else 10 ** (z - 9) * self.total

    def is_rare_count(self, word: str, threshold: float) -> bool:
        """Rarification's rule: the estimated count is below `threshold` occurrences."""
        return self.estimated_count(word) < threshold

    def is_known(self, word: str) -> bool:
        """Listed (as written or lowercased), or in wordfreq's list for `unseen`: a real word."""
        if word in self.counts or word.lower() in self.counts:
            return True
        return self.unseen is not None and self.unseen.zipf(word) > 0

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps({"format": FORMAT_NAME, "total": self.total, "counts": self.counts})

    @classmethod
    def from_bytes(cls, data: bytes) -> "CountTable":
        msg = srsly.msgpack_loads(data)
        if not isinstance(msg, dict) or msg.get("format") != FORMAT_NAME:
            raise ValueError(Errors.E009)
        return cls(msg["counts"], msg["total"])

    @classmethod
    def from_file(cls, path: PathLike, unseen: Optional[str] = None) -> "CountTable":
        """Read `word<TAB>count` lines; a line of another shape is an error naming it."""
        path = Path(path)
        try:
            counts: Dict[str, int] = {}
            with open(path, encoding="utf8") as file_:
                for number, line in enumerate(file_, 1):
                    if not line.strip():
                        continue
                    fields = line.rstrip("\n").split("\t")
                    if len(fields) != 2 or not fields[0] or not fields[1].isdigit():
                        raise ValueError(Errors.E010.format(number=number, line=line[:60]))
                    counts[fields[0]] = counts.get(fields[0], 0) + int(fields[1])
            return cls(counts, unseen=unseen)
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(Errors.E011.format(path=str(path), err=err)) from err

    @classmethod
    def from_model_dir(cls, directory: PathLike) -> Optional["CountTable"]:
        """The training counts in a BERTRAM model directory's counts.tsv, or None."""
        path = Path(directory) / COUNTS_FILE
        if path.is_file():
            return cls.from_file(path)
        stray = [name for name in OTHER_COUNT_FILES if (Path(directory) / name).exists()]
        if stray:
            raise ValueError(Errors.E012.format(directory=str(directory), stray=stray[0], COUNTS_FILE=COUNTS_FILE))
        return None

    def to_disk(self, path: PathLike, *, overwrite: bool = False) -> None:
        write_counts(path, self.counts, overwrite=overwrite)


def write_counts(path: PathLike, counts: Mapping[str, int], *, overwrite: bool = False) -> None:
    """counts.tsv ("word<TAB>count", most frequent first), written atomically; an existing file (it carries no
    mark) is replaced only with `overwrite` (`fileio.atomic_path`)."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    with atomic_path(path, overwrite=overwrite) as tmp:
        with open(tmp, "w", encoding="utf8") as file_:
            for word, count in ranked:
                file_.write(f"{word}\t{count}\n")


def wordfreq_has_language(lang: str) -> bool:
    """Whether wordfreq has a word list for `lang` (English: yes)."""
    from wordfreq import available_languages

    return lang in available_languages()


def wordfreq_band(lang: str, min_zipf: float, max_zipf: float = math.inf) -> Iterator[Tuple[str, float]]:
    """wordfreq's words in `lang` with min_zipf <= Zipf < max_zipf, most frequent first (its list's order)."""
    from wordfreq import iter_wordlist, zipf_frequency

    for word in iter_wordlist(lang):
        zipf = float(zipf_frequency(word, lang))
        if zipf < min_zipf:
            return
        if zipf < max_zipf:
            yield word, zipf


class WordfreqFrequencies:
    """wordfreq's Zipf frequencies in the pipeline's language: the fallback when a model ships no counts.

    A language wordfreq has no list for is refused here: with English counts
    every word of another language would be rare.
    """

    source = "wordfreq"

    def __init__(self, lang: str = "en") -> None:
        from wordfreq import available_languages, zipf_frequency

        if lang not in available_languages():
            raise ValueError(Errors.E013.format(lang=lang))
        try:
            zipf_frequency("a", lang)
        except (ImportError, LookupError) as err:
            raise ValueError(Errors.E014.format(lang=lang, err=err)) from err
        self.lang = lang

    def zipf(self, word: str) -> float:
        from wordfreq import zipf_frequency

        return float(zipf_frequency(word, self.lang))

    def frequent_forms(self, min_zipf: float) -> "FrequentForms":
        """The forms at or above `min_zipf`, answered without a wordfreq call (built once per process)."""
        return frequent_wordfreq_forms(self.lang, float(min_zipf))


class FrequentForms:
    """Word forms at or above a Zipf threshold, answered by a dict lookup: the rare-word rule's answer for
    most forms of new text without a wordfreq call (about 23 us each) or a tokenizer call.

    Only ASCII-alphabetic forms are looked up, lowercased: for those wordfreq's own lookup folds the case
    and reads the same list entry, so the Zipf is exactly `zipf_frequency`'s (tests/test_rarity_frequencies.py checks
    every entry). Anything else (accents, digits, apostrophes) and every form below the threshold answers
    None: its frequency comes from the source itself.
    """

    def __init__(self, zipf_of: Dict[str, float], min_zipf: float) -> None:
        self.zipf_of = zipf_of
        self.min_zipf = min_zipf

    def zipf(self, word: str) -> Optional[float]:
        if word.isascii() and word.isalpha():
            return self.zipf_of.get(word.lower())
        return None

    def __len__(self) -> int:
        return len(self.zipf_of)


@lru_cache(maxsize=8)
def frequent_wordfreq_forms(lang: str, min_zipf: float) -> FrequentForms:
    """wordfreq's ASCII-alphabetic entries for `lang` at or above `min_zipf` (28,338 English ones at 3.0,
    about 0.5 s to build, reading the list included), with the Zipf `zipf_frequency` rounds them to."""
    from wordfreq import freq_to_zipf, get_frequency_dict

    zipf_of: Dict[str, float] = {}
    for word, frequency in get_frequency_dict(lang, "best").items():
        if word.isascii() and word.isalpha():
            zipf = round(freq_to_zipf(frequency), 2)
            if zipf >= min_zipf:
                zipf_of[word] = zipf
    return FrequentForms(zipf_of, min_zipf)


class StoreFrequencies:
    """Counts of the corpus behind a context store (looked up live, not copied)."""

    source = "store"

    def __init__(self, get_store: Callable[[], object]) -> None:
        self.get_store = get_store

    def zipf(self, word: str) -> float:
        store = self.get_store()
        return zipf_from_count(store.count(word), store.total_words)  # type: ignore[attr-defined]

    @property
    def resolution_zipf(self) -> float:
        return zipf_from_count(1, self.get_store().total_words)  # type: ignore[attr-defined]


class WorldFrequencies:
    """wordfreq's Zipf, with corpus counts as the second estimate for words it does not list.

    wordfreq's lists come from billions of words, so for a word it lists it is the
    better estimate of how often the encoder met the word in pretraining; corpus
    counts only fill its gaps (new words, names, a domain's terms).
    """

    source = "wordfreq+model"

    def __init__(self, world: WordfreqFrequencies, counts: Optional[CountTable]) -> None:
        self.world = world
        self.counts = counts

    def zipf(self, word: str) -> float:
        z = self.world.zipf(word)
        if z > 0 or self.counts is None:
            return z
        return self.counts.zipf(word)

    def frequent_forms(self, min_zipf: float) -> FrequentForms:
        """wordfreq's: a form it lists at or above `min_zipf` (> 0) gets its Zipf, never the counts'."""
        return self.world.frequent_forms(min_zipf)


__all__ = [
    "COUNTS_FILE",
    "CountTable",
    "DEFAULT_MAX_ZIPF",
    "Frequencies",
    "FrequentForms",
    "check_max_zipf",
    "frequent_wordfreq_forms",
    "StoreFrequencies",
    "WordfreqFrequencies",
    "WorldFrequencies",
    "wordfreq_band",
    "wordfreq_has_language",
    "write_counts",
    "zipf_from_count",
]
