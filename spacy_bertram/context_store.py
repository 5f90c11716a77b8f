"""Where contexts come from at run time: the read-only SQLite context store.

BERTRAM needs, for any word, its corpus frequency and a handful of contexts
(training words: many; rare words met at inference: whatever the corpus has).
`ContextStore` keeps both in one SQLite file (stdlib only), clustered by word
so that one word's contexts are one index range read, never a scan.
`open_context_store` is the one way to open one, from its file or from the
directory `prepare` wrote. The store is built by `training/store_builder.py` (`prepare`, from a corpus)
or `training/text_store.py` (`texts-store`, from a user's own texts, grown in place).

A context is the raw line cut from `window` words before the occurrence to
`window` words after it (punctuation and spacing kept, so a subword tokenizer
sees natural text), with the character span of the occurrence, so the word
can be masked exactly even if it occurs twice in the window.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from .errors import Errors
from .types import PathLike

Context = Tuple[str, int, int]


class DamagedFileError(ValueError):
    """An SQLite file of this package (a store, a memory) that SQLite cannot read whole: its message is coded and
    names the file and the fix, so the callers that wrap a store's other errors in their own pass it on as it is."""


FORMAT_NAME = "spacy-bertram-contexts"
FORMAT_VERSION = 1
DEFAULT_WINDOW = 25
STORE_FILE = "contexts.sqlite"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE words (
    id INTEGER PRIMARY KEY, word TEXT NOT NULL UNIQUE,
    count INTEGER NOT NULL, n_contexts INTEGER NOT NULL
);
CREATE TABLE contexts (
    word_id INTEGER NOT NULL, slot INTEGER NOT NULL,
    text TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
    PRIMARY KEY (word_id, slot)
) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class StoreFile:
    """One kind of this package's read-only SQLite store, as `open_store_file` checks it: its name in messages
    (`what`), its format, its tables, and its own coded messages for a file that is missing (`{path}`), damaged
    (`{path}`, `{problem}`), no store of the kind (`{WHAT}`, `{err}`, `{path}`) or of another format or version."""

    what: str
    format_name: str
    format_version: int
    tables: Tuple[str, ...]
    missing: str
    damaged: str
    not_store: str
    other_format: str
    #: the tables are read before the format is compared, so that a file of another format is "not a store" (its
    #: missing table named) rather than "not of this format"; otherwise they are read only in a file of this format
    tables_first: bool = False


def open_store_file(path: Path, kind: StoreFile) -> Tuple[sqlite3.Connection, Dict[str, str]]:
    """(a read-only connection, the meta table) of the store file `path` of `kind`: the one opener of the stores,
    a ValueError with the kind's message if the file is missing, cut short, damaged, or not a store of the kind."""
    if not path.is_file():
        raise ValueError(kind.missing.format(path=path))
    check_complete(path, kind.what)
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, check_same_thread=False)
    problem = sqlite_problem(conn, path)
    if problem is not None:
        conn.close()
        raise DamagedFileError(kind.damaged.format(path=str(path), problem=problem))
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        if kind.tables_first or meta.get("format") == kind.format_name:
            for table in kind.tables:
                conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()
    except sqlite3.DatabaseError as err:
        conn.close()
        raise ValueError(kind.not_store.format(WHAT=kind.what, err=err, path=path)) from None
    if meta.get("format") != kind.format_name or meta.get("version") != str(kind.format_version):
        conn.close()
        raise ValueError(
            kind.other_format.format(
                FORMAT_NAME=kind.format_name,
                FORMAT_VERSION=kind.format_version,
                path=path,
                found_format=meta.get("format"),
                found_version=meta.get("version"),
            )
        )
    return conn, meta


CONTEXT_STORE = StoreFile(
    what="context store",
    format_name=FORMAT_NAME,
    format_version=FORMAT_VERSION,
    tables=("words", "contexts"),
    missing=Errors.E110,
    damaged=Errors.E187,
    not_store=Errors.E111,
    other_format=Errors.E112,
)


