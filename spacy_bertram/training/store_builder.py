"""Building the context store (`prepare`): two streaming passes over a `Corpus`.

1. `count_words`: word counts in a dict (memory grows with the vocabulary, not
   with the corpus length).
2. `build_context_store`: for each selected word (`context_caps`), a uniform
   reservoir sample of at most `cap` distinct contexts. Only the reservoir
   bookkeeping (a few integers and one 64-bit hash per slot) is in memory;
   context texts go to SQLite in batches. The file is written beside the
   target and renamed into place at the end, so a crash leaves no store.

The store is read by `context_store.py` (`ContextStore`).
"""

from __future__ import annotations

import hashlib
import logging
import random
import sqlite3
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..errors import Errors
from ..fileio import atomic_path
from ..context_store import DEFAULT_WINDOW, FORMAT_NAME, FORMAT_VERSION, SCHEMA, Context
from ..types import PathLike
from .corpus import Corpus, Span, tokenize, tokenize_spans
from .progress import progress_bar
from .settings import DEFAULT_MAX_CONTEXTS, DEFAULT_RARE_MAX_CONTEXTS

logger = logging.getLogger(__name__)


def count_words(corpus: Corpus, progress: bool = True) -> Tuple[Counter, int]:
    """Pass 1: word counts, and the number of lines (for pass 2's progress bar)."""
    counts: Counter = Counter()
    n_lines = 0
    lowercase = corpus.lowercase
    for line in progress_bar(corpus.lines(), progress=progress, desc="Counting words", unit=" lines"):
        counts.update(tokenize(line, lowercase))
        n_lines += 1
    if not counts:
        raise ValueError(Errors.E214.format(what="no words found", paths=[str(p) for p in corpus.files]))
    return counts, n_lines


def context_caps(
    counts: Mapping[str, int],
    min_count: int,
    max_contexts: int = DEFAULT_MAX_CONTEXTS,
    rare_max_contexts: int = DEFAULT_RARE_MAX_CONTEXTS,
    rare_min_count: int = 1,
    max_rare_words: Optional[int] = None,
    include: Iterable[str] = (),
) -> Dict[str, int]:
    """Which words get contexts, and how many at most (word -> cap).

    Training words (count >= min_count) and words in `include` get up to
    `max_contexts`; rarer words (count >= rare_min_count) up to
    `rare_max_contexts` (0 disables them), keeping only the `max_rare_words`
    most frequent of them if given, to bound the store for huge vocabularies.
    """
    if min_count < 1 or rare_min_count < 1:
        raise ValueError(Errors.E245)
    if max_contexts < 1 or rare_max_contexts < 0:
        raise ValueError(Errors.E246)
    caps = {w: min(n, max_contexts) for w, n in counts.items() if n >= min_count}
    for word in include:
        if counts.get(word, 0) > 0:
            caps[word] = min(counts[word], max_contexts)
    if rare_max_contexts:
        rare = [(n, w) for w, n in counts.items() if rare_min_count <= n < min_count and w not in caps]
        if max_rare_words is not None and len(rare) > max_rare_words:
            rare.sort(key=lambda item: (-item[0], item[1]))
            rare = rare[:max_rare_words]
        caps.update((w, min(n, rare_max_contexts)) for n, w in rare)
    return caps


def make_context(line: str, spans: Sequence[Span], i: int, window: int, occurrence: Optional[Span] = None) -> Context:
    """Cut `line` from `window` words before word i to `window` words after it; the occurrence is word i, or
    `occurrence` within it (a part of a hyphen-joined word)."""
    first = spans[max(0, i - window)][1]
    last = spans[min(len(spans) - 1, i + window)][2]
    _, start, end = spans[i] if occurrence is None else occurrence
    return line[first:last], start - first, end - first


