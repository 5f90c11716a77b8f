"""The definition store: per headword, definition contexts that contain the word, in one SQLite file.

Written by `python -m spacy_bertram dictionary` (`build.py`), read by the
`bertram` component when its `contexts` name "dictionary". A context is kept
as (text, start, end) with text[start:end] the headword as the dictionary
writes it ("kumquat: any of several trees ..."), so a lookup can write the
word as the text does ("Kumquats: any of several trees ..."): BERTRAM finds
the word in each context by its spelling, and the contexts it learned from
spell the word as it stands in the sentence. WordNet's irregular forms
("geese goose") are stored too, so an inflected form finds its entry with
no lemmatiser in the pipeline (`lemmas.py`).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..errors import Errors
from ..fileio import atomic_path
from ..context_store import Context, DamagedFileError, StoreFile, open_store_file, sqlite_rows
from ..types import PathLike
from .lemmas import candidate_lemmas

FORMAT_NAME = "spacy-bertram-definitions"
FORMAT_VERSION = 1
STORE_FILE = "definitions.sqlite"
WHAT = "definition store"
#: (source, text, start, end) of one stored context.
SourcedContext = Tuple[str, str, int, int]
DEFINITION_STORE = StoreFile(
    what=WHAT,
    format_name=FORMAT_NAME,
    format_version=FORMAT_VERSION,
    tables=("headwords", "contexts", "inflections"),
    missing=Errors.E508,
    damaged=Errors.E513,
    not_store=Errors.E509,
    other_format=Errors.E510,
    tables_first=True,  # a context store given for definitions is named as no definition store (E509)
)

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE headwords (id INTEGER PRIMARY KEY, word TEXT NOT NULL UNIQUE);
CREATE TABLE contexts (
    word_id INTEGER NOT NULL, slot INTEGER NOT NULL, source TEXT NOT NULL,
    text TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER NOT NULL,
    PRIMARY KEY (word_id, slot)
) WITHOUT ROWID;
CREATE TABLE inflections (form TEXT NOT NULL, lemma TEXT NOT NULL, PRIMARY KEY (form, lemma)) WITHOUT ROWID;
"""


class DefinitionStore:
    """Read access to a definition store. Open with `DefinitionStore.open(path)`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, meta: Dict[str, str]) -> None:
        self.path = path
        self._conn = conn
        self.meta = meta
        self.sources: List[str] = json.loads(meta.get("sources", "[]"))

    @classmethod
    def open(cls, path: PathLike) -> "DefinitionStore":
        """Open read-only (a file, or a directory holding definitions.sqlite); ValueError if it is not one."""
        path = Path(path)
        if path.is_dir():
            path = path / STORE_FILE
        conn, meta = open_store_file(path, DEFINITION_STORE)
        return cls(path, conn, meta)

    def __reduce__(self):
        """Pickle by path, so a pipeline holding a store can go to worker processes."""
        return (DefinitionStore.open, (str(self.path),))

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> List[Tuple[Any, ...]]:
        return sqlite_rows(self._conn, sql, params, self.path, Errors.E513)

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and bool(self._rows("SELECT 1 FROM headwords WHERE word = ?", (word.lower(),)))

    def __len__(self) -> int:
        return self._rows("SELECT COUNT(*) FROM headwords")[0][0]

    def context_spans(self, headword: str, limit: Optional[int] = None) -> List[Context]:
        """Up to `limit` stored (text, start, end) of one headword (lowercased), in stored order."""
        sql = (
            "SELECT c.text, c.start, c.end FROM headwords h JOIN contexts c ON c.word_id = h.id "
            "WHERE h.word = ? ORDER BY c.slot LIMIT ?"
        )
        return self._rows(sql, (headword.lower(), -1 if limit is None else int(limit)))

    def irregular_lemmas(self, form: str) -> List[str]:
        rows = self._rows("SELECT lemma FROM inflections WHERE form = ? ORDER BY lemma", (form.lower(),))
        return [row[0] for row in rows]

    def headwords_for(self, word: str, lemma: Optional[str] = None) -> List[str]:
        """The headwords an occurrence of `word` may be: the form itself, then its lemmas."""
        return [c for c in candidate_lemmas(word, self.irregular_lemmas, lemma) if c in self]

    def contexts(self, word: str, limit: int, lemma: Optional[str] = None) -> List[str]:
        """Up to `limit` definition contexts for `word`, the word written as given; [] if none."""
        texts: List[str] = []
        for headword in self.headwords_for(word, lemma):
            for text, start, end in self.context_spans(headword, limit - len(texts)):
                texts.append(text[:start] + word + text[end:])
            if len(texts) >= limit:
                break
        return list(dict.fromkeys(texts))

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "DefinitionStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_definition_store(
    path: PathLike,
    entries: Mapping[str, Sequence[SourcedContext]],
    inflections: Iterable[Tuple[str, str]] = (),
    meta: Optional[Mapping[str, str]] = None,
) -> Path:
    """Write a store (temp file, then rename): headword -> contexts in reading order."""
    path = Path(path)
    with atomic_path(path, overwrite=True) as tmp:
        conn = sqlite3.connect(str(tmp))
        try:
            conn.executescript(_SCHEMA)
            info = {"format": FORMAT_NAME, "version": str(FORMAT_VERSION), **(meta or {})}
            conn.executemany("INSERT INTO meta VALUES (?, ?)", info.items())
            for word_id, (headword, contexts) in enumerate(sorted(entries.items())):
                conn.execute("INSERT INTO headwords VALUES (?, ?)", (word_id, headword.lower()))
                conn.executemany(
                    "INSERT INTO contexts VALUES (?, ?, ?, ?, ?, ?)",
                    [(word_id, slot, *context) for slot, context in enumerate(contexts)],
                )
            conn.executemany(
                "INSERT OR IGNORE INTO inflections VALUES (?, ?)",
                [(form.lower(), lemma.lower()) for form, lemma in inflections],
            )
            conn.commit()
            conn.execute("VACUUM")
        finally:
            conn.close()
    return path


def check_definition_store(path: PathLike) -> None:
    """A definition store that opens (its format, its tables, a file cut short or damaged), checked with sqlite3
    alone before the work that reads it: `train --definitions` given a context store failed with E509 after its
    targets were built and saved."""
    DefinitionStore.open(path).close()


def open_definition_store(path: PathLike, setting: str = "dictionary_store") -> DefinitionStore:
    """`DefinitionStore.open` with the setting that named the path in the error."""
    try:
        return DefinitionStore.open(path)
    except DamagedFileError:
        raise
    except ValueError as err:
        raise ValueError(Errors.E511.format(setting=setting, path=str(path), err=err)) from err
