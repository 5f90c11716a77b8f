"""pipeline/context_memory.py: a rare word's contexts remembered from the docs the pipeline saw, returned in
steps (so a vector is computed a bounded number of times and never served stale), bounded per word and in
all, in the process or in a SQLite file of the user's, across processes, pickles and saved pipelines."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import List, Optional

import numpy
import pytest
import spacy
from spacy.util import registry

import spacy_bertram.architectures  # noqa: F401  (registers spacy-bertram.memory_contexts.v1)
from spacy_bertram.pipeline.context_memory import FORMAT_NAME, MemoryContexts
from spacy_bertram.pipeline.context_sources import contexts_from_spec, leaves
from spacy_bertram.pipeline.word_sources import WordSources
from spacy_bertram.rarity.rare_words import RareWordRule

from tests.util import context_store_of, damage_middle, make_nlp

#: One sentence with "kumquat" per doc (words the tiny encoder knows), each doc ending with a sentence without it.
SENTENCES = [
    "The farmer sold a kumquat at the market.",
    "She ate a sweet kumquat in the garden.",
    "The old man saw a kumquat by the river.",
    "A child liked the kumquat from the farm.",
    "People bought a kumquat in the city.",
    "The woman looked at a green kumquat.",
    "He walked to the tree with a kumquat.",
    "They grew a small kumquat near the house.",
    "The dog ran past a red kumquat.",
    "We eat a sour kumquat every day.",
]
TEXTS = [f"{sentence} The cat ran home." for sentence in SENTENCES]

sentencizer = spacy.blank("en")
sentencizer.add_pipe("sentencizer")


def kumquat_at(doc) -> List[int]:
    return [token.i for token in doc if token.lower_ == "kumquat"]


def ask(memory: MemoryContexts, text: str, word: str = "kumquat", limit: int = 8) -> List[str]:
    doc = sentencizer(text)
    return memory(doc, word, [t.i for t in doc if t.lower_ == word.lower()], limit)


@pytest.fixture(params=["process", "file"])
def memory_path(request, tmp_path) -> Optional[str]:
    """Each behaviour in both places a memory lives: the process (None) and a SQLite file."""
    return None if request.param == "process" else str(tmp_path / "memory.sqlite")


# -- what a word gets ---------------------------------------------------------------------------------


def test_a_word_gets_its_remembered_contexts_in_steps(memory_path):
    """After 1..5 docs the sets hold 1, 2, 2, 4, 4 contexts, oldest first: a set changes only at a step."""
    memory = MemoryContexts(path=memory_path)
    answers = [ask(memory, text) for text in TEXTS[:5]]
    assert [len(answer) for answer in answers] == [1, 2, 2, 4, 4]
    assert answers[0] == [SENTENCES[0]] and answers[2] == answers[1] == SENTENCES[:2]
    assert answers[4] == answers[3] == SENTENCES[:4]  # the 5th doc's own sentence is remembered, not yet given
    assert memory.remembered("kumquat") == SENTENCES[:5]
    assert memory.stats() == {
        "words": 1,
        "contexts": 5,
        "bytes": len("kumquat") + sum(len(s.encode("utf8")) for s in SENTENCES[:5]),
    }
    assert ask(memory, TEXTS[0], limit=3) == SENTENCES[:3]  # the call's limit (and the source's) cuts too
    assert ask(memory, TEXTS[2]) == SENTENCES[:4] and memory.stats()["contexts"] == 5  # a doc seen again adds none
    assert len(ask(MemoryContexts(limit=1, path=None), TEXTS[0])) == 1


def test_bounds_per_word_and_in_all_forget_the_least_recently_seen_word(memory_path):
    memory = MemoryContexts(max_per_word=3, max_words=2, recompute_at=[1, 2, 3], path=memory_path)
    for text in TEXTS:
        answer = ask(memory, text)
    assert answer == SENTENCES[:3] and memory.remembered("kumquat") == SENTENCES[:3]  # the first 3 kept
    assert ask(memory, "A farmer saw the quokka.", word="quokka") == ["A farmer saw the quokka."]
    ask(memory, TEXTS[0])  # kumquat seen again: quokka is now the least recently seen word
    assert ask(memory, "The cassowary ran.", word="cassowary") == ["The cassowary ran."]
    assert memory.remembered("quokka") == [] and memory.remembered("kumquat") == SENTENCES[:3]
    assert memory.stats()["words"] == 2 and memory.stats()["contexts"] == 4
    assert ask(memory, "A farmer saw the quokka.", word="quokka") == ["A farmer saw the quokka."]  # from scratch
    assert memory.remembered("kumquat") == []  # kumquat was now the least recent
    assert ask(memory, "The Kumquat.", word="Kumquat") == ["The Kumquat."]  # the word as given: another key


@pytest.mark.parametrize(
    "settings,code",
    [
        ({"recompute_at": [2, 1]}, "E179"),
        ({"recompute_at": []}, "E179"),
        ({"recompute_at": [0, 2]}, "E179"),
        ({"recompute_at": [1, 1]}, "E179"),
        ({"recompute_at": [16], "max_per_word": 8}, "E179"),  # nothing would ever be given
        ({"max_words": 0}, "E052"),
        ({"max_per_word": 0}, "E052"),
        ({"window": 0}, "E052"),
        ({"limit": 0}, "E106"),
    ],
)
def test_bad_settings_are_named(settings, code):
    with pytest.raises(ValueError, match=rf"\[{code}\]"):
        MemoryContexts(**settings)


# -- in the component: the vector cache, the doc, the window --------------------------------------------


def test_a_vector_is_computed_again_exactly_when_a_step_is_passed(bertram_dir, tiny_bert_path):
    """10 docs with "kumquat": inferred at the 1st, 2nd, 4th and 8th (the steps), a cache hit at every other."""
    nlp = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True, contexts="memory")
    pipe = nlp.get_pipe("bertram")
    start = pipe.cache.stats()
    vectors, misses, hits = [], [], []
    for text in TEXTS:
        doc = nlp(text)
        assert list(doc._.bertram) == kumquat_at(doc)  # the one rare word
        vectors.append(doc._.bertram[kumquat_at(doc)[0]])
        misses.append(pipe.cache.stats()["misses"] - start["misses"])
        hits.append(pipe.cache.stats()["hits"] - start["hits"])
    assert misses == [1, 2, 2, 3, 3, 3, 3, 4, 4, 4] and hits == [0, 0, 1, 1, 2, 3, 4, 4, 5, 6]
    changed = [not numpy.array_equal(a, b) for a, b in zip(vectors, vectors[1:])]
    assert changed == [True, False, True, False, False, False, True, False, False]  # after docs 2, 4 and 8
    assert pipe.word_sources.source == "memory"


def test_doc_and_memory_give_the_doc_sentence_once(bertram_dir, tiny_bert_path):
    words = WordSources(RareWordRule(), "en", contexts="doc+memory")
    first, second = (sentencizer(text) for text in TEXTS[:2])
    assert words.contexts_for(first, "kumquat", kumquat_at(first)) == [SENTENCES[0]]
    assert words.contexts_for(second, "kumquat", kumquat_at(second)) == [SENTENCES[1], SENTENCES[0]]
    alone = WordSources(RareWordRule(), "en", contexts="memory")
    assert alone.contexts_for(first, "kumquat", kumquat_at(first)) == [SENTENCES[0]]  # "memory" holds the doc too


def test_the_component_window_is_the_memory_window():
    """The memory reads the doc as DocContexts does: the component's context_window reaches it (no E168)."""
    doc = spacy.blank("en")("one two three four kumquat six seven eight nine")
    registered = registry.resolve({"x": {"@context_sources": "spacy-bertram.memory_contexts.v1", "window": 1}})["x"]
    for contexts in (registered, "memory", "store:2+memory"):
        words = WordSources(RareWordRule(), "en", contexts=contexts, context_window=1, context_store="c.sqlite")
        assert words.context_window == 1
        words.context_window = 2
        (memory,) = [source for source in leaves(words.contexts) if isinstance(source, MemoryContexts)]
        assert memory.window == memory.doc_source.window == 2
    fresh = WordSources(RareWordRule(), "en", contexts="memory", context_window=1)
    assert fresh.contexts_for(doc, "kumquat", [4]) == ["four kumquat six"]
    fresh.context_window = 2
    other = spacy.blank("en")("one two three four kumquat six seven eight nine ten")
    assert fresh.contexts_for(other, "kumquat", [4]) == ["four kumquat six", "three four kumquat six seven"]


