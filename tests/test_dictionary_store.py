"""The definition store: written atomically, read with the word as the text writes it, named errors."""

from __future__ import annotations

import os
import pickle
import sqlite3

import pytest

from spacy_bertram.dictionary.store import DefinitionStore, open_definition_store, write_definition_store

from tests.util import damage_middle

ENTRIES = {
    "kumquat": [
        ("gcide", "Kumquat: a small oval citrus fruit.", 0, 7),
        ("wordnet", "a bowl of kumquat on the table", 10, 17),
    ],
    "goose": [("gcide", "Goose: a large web-footed bird.", 0, 5)],
}


@pytest.fixture()
def store_path(tmp_path):
    return write_definition_store(
        tmp_path / "definitions.sqlite", ENTRIES, [("geese", "goose")], {"sources": '["gcide", "wordnet"]'}
    )


def test_contexts_write_the_word_as_the_text_does(store_path):
    with DefinitionStore.open(store_path.parent) as store:
        assert store.sources == ["gcide", "wordnet"] and len(store) == 2
        assert store.contexts("Kumquats", limit=8) == [
            "Kumquats: a small oval citrus fruit.",
            "a bowl of Kumquats on the table",
        ]
        assert store.contexts("kumquat", limit=1) == ["kumquat: a small oval citrus fruit."]


def test_an_irregular_form_finds_its_lemma(store_path):
    with DefinitionStore.open(store_path) as store:
        assert store.headwords_for("geese") == ["goose"]
        assert store.contexts("Geese", limit=4) == ["Geese: a large web-footed bird."]


def test_a_word_with_no_entry_gets_no_contexts(store_path):
    with DefinitionStore.open(store_path) as store:
        assert store.contexts("zyzzyva", limit=4) == [] and "zyzzyva" not in store


def test_the_store_pickles_by_path(store_path):
    store = pickle.loads(pickle.dumps(DefinitionStore.open(store_path)))
    assert store.contexts("goose", limit=1) == ["goose: a large web-footed bird."]


def test_a_missing_corrupt_or_foreign_file_is_a_named_error(tmp_path, store_path):
    with pytest.raises(
        ValueError,
        match=r"\[E511\].*dictionary_store.*gone.sqlite"
        r".*python -m spacy_bertram dictionary",
    ):
        open_definition_store(tmp_path / "gone.sqlite")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database" * 20)
    with pytest.raises(ValueError, match=r"\[E113\] Not a definition store \(not an SQLite file\).*garbage.sqlite"):
        DefinitionStore.open(garbage)
    short = tmp_path / "short.sqlite"
    short.write_bytes(store_path.read_bytes()[:4096])
    with pytest.raises(ValueError, match=r"\[E114\] Definition store .*short.sqlite is truncated"):
        DefinitionStore.open(short)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.executescript(
            "CREATE TABLE meta (key TEXT, value TEXT); CREATE TABLE headwords (word TEXT);"
            "CREATE TABLE contexts (x); CREATE TABLE inflections (x);"
            "INSERT INTO meta VALUES ('format', 'spacy-bertram-contexts');"
        )
    with pytest.raises(ValueError, match=r"\[E510\] Not a spacy-bertram-definitions v1 file.*other.sqlite"):
        DefinitionStore.open(other)


def test_a_store_damaged_in_the_middle_is_refused_at_open_and_at_a_read(tmp_path):
    """Definitions of many headwords, 4 KB overwritten in the middle: E513 naming the file, when it is opened and
    (damage made after a check in this process, the file's size and time kept) when a read meets it."""
    entries = {f"word{i}": [("gcide", f"Word{i}: a definition of word number {i}, " * 8, 0, 5)] for i in range(300)}
    path = write_definition_store(tmp_path / "definitions.sqlite", entries)
    with DefinitionStore.open(path) as store:
        assert len(store) == 300
    stat = path.stat()
    damage_middle(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with DefinitionStore.open(path) as store:  # checked whole once in this process: not read through again
        with pytest.raises(ValueError, match=r"\[E513\] The definition store .*definitions\.sqlite cannot be read"):
            for i in range(300):
                store.contexts(f"word{i}", 2)
    os.utime(path)  # the file changed since the check: it is read through at the next open
    with pytest.raises(ValueError, match=r"\[E513\].*python -m spacy_bertram dictionary OUTPUT"):
        open_definition_store(path)
