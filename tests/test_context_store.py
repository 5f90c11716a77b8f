"""context_store.py: opening a context store refuses missing and foreign files."""

from __future__ import annotations

import sqlite3

import pytest

from spacy_bertram.context_store import ContextStore


def test_open_rejects_missing_and_foreign_files(tmp_path):
    with pytest.raises(ValueError, match=r"\[E110\].*not found"):
        ContextStore.open(tmp_path / "nope.sqlite")
    (tmp_path / "text.sqlite").write_text("not a database at all, just text" * 10)
    with pytest.raises(ValueError, match=r"\[E113\] Not a context store"):
        ContextStore.open(tmp_path / "text.sqlite")
    other = sqlite3.connect(tmp_path / "other.sqlite")
    other.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    other.execute("INSERT INTO meta VALUES ('format', 'something-else')")
    other.commit()
    other.close()
    with pytest.raises(ValueError, match=r"\[E112\].*spacy-bertram-contexts"):
        ContextStore.open(tmp_path / "other.sqlite")