def test_the_shorthand_and_the_registered_source_build_the_same_memory():
    chain = contexts_from_spec("memory:4+store", context_store="c.sqlite", window=3)
    assert [(type(s).__name__, s.limit) for s in chain.sources] == [("MemoryContexts", 4), ("StoreContexts", None)]
    assert chain.key == "memory:4+store" and chain.sources[0].window == 3
    assert contexts_from_spec("doc+memory").key == "doc+memory"
    with pytest.raises(ValueError, match=r"\[E107\].*names 'memory' twice"):
        contexts_from_spec("memory+memory")
    built = registry.resolve(
        {
            "x": {
                "@context_sources": "spacy-bertram.memory_contexts.v1",
                "recompute_at": [1, 3],
                "max_per_word": 3,
                "max_words": 5,
                "limit": 2,
            }
        }
    )["x"]
    assert type(built) is type(chain.sources[0]) and built.key == "memory:2"
    assert (built.recompute_at, built.max_per_word, built.max_words, built.path) == ((1, 3), 3, 5, None)


# -- the file --------------------------------------------------------------------------------------------


def test_a_memory_file_reopened_gives_the_same_contexts(tmp_path):
    path = tmp_path / "memory.sqlite"
    memory = MemoryContexts(path=str(path))
    for text in TEXTS[:5]:
        ask(memory, text)
    again = MemoryContexts(path=str(path))
    assert again.remembered("kumquat") == SENTENCES[:5] and again.stats() == memory.stats()
    assert ask(again, TEXTS[5]) == SENTENCES[:4] and memory.remembered("kumquat") == SENTENCES[:6]  # one file
    with sqlite3.connect(path) as conn:
        assert dict(conn.execute("SELECT key, value FROM meta"))["format"] == FORMAT_NAME
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_file_that_is_not_a_memory_is_refused_and_left_as_it_was(tmp_path, bertram_dir, tiny_bert_path):
    text = tmp_path / "notes.txt"
    text.write_text("my notes\n", encoding="utf8")
    (tmp_path / "empty.sqlite").touch()
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
        conn.execute("INSERT INTO meta VALUES ('format', 'mine')")
    conn.close()
    (tmp_path / "store").mkdir()
    store = context_store_of(tmp_path / "store", ["the farmer sold a kumquat at the market"] * 3)
    cases = [
        (text, "is not an SQLite file"),
        (tmp_path / "empty.sqlite", "is empty"),
        (other, "without the 'spacy-bertram-context-memory' mark"),
        (store, "without the 'spacy-bertram-context-memory' mark"),
        (tmp_path / "store", "is a directory"),
    ]
    before = files_of(tmp_path)
    for path, why in cases:
        memory = MemoryContexts(path=str(path))  # nothing is opened yet
        with pytest.raises(ValueError, match=rf"\[E180\] The context memory file .*{path.name}.* {why}"):
            ask(memory, TEXTS[0])
        with pytest.raises(ValueError, match=r"\[E180\]"):
            memory.open()
    source = {"@context_sources": "spacy-bertram.memory_contexts.v1", "path": str(other)}
    with pytest.raises(ValueError, match=r"\[E180\]"):  # at initialize, not at the first doc
        make_nlp(bertram_dir, tiny_bert_path, contexts=source)
    assert files_of(tmp_path) == before  # byte for byte, and no journal or WAL file beside them


