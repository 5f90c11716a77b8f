"""Where training words and their contexts come from.

Training needs only three questions answered: which words are frequent, how
frequent, and a few contexts of a word. `ContextStore` (the SQLite store that
`prepare` builds) answers them; `MemoryTrainingSource` answers them from a list of
lines, for tests and small experiments.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Dict, Iterable, Iterator, List, Optional, Protocol, Tuple

_WORD = re.compile(r"[^\W\d_]+")


class TrainingSource(Protocol):
    """What training reads: the words by frequency, and a few contexts of a word (`ContextStore`,
    `MemoryTrainingSource`)."""

    def counts(self, min_count: int = 1) -> Iterable[Tuple[str, int]]: ...

    def contexts(self, word: str, limit: Optional[int] = None) -> List[str]: ...


class MemoryTrainingSource:
    """Counts and contexts (whole lines) kept in memory; `words` are case-sensitive."""

    def __init__(self, counts: Dict[str, int], contexts: Dict[str, List[str]]) -> None:
        self._counts = dict(counts)
        self._contexts = {w: list(c) for w, c in contexts.items()}

    @classmethod
    def from_lines(cls, lines: Iterable[str], max_contexts: int = 64, lowercase: bool = True) -> "MemoryTrainingSource":
        counts: Counter = Counter()
        contexts: Dict[str, List[str]] = defaultdict(list)
        for line in lines:
            line = line.strip()
            if not line:
                continue
            words = [w.lower() if lowercase else w for w in _WORD.findall(line)]
            counts.update(words)
            for word in set(words):
                bucket = contexts[word]
                if len(bucket) < max_contexts and line not in bucket:
                    bucket.append(line)
        return cls(dict(counts), dict(contexts))

    def counts(self, min_count: int = 1) -> Iterator[Tuple[str, int]]:
        ordered = sorted(self._counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return ((w, c) for w, c in ordered if c >= min_count)

    def count(self, word: str) -> int:
        return self._counts.get(word, 0)

    def contexts(self, word: str, limit: Optional[int] = None) -> List[str]:
        found = self._contexts.get(word, [])
        return list(found if limit is None else found[:limit])
