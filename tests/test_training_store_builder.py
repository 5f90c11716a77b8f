"""SQLite context store: counts, sampled contexts, selection, crash safety."""

from __future__ import annotations

import pickle
import sqlite3
from collections import Counter

import pytest

import spacy_bertram.training.store_builder as contexts_mod
from spacy_bertram.context_store import ContextStore
from spacy_bertram.training.corpus import Corpus, tokenize, tokenize_spans
from spacy_bertram.training.store_builder import build_context_store, context_caps, count_words, make_context


TEXT = """The kumquat is a small citrus fruit.
Kumquat trees grow in the garden, and the kumquat fruit is sweet.

A farmer sold one kumquat at the market.
The farmer's dog ate the fruit.
"""


def build(tmp_path, text=TEXT, min_count=2, max_contexts=8, rare=4, window=25, seed=0, lowercase=True):
    (tmp_path / "corpus").mkdir(exist_ok=True)
    (tmp_path / "corpus" / "c.txt").write_text(text, encoding="utf8")
    corpus = Corpus.from_paths(tmp_path / "corpus", lowercase=lowercase)
    counts, n_lines = count_words(corpus, progress=False)
    caps = context_caps(counts, min_count, max_contexts, rare)
    path = build_context_store(
        corpus, tmp_path / "ctx.sqlite", counts, caps, window=window, n_lines=n_lines, seed=seed, progress=False
    )
    return ContextStore.open(path), counts