def remembering(path: Path, words: int = 300) -> MemoryContexts:
    """A memory file that holds `words` words of 8 long contexts each (a file of many pages), closed."""
    memory = MemoryContexts(path=str(path))
    for i in range(words):
        memory.memory.remember(f"word{i}", [f"context {j} of word {i}, " * 12 for j in range(8)], 8, 10_000)
    memory.memory.close()
    return memory


def test_a_memory_file_damaged_in_the_middle_is_refused_naming_the_file(tmp_path):
    """4 KB overwritten in the middle of a memory file raised a raw sqlite3.DatabaseError with no code and no
    file name; now E188 at the open, and where the damage came after the check, at the read that meets it."""
    path = tmp_path / "memory.sqlite"
    remembering(path)
    damage_middle(path)
    damaged = path.read_bytes()
    with pytest.raises(ValueError, match=r"\[E188\] The context memory file .*memory\.sqlite.* cannot be read whole"):
        MemoryContexts(path=str(path)).open()
    assert path.read_bytes() == damaged
    later = tmp_path / "later.sqlite"
    memory = remembering(later)
    memory.open()
    damage_middle(later)
    with pytest.raises(ValueError, match=r"\[E188\] The context memory file .*later\.sqlite.* cannot be read whole"):
        for i in range(300):
            memory.remembered(f"word{i}")