class ContextStore:
    """Read access to a built store. Open with `ContextStore.open(path)`.

    Lookups apply the store's own casing rule: a store built lowercased
    answers `count("Kumquat")` with the count of "kumquat".
    """

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: Dict[str, str]) -> None:
        self.path = path
        self._conn = conn
        self.meta = meta
        self.lowercase = meta.get("lowercase") == "1"
        self.window = int(meta.get("window", DEFAULT_WINDOW))
        self.total_words = int(meta["total_words"])
        self.vocab_size = int(meta["vocab_size"])

    @classmethod
    def open(cls, path: PathLike) -> "ContextStore":
        """Open read-only; ValueError if `path` is missing or not a context store."""
        path = Path(path)
        conn, meta = open_store_file(path, CONTEXT_STORE)
        return cls(path, conn, meta)

    def __reduce__(self):
        """Pickle by path, so a pipeline holding a store can go to worker processes."""
        return (ContextStore.open, (str(self.path),))

    def key(self, word: str) -> str:
        """The form under which `word` is stored."""
        return word.lower() if self.lowercase else word

    def _rows(self, sql: str, params: Sequence[Any]) -> List[Tuple[Any, ...]]:
        return sqlite_rows(self._conn, sql, params, self.path, Errors.E187)

    def count(self, word: str) -> int:
        """Corpus frequency of `word` (0 if unseen)."""
        rows = self._rows("SELECT count FROM words WHERE word = ?", (self.key(word),))
        return rows[0][0] if rows else 0

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self.count(word) > 0

    def __len__(self) -> int:
        return self.vocab_size

    def context_spans(self, word: str, limit: Optional[int] = None) -> List[Context]:
        """Up to `limit` (text, start, end) contexts; text[start:end] is the occurrence."""
        sql = (
            "SELECT c.text, c.start, c.end FROM words w JOIN contexts c ON c.word_id = w.id "
            "WHERE w.word = ? ORDER BY c.slot LIMIT ?"
        )
        return self._rows(sql, (self.key(word), -1 if limit is None else int(limit)))

    def contexts(self, word: str, limit: Optional[int] = None) -> List[str]:
        """Up to `limit` distinct contexts of `word` (a uniform sample of its occurrences)."""
        return [text for text, _, _ in self.context_spans(word, limit)]

    def counts(self, min_count: int = 1, min_contexts: int = 0) -> Iterator[Tuple[str, int]]:
        """(word, count) with count >= min_count, most frequent first."""
        sql = "SELECT word, count FROM words WHERE count >= ? AND n_contexts >= ? ORDER BY count DESC, id"
        return sqlite_iter(self._conn, sql, (int(min_count), int(min_contexts)), self.path, Errors.E187)

    def words(self, min_count: int = 1, min_contexts: int = 0) -> Iterator[str]:
        """Words with count >= min_count (and at least `min_contexts` stored contexts)."""
        return (word for word, _ in self.counts(min_count, min_contexts))

    def num_contexts(self, word: str) -> int:
        rows = self._rows("SELECT n_contexts FROM words WHERE word = ?", (self.key(word),))
        return rows[0][0] if rows else 0

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "ContextStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_complete(path: Path, what: str = "context store") -> None:
    """Refuse a file that is not SQLite, or one cut short (a partial copy or download).

    SQLite itself notices a missing page only when a query reads it, which
    for a store is the first rare word of some doc; the header records the
    database size, so a short file is found at open.
    """
    with open(path, "rb") as file_:
        header = file_.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        raise ValueError(Errors.E113.format(what=what, path=path))
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    size_is_valid = header[92:96] == header[24:28]  # the header's "version-valid-for" check
    if size_is_valid and pages and path.stat().st_size < page_size * pages:
        raise ValueError(
            Errors.E114.format(
                what=what[0].upper() + what[1:], path=path, size=path.stat().st_size, expected_size=page_size * pages
            )
        )


