"""A context source with a memory: the sentences of a rare word met in the docs the pipeline processed before.

"doc" gives a rare word the sentences of the doc it occurs in, and nothing of the docs before it. A stream of
a user's texts often holds a rare word in many docs: `MemoryContexts` remembers the doc's own contexts of each
rare word it is asked for (cut exactly as `DocContexts` cuts them) and answers with the word's remembered
contexts, so the word met in its 50th doc gets the sentences of the earlier ones. Processing a collection
twice, `list(nlp.pipe(texts))` to remember and then again to predict, gives every occurrence the contexts of
the whole collection: the in-domain setting the paper describes (all unlabeled texts of the test set as contexts).

What a word gets is stable, so its vector is computed a bounded number of times and never served stale: the
remembered contexts are returned oldest first and cut to the largest step of `recompute_at` (1, 2, 4, 8) not
above their number, so the set, and with it the vector cache key (`vector_cache.cache_key`: the word, the
source and a digest of the contexts), changes only when the count passes a step.

The memory is bounded: at most `max_per_word` contexts per word (the first ones kept) and `max_words` words
(the least recently seen word forgotten first). It lives in the process (an OrderedDict: `fork` copies it,
pickling carries it) or, with `path`, in a SQLite file the user names, which processes share (WAL mode, a
busy timeout, one connection per process opened on first use). Neither is written into a saved pipeline.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from spacy.tokens import Doc

from ..context_store import DamagedFileError, sqlite_problem
from ..errors import Errors
from ..fileio import new_file
from ..bounds import check_count
from .context_sources import DEFAULT_DOC_WINDOW, DocContexts, _checked_limit, _key, _within

#: The `meta` table's mark of a memory file: a file without it is never written.
FORMAT_NAME = "spacy-bertram-context-memory"
FORMAT_VERSION = 1
#: Contexts kept per word, words kept, and the counts at which a word's returned set grows.
DEFAULT_MAX_PER_WORD = 8
DEFAULT_MAX_WORDS = 10_000
DEFAULT_RECOMPUTE_AT = (1, 2, 4, 8)
#: How long a process waits for another's write to the shared file before it fails.
BUSY_TIMEOUT_S = 60.0
SQLITE_MAGIC = b"SQLite format 3\x00"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE words (word TEXT PRIMARY KEY, seen INTEGER NOT NULL);
CREATE INDEX words_by_seen ON words (seen);
CREATE TABLE contexts (id INTEGER PRIMARY KEY, word TEXT NOT NULL, text TEXT NOT NULL, UNIQUE (word, text));
"""
SOURCE = "spacy-bertram.memory_contexts.v1"