def test_a_memory_in_a_read_only_directory_is_named_as_such(tmp_path):
    """A valid memory file in a directory that cannot be written was refused as "an SQLite file without the ...
    mark" (E180), which is false: it opens from a writable directory. Now E189 says the directory is read-only."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    path = directory / "memory.sqlite"
    remembering(path, words=3)
    readable = MemoryContexts(path=str(path))
    assert readable.remembered("word1")  # a memory, read from its writable directory
    readable.memory.close()
    directory.chmod(0o555)
    immutable = (
        shutil.which("chattr") is not None
        and subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode == 0
    )
    try:
        if os.access(directory, os.W_OK):
            pytest.skip("cannot make a directory unwritable here (root, and no chattr +i)")
        with pytest.raises(
            ValueError,
            match=r"\[E189\] The context memory file .*memory\.sqlite' is a memory, but its "
            r"directory .*read-only' is read-only",
        ) as err:
            MemoryContexts(path=str(path)).open()
        assert "E180" not in str(err.value) and sorted(p.name for p in directory.iterdir()) == ["memory.sqlite"]
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        directory.chmod(0o755)


def files_of(directory: Path) -> dict:
    return {str(path): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


def test_memories_pickle_with_their_contents(tmp_path):
    """For spawned workers: a memory in the process travels with what it holds; one in a file, with its path."""
    memory = MemoryContexts(max_words=5, recompute_at=(1, 3))
    for text in TEXTS[:3]:
        ask(memory, text)
    copy = pickle.loads(pickle.dumps(memory))
    assert copy.remembered("kumquat") == SENTENCES[:3] and (copy.max_words, copy.recompute_at) == (5, (1, 3))
    ask(copy, TEXTS[3])
    assert memory.stats()["contexts"] == 3 and copy.stats()["contexts"] == 4  # a copy: its own from then on
    in_file = MemoryContexts(path=str(tmp_path / "m.sqlite"))
    ask(in_file, TEXTS[0])
    copy = pickle.loads(pickle.dumps(in_file))
    assert copy.path == in_file.path and copy.remembered("kumquat") == [SENTENCES[0]]
    ask(copy, TEXTS[1])
    assert in_file.remembered("kumquat") == SENTENCES[:2]  # the same file


# -- the pipeline: two passes, workers, saving ------------------------------------------------------------


def test_two_passes_give_every_occurrence_the_whole_collection(bertram_dir, tiny_bert_path):
    """The paper's in-domain setting: a first pass remembers, the second gives text 1 the sentences of the others."""
    nlp = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True, contexts="memory")
    first = list(nlp.pipe(TEXTS[:8]))
    second = list(nlp.pipe(TEXTS[:8]))
    words = nlp.get_pipe("bertram").word_sources
    doc = second[0]
    assert words.contexts_for(doc, "kumquat", kumquat_at(doc)) == SENTENCES[:8]  # text 5's and text 8's among them
    vectors = [d._.bertram[kumquat_at(d)[0]] for d in second]
    assert all(numpy.array_equal(vectors[0], v) for v in vectors)  # one vector for the collection
    assert not numpy.array_equal(first[0]._.bertram[kumquat_at(first[0])[0]], vectors[0])


