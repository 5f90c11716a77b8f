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
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from .errors import Errors
from .types import PathLike

Context = Tuple[str, int, int]

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
        if not path.is_file():
            raise ValueError(Errors.E110.format(path=path))
        check_complete(path)
        uri = path.resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
        try:
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            if meta.get("format") == FORMAT_NAME:
                for table in ("words", "contexts"):
                    conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()
        except sqlite3.DatabaseError as err:
            conn.close()
            raise ValueError(Errors.E111.format(err=err, path=path)) from None
        if meta.get("format") != FORMAT_NAME or int(meta.get("version", -1)) != FORMAT_VERSION:
            conn.close()
            raise ValueError(
                Errors.E112.format(
                    FORMAT_NAME=FORMAT_NAME,
                    FORMAT_VERSION=FORMAT_VERSION,
                    path=path,
                    found_format=meta.get("format"),
                    found_version=meta.get("version"),
                )
            )
        return cls(path, conn, meta)

    def __reduce__(self):
        """Pickle by path, so a pipeline holding a store can go to worker processes."""
        return (ContextStore.open, (str(self.path),))

    def key(self, word: str) -> str:
        """The form under which `word` is stored."""
        return word.lower() if self.lowercase else word

    def count(self, word: str) -> int:
        """Corpus frequency of `word` (0 if unseen)."""
        row = self._conn.execute("SELECT count FROM words WHERE word = ?", (self.key(word),)).fetchone()
        return row[0] if row else 0

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
        return list(self._conn.execute(sql, (self.key(word), -1 if limit is None else int(limit))))

    def contexts(self, word: str, limit: Optional[int] = None) -> List[str]:
        """Up to `limit` distinct contexts of `word` (a uniform sample of its occurrences)."""
        return [text for text, _, _ in self.context_spans(word, limit)]

    def counts(self, min_count: int = 1, min_contexts: int = 0) -> Iterator[Tuple[str, int]]:
        """(word, count) with count >= min_count, most frequent first."""
        sql = "SELECT word, count FROM words WHERE count >= ? AND n_contexts >= ? ORDER BY count DESC, id"
        return iter(self._conn.execute(sql, (int(min_count), int(min_contexts))))

    def words(self, min_count: int = 1, min_contexts: int = 0) -> Iterator[str]:
        """Words with count >= min_count (and at least `min_contexts` stored contexts)."""
        return (word for word, _ in self.counts(min_count, min_contexts))

    def num_contexts(self, word: str) -> int:
        row = self._conn.execute("SELECT n_contexts FROM words WHERE word = ?", (self.key(word),)).fetchone()
        return row[0] if row else 0

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
