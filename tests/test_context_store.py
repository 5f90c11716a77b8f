"""context_store.py: opening a context store refuses missing, foreign and damaged files."""

from __future__ import annotations

import os
import sqlite3

import pytest

from spacy_bertram.context_store import ContextStore, open_context_store

from tests.util import context_store_of, corpus_lines, damage_middle


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


def test_a_store_damaged_in_the_middle_is_refused_at_open_naming_the_file(tmp_path):
    """4 KB overwritten in the middle (same size: the header still holds) opened, and failed at the first word whose
    index range crossed it, with a raw sqlite3.DatabaseError that named no file."""
    path = context_store_of(tmp_path, corpus_lines(600))
    damage_middle(path)
    with pytest.raises(ValueError, match=r"\[E187\] The context store .*c\.sqlite cannot be read whole: SQLite"):
        ContextStore.open(path)
    with pytest.raises(ValueError, match=r"\[E187\].*python -m spacy_bertram prepare"):
        open_context_store(tmp_path)


def test_damage_quick_check_cannot_see_is_a_coded_error_at_the_read(tmp_path):
    """A file checked whole once in a process is not read through again (its identity is cached); damage made
    since, with the file's size and time kept, is met by a read: E187 naming the file, never a raw sqlite3 error."""
    path = context_store_of(tmp_path, corpus_lines(600))
    with ContextStore.open(path) as store:
        words = [word for word, _ in store.counts()]
    stat = path.stat()
    damage_middle(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with ContextStore.open(path) as store:  # the cached check: no read of every page
        with pytest.raises(ValueError, match=r"\[E187\] The context store .*c\.sqlite cannot be read whole"):
            for word in words:
                store.contexts(word)
            list(store.counts())