class MemoryContexts:
    """A context source that remembers the doc's contexts of each rare word and gives the word those of every
    doc it saw (`contexts = "memory"`, or "doc+memory": the doc's own first, then the remembered ones not
    among them).

    window: the doc's contexts, as `DocContexts` cuts them (the component's `context_window` sets it).
    limit: at most this many contexts from the memory (None: up to the component's contexts_per_word).
    max_per_word: contexts remembered per word, the first ones kept.
    max_words: words remembered; the least recently seen one is forgotten first.
    recompute_at: the counts at which a word's returned set grows (it holds the largest step not above
        the number remembered), so its vector is computed once per step.
    path: a SQLite file to keep the memory in (created if missing; an existing file that is not a memory
        is refused, never written). None: the memory is held in the process.

    With `nlp.pipe(n_process=2)`: without a path each process has its own memory, a copy of the parent's
    at the start (fork copies it, spawn pickles it), and what a worker remembers is lost with the worker;
    with a path they all read and write the one file.
    """

    def __init__(
        self,
        window: int = DEFAULT_DOC_WINDOW,
        limit: Optional[int] = None,
        max_per_word: int = DEFAULT_MAX_PER_WORD,
        max_words: int = DEFAULT_MAX_WORDS,
        recompute_at: Sequence[int] = DEFAULT_RECOMPUTE_AT,
        path: Optional[str] = None,
    ) -> None:
        check_count(window, f"the window of {SOURCE}", "window")
        check_count(max_per_word, f"max_per_word of {SOURCE}", "contexts")
        check_count(max_words, f"max_words of {SOURCE}", "words")
        self.doc_source = DocContexts(window)
        self.limit = _checked_limit(limit, "memory")
        self.key = _key("memory", self.limit)
        self.max_per_word = int(max_per_word)
        self.max_words = int(max_words)
        self.recompute_at = checked_steps(recompute_at, self.max_per_word)
        self.path = str(path) if path else None
        self.memory: Any = FileMemory(Path(self.path)) if self.path else ProcessMemory()
        self._lock = threading.Lock()

    @property
    def sources(self) -> Tuple[DocContexts, ...]:
        """The doc source it reads: `context_sources.leaves` finds it, so the component's context_window is its."""
        return (self.doc_source,)

    @property
    def window(self) -> int:
        return self.doc_source.window

    @window.setter
    def window(self, window: int) -> None:
        check_count(window, f"the window of {SOURCE}", "window")
        self.doc_source.window = int(window)

    def __call__(self, doc: Doc, word: str, indices: Sequence[int], limit: int) -> List[str]:
        own = self.doc_source(doc, word, indices, self.max_per_word)
        with self._lock:
            held = self.memory.remember(word, own, self.max_per_word, self.max_words)
        return held[: min(self.step(len(held)), _within(self.limit, limit))]

    def step(self, count: int) -> int:
        """How many of `count` remembered contexts a word gets: the largest step not above it (0 below the first)."""
        return max((step for step in self.recompute_at if step <= count), default=0)

    def remembered(self, word: str) -> List[str]:
        """The word's remembered contexts, oldest first (read only: the word is not marked as seen)."""
        with self._lock:
            return self.memory.recall(word)

    def stats(self) -> Dict[str, int]:
        """Words and contexts held, and the bytes of their text (UTF-8): what the bounds keep it to."""
        with self._lock:
            return self.memory.stats()

    def open(self) -> None:
        """Open (or create) the memory file now: a file that is not a memory fails at `initialize`, not at a doc."""
        with self._lock:
            self.memory.open()

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def checked_steps(steps: Any, max_per_word: int) -> Tuple[int, ...]:
    """recompute_at: increasing whole numbers of at least 1, the first within max_per_word (else nothing is given)."""
    values = tuple(steps) if isinstance(steps, (list, tuple)) else ()
    whole = all(isinstance(step, int) and not isinstance(step, bool) and step >= 1 for step in values)
    if not values or not whole or list(values) != sorted(set(values)) or values[0] > max_per_word:
        raise ValueError(Errors.E179.format(value=steps, max_per_word=max_per_word))
    return values


# -- the memory held in the process -----------------------------------------------------------------


class ProcessMemory:
    """Word -> its contexts, least recently seen word first."""

    def __init__(self) -> None:
        self.entries: "OrderedDict[str, List[str]]" = OrderedDict()

    def remember(self, word: str, texts: Sequence[str], max_per_word: int, max_words: int) -> List[str]:
        held = self.entries.get(word)
        if held is None:
            held = self.entries[word] = []
        else:
            self.entries.move_to_end(word)
        for text in texts:
            if len(held) >= max_per_word:
                break
            if text not in held:
                held.append(text)
        while len(self.entries) > max_words:
            self.entries.popitem(last=False)
        return list(held)

    def recall(self, word: str) -> List[str]:
        return list(self.entries.get(word, ()))

    def stats(self) -> Dict[str, int]:
        texts = [text for held in self.entries.values() for text in held]
        size = sum(len(text.encode("utf8")) for text in texts) + sum(len(word.encode("utf8")) for word in self.entries)
        return {"words": len(self.entries), "contexts": len(texts), "bytes": size}

    def open(self) -> None:
        pass