def check_casing(store: ContextStore, lowercased_words: bool, setting: str) -> None:
    """A store keeps the casing it was built with, and lowercases a lookup only if it is lowercased itself: a
    cased store asked by a model that lowercases its words ("quokka") finds none of their capitalised
    occurrences ("Quokka") and gives no contexts, silently. Refused (E193), for the component and `vectors`
    alike; a lowercased store serves a cased model (its lookups are lowercased; its contexts are as written)."""
    if lowercased_words and not store.lowercase:
        raise ValueError(Errors.E193.format(setting=setting, path=str(store.path)))


#: The SQLite files `sqlite_problem` found whole in this process, by (device, inode, size, modification time):
#: a store opened again (a worker process forked from this one, a second source on the same file) is not read
#: through again, and a file written since is.
_WHOLE: Set[Tuple[int, int, int, int]] = set()


def sqlite_problem(conn: sqlite3.Connection, path: Path) -> Optional[str]:
    """The first problem SQLite's `PRAGMA quick_check` finds in the file open on `conn`, None if it finds none.

    A page overwritten in the middle of a store (same size, so `check_complete` cannot see it) once opened, was
    served, and failed at the first word whose index range crossed it, with a raw `sqlite3.DatabaseError` and no
    file name. quick_check reads every page once: once per file and process, at open, before any work. A 233 MB
    store of 537,000 contexts takes 0.17-0.36 s in the page cache; read from disk, its pages in quick_check's
    order took 6.6-8.2 s, and read in file order first 1.1 s (docs/configuration.md#fallbacks-and-errors).
    """
    try:
        stat = path.stat()
        key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    except OSError as err:
        return str(err)
    if key in _WHOLE:
        return None
    try:
        with open(path, "rb") as file_:  # in file order first: quick_check's own reads jump about, 6x slower cold
            while file_.read(1 << 22):
                pass
        rows = conn.execute("PRAGMA quick_check(1)").fetchall()  # the first problem only
    except (OSError, sqlite3.DatabaseError) as err:
        return str(err)
    if rows != [("ok",)]:  # "*** in database main ***\nPage 256: btreeInitPage() returns error code 11"
        text = str(rows[0][0]) if rows else "quick_check gave no answer"
        return " ".join(line for line in text.splitlines() if not line.startswith("***"))
    _WHOLE.add(key)
    return None


def sqlite_rows(
    conn: sqlite3.Connection, sql: str, params: Sequence[Any], path: Path, message: str
) -> List[Tuple[Any, ...]]:
    """The rows of one query, an sqlite3 error as the coded `message` (with `{path}` and `{problem}`)."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.ProgrammingError:  # misuse (a closed store), not the file
        raise
    except sqlite3.DatabaseError as err:  # damage quick_check cannot see: a page a later write broke, a failing disk
        raise DamagedFileError(message.format(path=str(path), problem=str(err))) from None


def sqlite_iter(
    conn: sqlite3.Connection, sql: str, params: Sequence[Any], path: Path, message: str
) -> Iterator[Tuple[Any, ...]]:
    """`sqlite_rows` one row at a time, for a query over a whole table."""
    try:
        yield from conn.execute(sql, params)
    except sqlite3.ProgrammingError:
        raise
    except sqlite3.DatabaseError as err:
        raise DamagedFileError(message.format(path=str(path), problem=str(err))) from None


def open_context_store(path: PathLike) -> ContextStore:
    """A `ContextStore` from its file, or from a `prepare` output directory (its `*.sqlite`)."""
    path = Path(path)
    if path.is_dir() and (path / STORE_FILE).is_file():
        path = path / STORE_FILE
    elif path.is_dir():
        candidates = sorted(path.glob("*.sqlite"))
        if not candidates:
            raise ValueError(Errors.E115.format(path=str(path)))
        path = candidates[0]
    return ContextStore.open(path)
