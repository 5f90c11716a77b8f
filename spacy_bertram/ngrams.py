"""Character n-gram vocabulary for BERTRAM's form part.

A word is padded with a boundary symbol on both sides and cut into all
n-grams with n in [min_n, max_n]. N-grams seen fewer than `min_count` times
in the training vocabulary map to UNK, so rare spellings still get a vector.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Sequence, Union

from .fileio import write_json_atomic

PAD = "<pad>"
UNK = "<unk>"
PAD_ID = 0
UNK_ID = 1
BOUNDARY = "\u2581"  # a symbol that does not occur inside ordinary words


def word_ngrams(word: str, min_n: int = 3, max_n: int = 5, boundary: str = BOUNDARY) -> List[str]:
    """All n-grams of the boundary-padded word, shortest first."""
    padded = f"{boundary}{word}{boundary}"
    grams: List[str] = []
    for n in range(min_n, max_n + 1):
        for start in range(0, len(padded) - n + 1):
            grams.append(padded[start : start + n])
    if not grams:  # shorter than min_n even with boundaries: keep the whole padded word
        grams.append(padded)
    return grams


class NgramVocab:
    """Maps character n-grams to row ids of the form embedding table."""

    def __init__(
        self,
        ngrams: Sequence[str] = (),
        min_n: int = 3,
        max_n: int = 5,
        min_count: int = 3,
        lowercase: bool = False,
    ) -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError(f"Need 1 <= min_n <= max_n, got min_n={min_n}, max_n={max_n}")
        self.min_n = min_n
        self.max_n = max_n
        self.min_count = min_count
        self.lowercase = lowercase
        self.itos: List[str] = [PAD, UNK]
        self.stoi: Dict[str, int] = {PAD: PAD_ID, UNK: UNK_ID}
        for gram in ngrams:
            self.add(gram)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, gram: str) -> bool:
        return gram in self.stoi

    def add(self, gram: str) -> int:
        if gram not in self.stoi:
            self.stoi[gram] = len(self.itos)
            self.itos.append(gram)
        return self.stoi[gram]

    def ngrams(self, word: str) -> List[str]:
        return word_ngrams(word.lower() if self.lowercase else word, self.min_n, self.max_n)

    def encode(self, word: str) -> List[int]:
        """N-gram ids of `word`; unseen n-grams become UNK."""
        return [self.stoi.get(gram, UNK_ID) for gram in self.ngrams(word)]

    @classmethod
    def from_words(
        cls,
        words: Union[Mapping[str, int], Iterable[str]],
        min_n: int = 3,
        max_n: int = 5,
        min_count: int = 3,
        lowercase: bool = False,
    ) -> "NgramVocab":
        """Count n-grams over a word list (or word->frequency map, counting each word once)."""
        vocab = cls(min_n=min_n, max_n=max_n, min_count=min_count, lowercase=lowercase)
        counts: Counter = Counter()
        for word in words:
            counts.update(vocab.ngrams(word))
        for gram, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            if count >= min_count:
                vocab.add(gram)
        return vocab

    def to_dict(self) -> dict:
        return {
            "min_n": self.min_n,
            "max_n": self.max_n,
            "min_count": self.min_count,
            "lowercase": self.lowercase,
            "boundary": BOUNDARY,
            "ngrams": self.itos[2:],
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "NgramVocab":
        """Validated field by field: a wrong type is a ValueError naming the key."""
        if not isinstance(data, Mapping):
            raise ValueError(f"an n-gram vocabulary is a JSON object, got {type(data).__name__}")
        for key in ("min_n", "max_n"):
            if key not in data:
                raise ValueError(f"the n-gram vocabulary has no {key!r}")
        for key in ("min_n", "max_n", "min_count"):
            value = data.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{key!r} must be an integer, got {value!r}")
        lowercase = data.get("lowercase", False)
        if not isinstance(lowercase, bool):
            raise ValueError(f"'lowercase' must be true or false, got {lowercase!r}")
        ngrams = data.get("ngrams", [])
        if not isinstance(ngrams, list) or not all(isinstance(g, str) for g in ngrams):
            raise ValueError("'ngrams' must be a list of strings")
        if data.get("boundary", BOUNDARY) != BOUNDARY:
            raise ValueError("N-gram vocabulary uses a different boundary symbol")
        return cls(
            ngrams=ngrams,
            min_n=data["min_n"],
            max_n=data["max_n"],
            min_count=data.get("min_count", 1),
            lowercase=lowercase,
        )

    def to_disk(self, path: Union[str, Path]) -> None:
        write_json_atomic(Path(path), self.to_dict())

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "NgramVocab":
        """Read ngrams.json; every problem is a ValueError naming the file."""
        try:
            with open(path, encoding="utf8") as file_:
                return cls.from_dict(json.load(file_))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(f"Bad n-gram vocabulary file {str(path)!r}: {err}") from err