# -- the memory in a file ---------------------------------------------------------------------------

#: Memories with a connection open in this process: closed before a fork, so no SQLite state crosses it.
_OPEN: "weakref.WeakSet[FileMemory]" = weakref.WeakSet()
#: Connections a fork carried into this process: the parent's, never used or closed here.
_INHERITED: List[sqlite3.Connection] = []


class FileMemory:
    """The memory in a SQLite file: shared by every process that opens it, the bounds kept in each write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: Optional[sqlite3.Connection] = None
        self._pid: Optional[int] = None

    def connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid != os.getpid():
            _INHERITED.append(self._conn)  # another process's handle: closing it here could touch its locks
            self._conn = None
        if self._conn is None:
            self._conn = open_memory_file(self.path)
            self._pid = os.getpid()
            _OPEN.add(self)
        return self._conn

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def open(self) -> None:
        self.connection()

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """sqlite3's errors while the memory is used as coded ones naming the file: damage the check at open
        could not see (a page broken since) is E188, another process holding the file past the busy timeout E181."""
        try:
            yield
        except sqlite3.ProgrammingError:  # misuse, not the file
            raise
        except sqlite3.DatabaseError as err:
            if getattr(err, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED"):
                raise ValueError(Errors.E181.format(path=str(self.path), err=err)) from None
            raise DamagedFileError(Errors.E188.format(path=str(self.path), problem=str(err))) from None

    def remember(self, word: str, texts: Sequence[str], max_per_word: int, max_words: int) -> List[str]:
        with self._reading():
            return self._remember(word, texts, max_per_word, max_words)

    def _remember(self, word: str, texts: Sequence[str], max_per_word: int, max_words: int) -> List[str]:
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes
        try:
            (clock,) = conn.execute("SELECT COALESCE(MAX(seen), 0) + 1 FROM words").fetchone()
            new = conn.execute("SELECT 1 FROM words WHERE word = ?", (word,)).fetchone() is None
            conn.execute(
                "INSERT INTO words (word, seen) VALUES (?, ?) ON CONFLICT (word) DO UPDATE SET seen = excluded.seen",
                (word, clock),
            )
            for text in texts:  # distinct by text, and only while the word has room
                conn.execute(
                    "INSERT OR IGNORE INTO contexts (word, text) SELECT ?, ? "
                    "WHERE (SELECT COUNT(*) FROM contexts WHERE word = ?) < ?",
                    (word, text, word, max_per_word),
                )
            if new:  # the least recently seen words beyond max_words go, with their contexts
                stale = "SELECT word FROM words ORDER BY seen LIMIT MAX(0, (SELECT COUNT(*) FROM words) - ?)"
                conn.execute(f"DELETE FROM contexts WHERE word IN ({stale})", (max_words,))
                conn.execute(f"DELETE FROM words WHERE word IN ({stale})", (max_words,))
            held = [text for (text,) in conn.execute("SELECT text FROM contexts WHERE word = ? ORDER BY id", (word,))]
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return held

    def recall(self, word: str) -> List[str]:
        with self._reading():
            rows = self.connection().execute("SELECT text FROM contexts WHERE word = ? ORDER BY id", (word,))
            return [text for (text,) in rows]

    def stats(self) -> Dict[str, int]:
        with self._reading():
            conn = self.connection()
            words, word_bytes = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(word AS BLOB))), 0) FROM words"
            ).fetchone()
            contexts, text_bytes = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(text AS BLOB))), 0) FROM contexts"
            ).fetchone()
        return {"words": words, "contexts": contexts, "bytes": word_bytes + text_bytes}

    def __getstate__(self) -> Dict[str, Any]:
        return {"path": self.path, "_conn": None, "_pid": None}  # the file is opened again where it is unpickled


def _close_before_fork() -> None:
    for memory in list(_OPEN):
        memory.close()  # opened again on first use, in the parent and in the child


os.register_at_fork(before=_close_before_fork)


def open_memory_file(path: Path) -> sqlite3.Connection:
    """A connection to the memory file at `path`, created if missing. An existing file is opened only if it is a
    memory (its `meta` table's mark), and is left untouched otherwise (E180)."""
    if path.is_dir():
        raise ValueError(Errors.E180.format(path=str(path), why="is a directory"))
    if not path.exists():
        create_memory_file(path)
    check_memory_file(path)
    check_memory_writable(path)
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")  # WAL: a power cut may lose the last writes, never the file
    except sqlite3.Error as err:
        raise ValueError(Errors.E181.format(path=str(path), err=err)) from err
    return conn


def check_memory_file(path: Path) -> None:
    """Refuse a file that is not a memory of this format, reading it only (E180)."""
    try:
        with open(path, "rb") as file_:
            head = file_.read(len(SQLITE_MAGIC))
    except OSError as err:
        raise ValueError(Errors.E181.format(path=str(path), err=err)) from err
    if head != SQLITE_MAGIC:
        why = "is empty" if not head else "is not an SQLite file"
        raise ValueError(Errors.E180.format(path=str(path), why=why))
    meta, problem = _memory_meta(path)
    if problem is not None:
        raise DamagedFileError(Errors.E188.format(path=str(path), problem=problem))
    if meta.get("format") != FORMAT_NAME:
        why = f"is an SQLite file without the {FORMAT_NAME!r} mark in a meta table"
        raise ValueError(Errors.E180.format(path=str(path), why=why))
    if meta.get("version") != str(FORMAT_VERSION):
        why = f"is a memory of format version {meta.get('version')!r}; this spacy-bertram reads {FORMAT_VERSION}"
        raise ValueError(Errors.E180.format(path=str(path), why=why))


def _memory_meta(path: Path) -> Tuple[Dict[str, str], Optional[str]]:
    """(the file's meta table, {} without one; the first problem quick_check finds in a memory, or None), read
    only. In a directory that cannot be written the file is read as immutable: a WAL reader makes a shared-memory
    file beside it, which fails there ("unable to open database file"), and was taken for a file with no mark."""
    uri = path.resolve().as_uri() + "?mode=ro"
    for immutable in (False, True):
        try:
            conn = sqlite3.connect(uri + ("&immutable=1" if immutable else ""), uri=True, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error:
            return {}, None
        try:
            try:
                meta = dict(conn.execute("SELECT key, value FROM meta"))
            except sqlite3.OperationalError:  # no meta table, or (read-only directory) no shared memory
                if not immutable and not os.access(path.parent, os.W_OK):
                    continue
                return {}, None
            except sqlite3.DatabaseError as err:  # a SQLite header over pages that are not a database's
                return {}, str(err)
            return meta, sqlite_problem(conn, path) if meta.get("format") == FORMAT_NAME else None
        finally:
            conn.close()
    return {}, None


def check_memory_writable(path: Path) -> None:
    """A memory writes on every doc: a read-only file or directory is refused at open (E189), not met as a raw
    "attempt to write a readonly database" at the first rare word."""
    for target, what in ((path, "the file"), (path.parent, f"its directory {str(path.parent)!r}")):
        if not os.access(target, os.W_OK):
            raise ValueError(Errors.E189.format(path=str(path), what=what, name=path.name))


def create_memory_file(path: Path) -> None:
    """Write an empty memory beside `path` and link it into place (`fileio.new_file`): never over a file, so two
    processes that create it at once both open the one that won."""
    try:
        with new_file(path) as temp:
            conn = sqlite3.connect(str(temp), isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(SCHEMA)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("format", FORMAT_NAME), ("version", str(FORMAT_VERSION))],
                )
            finally:
                conn.close()
    except (OSError, sqlite3.Error) as err:
        raise ValueError(Errors.E181.format(path=str(path), err=err)) from err
