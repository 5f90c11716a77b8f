"""Streaming corpus reader and word tokenizer."""

from __future__ import annotations

import gzip
import warnings

import pytest

from spacy_bertram.training.corpus import (
    Corpus,
    corpus_files,
    expand_paths,
    iter_lines,
    iter_sentences,
    tokenize,
    tokenize_spans,
)


def test_tokenize_keeps_hyphens_and_contractions_and_splits_possessive():
    text = "Hornby's e-mail: don't tell O'Neill, a 12-year-old (naïve) fan's café!"
    assert tokenize(text) == [
        "Hornby",
        "'s",
        "e-mail",
        "don't",
        "tell",
        "O'Neill",
        "a",
        "12-year-old",
        "naïve",
        "fan",
        "'s",
        "café",
    ]


def test_tokenize_edges_and_lowercase():
    assert tokenize("-x- under_score James' \u2019s it\u2019s") == [
        "x",
        "under",
        "score",
        "James",
        "\u2019s",
        "it",
        "\u2019s",
    ]
    assert tokenize("The KUMQUAT Tree", lowercase=True) == ["the", "kumquat", "tree"]
    assert tokenize("  ... !!  ") == []


def test_tokenize_spans_index_the_original_text():
    text = "Ein Kumquat-Baum, don't panic."
    spans = tokenize_spans(text, lowercase=True)
    assert [w for w, _, _ in spans] == ["ein", "kumquat-baum", "don't", "panic"]
    assert [text[s:e] for _, s, e in spans] == ["Ein", "Kumquat-Baum", "don't", "panic"]


def test_expand_paths_recurses_sorted_and_skips_hidden(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    for rel in ["b/2.txt", "a.txt", ".hidden.txt", ".git/x.txt", "b/1.txt"]:
        (tmp_path / rel).write_text("word\n", encoding="utf8")
    files = expand_paths(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in files] == ["a.txt", "b/1.txt", "b/2.txt"]
    assert expand_paths([tmp_path / "a.txt", str(tmp_path / "b" / "1.txt")]) == [
        tmp_path / "a.txt",
        tmp_path / "b/1.txt",
    ]
    with pytest.raises(ValueError, match=r"\[E209\].*does not exist"):
        expand_paths(tmp_path / "missing.txt")


def test_binary_file_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "good.txt").write_text("fine text\n", encoding="utf8")
    (tmp_path / "model.bin").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(ValueError, match=r"\[E210\].*binary.*model\.bin"):
        corpus_files(tmp_path)


def test_non_utf8_file_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "latin.txt").write_bytes("caf\u00e9 cr\u00e8me\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"\[E211\].*not valid UTF-8.*latin\.txt"):
        corpus_files(tmp_path / "latin.txt")


def test_utf8_split_across_read_chunks_is_fine(tmp_path, monkeypatch):
    import spacy_bertram.training.corpus as corpus_mod

    monkeypatch.setattr(corpus_mod, "CHUNK_BYTES", 3)
    path = tmp_path / "u.txt"
    path.write_text("ééé ☃☃\n", encoding="utf8")
    assert corpus_files(path) == [path]


def test_skip_mode_warns_and_keeps_good_files(tmp_path):
    (tmp_path / "good.txt").write_text("fine text\n", encoding="utf8")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe bad")
    with pytest.warns(UserWarning, match="bad.txt"):
        files = corpus_files(tmp_path, errors="skip")
    assert files == [tmp_path / "good.txt"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"\[E214\].*empty"):
            corpus_files(tmp_path / "bad.txt", errors="skip")
    with pytest.raises(ValueError, match=r"\[E213\] errors must be"):
        corpus_files(tmp_path, errors="ignore")


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(ValueError, match=r"\[E214\] Corpus is empty"):
        corpus_files(tmp_path)


def test_lines_skip_blank_and_strip_newlines(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"first line\r\n\n   \nsecond line\nlast without newline")
    assert list(iter_lines([path])) == ["first line", "second line", "last without newline"]


def test_overlong_lines_are_cut_at_spaces_without_splitting_words(tmp_path):
    words = [f"w{i:03d}" for i in range(200)]
    path = tmp_path / "one_line.txt"
    path.write_text(" ".join(words), encoding="utf8")
    pieces = list(iter_lines([path], max_line_chars=50))
    assert len(pieces) > 10
    assert all(len(p) <= 50 + 5 for p in pieces)
    assert [w for p in pieces for w in p.split()] == words


def test_gzip_files_are_read_transparently(tmp_path):
    path = tmp_path / "c.txt.gz"
    with gzip.open(path, "wt", encoding="utf8") as file_:
        file_.write("compressed words here\n")
    assert list(iter_sentences(path)) == [["compressed", "words", "here"]]


def test_corpus_is_reiterable_and_lowercases(tmp_path):
    (tmp_path / "a.txt").write_text("The Cat sat.\n\nA dog, a DOG!\n", encoding="utf8")
    (tmp_path / "b.txt").write_text("... \nlast one\n", encoding="utf8")
    corpus = Corpus.from_paths(tmp_path, lowercase=True)
    first = list(corpus)
    assert first == [["the", "cat", "sat"], ["a", "dog", "a", "dog"], ["last", "one"]]
    assert list(corpus) == first
    assert list(corpus.lines()) == ["The Cat sat.", "A dog, a DOG!", "... ", "last one"]
    assert corpus.size_bytes == sum(p.stat().st_size for p in corpus.files)