def test_progress_bars_leave_a_redirected_log_alone(tmp_path, capsys):
    """With progress on (prepare's default) and stderr no terminal, as in `prepare ... 2> log`, the counting
    and collecting bars write nothing: each redraw was a line of the log."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "c.txt").write_text(TEXT, encoding="utf8")
    corpus = Corpus.from_paths(tmp_path / "corpus", lowercase=True)
    counts, n_lines = count_words(corpus, progress=True)
    build_context_store(
        corpus, tmp_path / "ctx.sqlite", counts, context_caps(counts, 2, 8, 4), n_lines=n_lines, progress=True
    )
    assert capsys.readouterr().err == ""


def test_counts_are_exact(tmp_path):
    store, counts = build(tmp_path)
    expected = Counter(w.lower() for line in TEXT.splitlines() for w in tokenize(line))
    assert counts == expected
    assert store.count("kumquat") == 4 and store.count("KUMQUAT") == 4
    assert store.count("the") == 6
    assert store.count("'s") == 1 and store.count("farmer") == 2
    assert store.count("unseen") == 0 and "unseen" not in store and "fruit" in store
    assert store.total_words == sum(expected.values()) == 7 + 12 + 8 + 7
    assert store.vocab_size == len(expected) == len(store)
    assert store.lowercase and store.window == 25


def test_words_are_ranked_and_filtered(tmp_path):
    store, counts = build(tmp_path)
    assert list(store.words(min_count=3)) == ["the", "kumquat", "fruit"]
    assert list(store.counts(min_count=3)) == [("the", 6), ("kumquat", 4), ("fruit", 3)]
    assert set(store.words()) == set(counts)


def test_contexts_contain_the_word_at_the_stored_span(tmp_path):
    store, _ = build(tmp_path)
    spans = store.context_spans("Kumquat")
    assert len(spans) == 3  # 4 occurrences, two of them on the same line (one window)
    for text, start, end in spans:
        assert text[start:end].lower() == "kumquat"
        assert text in TEXT
    assert set(store.contexts("kumquat")) == {
        "The kumquat is a small citrus fruit",
        "Kumquat trees grow in the garden, and the kumquat fruit is sweet",
        "A farmer sold one kumquat at the market",
    }
    assert store.contexts("unseen") == []
    assert store.num_contexts("kumquat") == 3


def test_window_limits_words_each_side(tmp_path):
    words = [f"w{i}" for i in range(100)]
    store, _ = build(tmp_path, text=" ".join(words) + "\n", min_count=1, window=3)
    (context,) = store.contexts("w50")
    assert context == "w47 w48 w49 w50 w51 w52 w53"
    assert store.contexts("w0") == ["w0 w1 w2 w3"]
    assert store.contexts("w99") == ["w96 w97 w98 w99"]


def test_make_context_offsets():
    line = "Alpha, beta; GAMMA delta!"
    spans = tokenize_spans(line, lowercase=True)
    assert make_context(line, spans, 2, 1) == ("beta; GAMMA delta", 6, 11)


def test_duplicate_contexts_are_stored_once(tmp_path):
    text = "\n".join(["the same rare line with zyxt in it"] * 10 + ["another zyxt line"]) + "\n"
    store, _ = build(tmp_path, text=text, min_count=1, max_contexts=8)
    assert store.count("zyxt") == 11
    assert sorted(store.contexts("zyxt")) == ["another zyxt line", "the same rare line with zyxt in it"]


def test_caps_are_respected_for_training_and_rare_words(tmp_path):
    lines = [f"common word number {i} here" for i in range(60)] + [f"rarish token {i}" for i in range(6)]
    store, _ = build(tmp_path, text="\n".join(lines) + "\n", min_count=20, max_contexts=5, rare=2)
    assert store.count("common") == 60 and len(store.contexts("common")) == 5
    assert store.count("rarish") == 6 and len(store.contexts("rarish")) == 2
    assert len(store.contexts("common", limit=3)) == 3
    assert store.meta["total_contexts"] == str(sum(store.num_contexts(w) for w in store.words()))


def test_reservoir_samples_the_whole_corpus_and_is_seeded(tmp_path):
    lines = [f"item {i} of the list" for i in range(400)]
    text = "\n".join(lines) + "\n"
    first, _ = build(tmp_path, text=text, min_count=1, max_contexts=10, seed=1)
    picked = [int(c.split()[1]) for c in first.contexts("item")]
    first.close()
    assert len(set(picked)) == 10
    assert max(picked) >= 200  # not just the first occurrences
    again, _ = build(tmp_path, text=text, min_count=1, max_contexts=10, seed=1)
    assert [int(c.split()[1]) for c in again.contexts("item")] == picked
    again.close()
    other, _ = build(tmp_path, text=text, min_count=1, max_contexts=10, seed=2)
    assert sorted(int(c.split()[1]) for c in other.contexts("item")) != sorted(picked)


def test_cased_store(tmp_path):
    store, _ = build(tmp_path, lowercase=False, min_count=1)
    assert not store.lowercase
    assert store.count("Kumquat") == 1 and store.count("kumquat") == 3
    assert store.contexts("Kumquat") == ["Kumquat trees grow in the garden, and the kumquat fruit is sweet"]


def test_context_caps():
    counts = Counter({"the": 50, "cat": 12, "rare": 3, "once": 1, "twice": 2})
    assert context_caps(counts, min_count=10, max_contexts=20, rare_max_contexts=0) == {"the": 20, "cat": 12}
    assert context_caps(counts, 10, 20, 2) == {"the": 20, "cat": 12, "rare": 2, "twice": 2, "once": 1}
    assert context_caps(counts, 10, 20, 2, rare_min_count=2) == {"the": 20, "cat": 12, "rare": 2, "twice": 2}
    assert context_caps(counts, 10, 20, 2, max_rare_words=1) == {"the": 20, "cat": 12, "rare": 2}
    assert context_caps(counts, 10, 5, 0, include=["rare", "missing"]) == {"the": 5, "cat": 5, "rare": 3}
    with pytest.raises(ValueError, match=r"\[E245\]"):
        context_caps(counts, 0)
    with pytest.raises(ValueError, match=r"\[E246\]"):
        context_caps(counts, 1, max_contexts=0)


def test_store_round_trips_through_pickle_and_context_manager(tmp_path):
    store, _ = build(tmp_path)
    clone = pickle.loads(pickle.dumps(store))
    assert clone.count("kumquat") == 4
    assert clone.contexts("kumquat") == store.contexts("kumquat")
    with ContextStore.open(store.path) as again:
        assert list(again.words(3)) == list(store.words(3))


def test_store_is_read_only(tmp_path):
    store, _ = build(tmp_path)
    with pytest.raises(sqlite3.OperationalError):
        store._conn.execute("DELETE FROM words")


def test_empty_corpus_is_an_error(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n ... !!\n", encoding="utf8")
    corpus = Corpus.from_paths(tmp_path)
    with pytest.raises(ValueError, match=r"\[E214\] Corpus is empty: no words found"):
        count_words(corpus, progress=False)
    with pytest.raises(ValueError, match=r"\[E247\].*empty"):
        build_context_store(corpus, tmp_path / "x.sqlite", {}, {}, progress=False)
    assert not (tmp_path / "x.sqlite").exists()


def test_crash_leaves_no_store_and_keeps_the_old_one(tmp_path, monkeypatch):
    store, counts = build(tmp_path)
    before = store.contexts("kumquat")
    store.close()
    calls = {"n": 0}
    original = contexts_mod._Reservoirs.offer

    def failing_offer(self, *args):
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt("killed")
        return original(self, *args)

    monkeypatch.setattr(contexts_mod._Reservoirs, "offer", failing_offer)
    corpus = Corpus.from_paths(tmp_path / "corpus", lowercase=True)
    with pytest.raises(KeyboardInterrupt):
        build_context_store(
            corpus, tmp_path / "ctx.sqlite", counts, context_caps(counts, 1, 4), batch_size=2, progress=False
        )
    with pytest.raises(KeyboardInterrupt):
        build_context_store(
            corpus, tmp_path / "new.sqlite", counts, context_caps(counts, 1, 4), batch_size=2, progress=False
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "ctx.sqlite"]
    assert ContextStore.open(tmp_path / "ctx.sqlite").contexts("kumquat") == before