def _forked_vectors(nlp, texts):
    docs = list(nlp.pipe(texts, n_process=2, batch_size=1))  # one doc per worker
    return [doc._.bertram[kumquat_at(doc)[0]] for doc in docs]


def test_workers_copy_a_process_memory_and_share_a_memory_file(bertram_dir, tiny_bert_path, tmp_path):
    """n_process=2, one doc per worker, after the parent remembered one doc. Each worker starts from a copy of the
    parent's memory: each doc gets [parent's, its own]. With a file both write it: the later doc gets [parent's,
    the earlier doc's], the same set, so the same vector, and the parent sees all three."""
    for path in (None, tmp_path / "m.sqlite"):
        contexts = {"@context_sources": "spacy-bertram.memory_contexts.v1", "path": str(path) if path else None}
        nlp = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True, contexts=contexts)
        memory = nlp.get_pipe("bertram").word_sources.contexts
        nlp(TEXTS[0])
        vectors = _forked_vectors(nlp, TEXTS[1:3])
        if path is None:
            assert memory.remembered("kumquat") == SENTENCES[:1]  # what the workers remembered stayed there
            alone = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True, contexts="memory")
            alone(TEXTS[0])
            doc = alone(TEXTS[1])  # [s0, s1] in one process
            assert numpy.allclose(vectors[0], doc._.bertram[kumquat_at(doc)[0]], atol=1e-5)
            assert not numpy.allclose(vectors[0], vectors[1], atol=1e-5)  # [s0, s1] and [s0, s2]
        else:
            assert sorted(memory.remembered("kumquat")) == sorted(SENTENCES[:3])
            assert numpy.allclose(vectors[0], vectors[1], atol=1e-5)


def test_a_saved_pipeline_keeps_the_setting_not_the_memory(bertram_dir, tiny_bert_path, tmp_path):
    nlp = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True, contexts="doc+memory")
    for text in TEXTS[:3]:
        nlp(text)
    nlp.to_disk(tmp_path / "p")
    saved = [path for path in (tmp_path / "p").rglob("*") if path.is_file()]
    assert sorted(path.name for path in (tmp_path / "p" / "bertram").iterdir()) == ["cfg", "model"]
    assert not [path for path in saved if SENTENCES[1].encode() in path.read_bytes()]
    loaded = spacy.load(tmp_path / "p")
    words = loaded.get_pipe("bertram").word_sources
    assert words.source == "doc+memory" and words.contexts.sources[1].stats()["words"] == 0  # starts empty
    doc = loaded(TEXTS[1])
    assert list(doc._.bertram) == kumquat_at(doc)
    assert words.contexts.sources[1].remembered("kumquat") == [SENTENCES[1]]
    # A memory file is the user's, named in the config: the loaded pipeline reads that same file.
    source = {"@context_sources": "spacy-bertram.memory_contexts.v1", "path": str(tmp_path / "m.sqlite")}
    in_file = make_nlp(bertram_dir, tiny_bert_path, sentencizer=True, contexts=source)
    in_file(TEXTS[0])
    in_file.to_disk(tmp_path / "q")
    assert not list((tmp_path / "q").rglob("*.sqlite*"))
    reloaded = spacy.load(tmp_path / "q").get_pipe("bertram").word_sources.contexts
    assert reloaded.path == str(tmp_path / "m.sqlite") and reloaded.remembered("kumquat") == [SENTENCES[0]]
    assert Path(reloaded.path).is_file()