def context_digest(text: str) -> int:
    """A 64-bit digest of a context's text, the same in every process (unlike `hash`)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf8"), digest_size=8).digest(), "little", signed=True)


class _Reservoirs:
    """Per-word reservoir samples of distinct contexts, flushed to SQLite in batches.

    In memory: for each selected word, occurrences seen, slots filled and a
    64-bit digest per slot (for de-duplication); texts wait in `pending` until
    the next flush. `choose` and `place` are the whole sampling decision, so
    a Dask run can replay it from (word, digest) pairs alone.
    """

    def __init__(
        self,
        conn: Optional[sqlite3.Connection],
        caps: Sequence[int],
        seed: int,
        batch_size: int,
        word_ids: Optional[Sequence[int]] = None,
    ) -> None:
        self.conn = conn
        self.caps = list(caps)
        self.word_ids = list(word_ids) if word_ids is not None else list(range(len(caps)))
        self.offsets = array("q", [0])
        for cap in caps:
            self.offsets.append(self.offsets[-1] + cap)
        self.hashes = array("q", bytes(8 * self.offsets[-1]))
        self.seen = array("q", bytes(8 * len(caps)))
        self.stored = array("q", bytes(8 * len(caps)))
        self.random = random.Random(seed).random
        self.batch_size = batch_size
        self.pending: Dict[Tuple[int, int], Context] = {}

    def choose(self, wid: int) -> Optional[int]:
        """Algorithm R: the slot this occurrence of word `wid` would take, or None."""
        seen = self.seen[wid] + 1
        self.seen[wid] = seen
        stored, cap = self.stored[wid], self.caps[wid]
        if stored < cap:
            return stored
        slot = int(self.random() * seen)
        return slot if slot < cap else None

    def place(self, wid: int, slot: int, digest: int) -> bool:
        """Take the slot unless the word already holds this context (by digest)."""
        base, stored = self.offsets[wid], self.stored[wid]
        if digest in self.hashes[base : base + stored]:
            return False
        self.hashes[base + slot] = digest
        if slot == stored:
            self.stored[wid] = stored + 1
        return True

    def offer(
        self, wid: int, line: str, spans: Sequence[Span], i: int, window: int, occurrence: Optional[Span] = None
    ) -> None:
        slot = self.choose(wid)
        if slot is None:
            return
        context = make_context(line, spans, i, window, occurrence)
        if self.place(wid, slot, context_digest(context[0])):
            self.add(wid, slot, context)

    def add(self, wid: int, slot: int, context: Context) -> None:
        self.pending[(wid, slot)] = context
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        ids = self.word_ids
        rows = ((ids[wid], slot, text, start, end) for (wid, slot), (text, start, end) in sorted(self.pending.items()))
        self.conn.executemany("INSERT OR REPLACE INTO contexts VALUES (?, ?, ?, ?, ?)", rows)  # type: ignore[union-attr]
        self.conn.commit()  # type: ignore[union-attr]
        self.pending.clear()


class _GrowingReservoirs(_Reservoirs):
    """Reservoirs for words met one by one (a store grown in place, `text_store.py`), whose slots are taken as
    they fill: a word seen once holds one digest, not `cap` of them. Reserving every new word's `cap` slots up
    front, as `prepare` may for words it counted first, made `texts-store --max-contexts 100000000` ask for
    800 MB per word. The draws are `_Reservoirs`', so the sample is the same."""

    def __init__(self, conn: sqlite3.Connection, seed: int, batch_size: int) -> None:
        super().__init__(conn, [], seed, batch_size, word_ids=[])
        self.digests: List[array] = []

    def add_word(self, word_id: int, cap: int, seen: int = 0, digests: Sequence[int] = ()) -> int:
        """Sample one more word, resuming Algorithm R where an earlier add left it: `seen` occurrences so far,
        and the digests of its stored contexts by slot. Returns the word's index here."""
        self.caps.append(cap)
        self.word_ids.append(word_id)
        self.digests.append(array("q", digests))
        self.seen.append(seen)
        self.stored.append(len(digests))
        return len(self.caps) - 1

    def place(self, wid: int, slot: int, digest: int) -> bool:
        held = self.digests[wid]
        if digest in held:
            return False
        if slot == len(held):
            held.append(digest)
            self.stored[wid] = slot + 1
        else:
            held[slot] = digest
        return True


@dataclass
class StorePlan:
    """Word ids (most frequent first) and which words get contexts, with their caps."""

    ranked: List[Tuple[str, int]]
    selected: List[Tuple[int, int]]  # (word id, cap), by word id
    slot_of: Dict[str, int]  # word -> index into `selected`

    @classmethod
    def make(cls, counts: Mapping[str, int], caps: Mapping[str, int]) -> "StorePlan":
        if not counts:
            raise ValueError(Errors.E247)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        word_ids = {word: i for i, (word, _) in enumerate(ranked)}
        selected = sorted((word_ids[w], cap) for w, cap in caps.items() if cap > 0 and w in word_ids)
        return cls(ranked, selected, {ranked[wid][0]: k for k, (wid, _) in enumerate(selected)})


def build_context_store(
    corpus: Corpus,
    path: PathLike,
    counts: Mapping[str, int],
    caps: Mapping[str, int],
    window: int = DEFAULT_WINDOW,
    n_lines: Optional[int] = None,
    seed: int = 0,
    batch_size: int = 20_000,
    cache_mb: int = 64,
    extra_meta: Optional[Mapping[str, object]] = None,
    progress: bool = True,
) -> Path:
    """Pass 2: write the store for `counts` (pass 1) with contexts for `caps`.

    Written to a temp file beside `path` and renamed at the end: on any error
    nothing is left at `path` (an existing store there stays untouched).
    """
    plan = StorePlan.make(counts, caps)
    lowercase = corpus.lowercase

    def fill(sample: _Reservoirs) -> None:
        slot_of = plan.slot_of
        lines = progress_bar(
            corpus.lines(), progress=progress, desc="Collecting contexts", unit=" lines", total=n_lines
        )
        for line in lines:
            spans = tokenize_spans(line, lowercase)
            for i, span in enumerate(spans):
                k = slot_of.get(span[0])
                if k is not None:
                    sample.offer(k, line, spans, i, window)

    return write_context_store(path, plan, fill, lowercase, window, seed, batch_size, cache_mb, extra_meta)


def write_context_store(
    path: PathLike,
    plan: StorePlan,
    fill: Callable[[_Reservoirs], None],
    lowercase: bool,
    window: int = DEFAULT_WINDOW,
    seed: int = 0,
    batch_size: int = 20_000,
    cache_mb: int = 64,
    extra_meta: Optional[Mapping[str, object]] = None,
) -> Path:
    """The store's file: `fill` samples the contexts into the reservoirs, then words and meta."""
    if window < 1:
        raise ValueError(Errors.E248.format(window=window))
    path = Path(path)
    ranked, selected = plan.ranked, plan.selected
    with atomic_path(path, overwrite=True) as tmp:
        conn = sqlite3.connect(str(tmp))
        try:
            conn.execute("PRAGMA journal_mode = OFF")
            conn.execute("PRAGMA synchronous = OFF")
            conn.execute(f"PRAGMA cache_size = {-cache_mb * 1024}")
            conn.executescript(SCHEMA)
            sample = _Reservoirs(conn, [cap for _, cap in selected], seed, batch_size, [wid for wid, _ in selected])
            fill(sample)
            sample.flush()
            n_contexts = {wid: sample.stored[k] for k, (wid, _) in enumerate(selected)}
            conn.executemany(
                "INSERT INTO words VALUES (?, ?, ?, ?)",
                ((i, w, n, n_contexts.get(i, 0)) for i, (w, n) in enumerate(ranked)),
            )
            conn.execute("CREATE INDEX words_by_count ON words (count)")
            meta = {
                **(extra_meta or {}),
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "lowercase": int(lowercase),
                "window": window,
                "total_words": sum(n for _, n in ranked),
                "vocab_size": len(ranked),
                "words_with_contexts": sum(1 for n in n_contexts.values() if n),
                "total_contexts": sum(n_contexts.values()),
                "seed": seed,
            }
            conn.executemany("INSERT INTO meta VALUES (?, ?)", ((k, str(v)) for k, v in meta.items()))
            conn.commit()
        finally:
            conn.close()
    logger.info(
        "Context store %s: %s words, %s with contexts, %s contexts",
        path,
        meta["vocab_size"],
        meta["words_with_contexts"],
        meta["total_contexts"],
    )
    return path
