"""A context store of a user's own texts: every input kind, adds that resume the sample, crash safety, named
errors, and the `texts-store` command's output rule."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from typing import Dict, List

import pytest

import spacy_bertram.training.text_store as text_store
from spacy_bertram.cli import app
from spacy_bertram.context_store import ContextStore
from spacy_bertram.training.corpus import tokenize
from spacy_bertram.training.text_store import add_texts, read_texts

from tests.util import context_store_of, damage_middle, invoke, runner

TEXTS = [
    "The quokka smiled at the camera on Rottnest Island.",
    "A quokka is a small wallaby; tourists take selfies with the quokka.",
    "Rottnest ferries were full of people hoping to see a quokka.",
    "Later that week a Quokka stole a sandwich from a tourist.",
]


def counts_of(path: Path) -> Dict[str, int]:
    with ContextStore.open(path) as store:
        return dict(store.counts())


def rows_of(path: Path) -> List[tuple]:
    conn = sqlite3.connect(path)
    try:
        return list(
            conn.execute(
                "SELECT w.word, c.slot, c.text, c.start, c.end FROM words w JOIN contexts c ON c.word_id = w.id"
            )
        )
    finally:
        conn.close()


def check_consistent(path: Path, cap: int) -> None:
    """words.count/n_contexts, the contexts table and the meta agree; every context is an occurrence."""
    conn = sqlite3.connect(path)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        words = list(conn.execute("SELECT id, word, count, n_contexts FROM words"))
        per_word = Counter(wid for (wid,) in conn.execute("SELECT word_id FROM contexts"))
        slots = {
            wid: sorted(s for (s,) in conn.execute("SELECT slot FROM contexts WHERE word_id = ?", (wid,)))
            for wid, *_ in words
        }
    finally:
        conn.close()
    assert int(meta["total_words"]) == sum(w[2] for w in words)
    assert int(meta["vocab_size"]) == len(words)
    assert int(meta["total_contexts"]) == sum(per_word.values()) == sum(w[3] for w in words)
    for wid, word, count, n_contexts in words:
        assert per_word[wid] == n_contexts and 1 <= n_contexts <= min(cap, count), word
        assert slots[wid] == list(range(n_contexts))  # the reservoir's slots, filled in order
    for word, _, text, start, end in rows_of(path):
        assert text[start:end].lower() == word


# -- the inputs ---------------------------------------------------------------------------------


def test_every_input_kind_is_read_in_order(tmp_path, monkeypatch):
    """.txt, .jsonl (other fields ignored), their .gz/.bz2, a .spacy DocBin, a directory (sorted, recursive,
    other files skipped with W019) and stdin, blank texts left out."""
    import spacy
    from spacy.tokens import DocBin

    (tmp_path / "a.txt").write_text("one\n\n  \ntwo\n", encoding="utf8")
    with gzip.open(tmp_path / "b.txt.gz", "wt", encoding="utf8") as file_:
        file_.write("three\n")
    records = [{"text": "four", "label": "x"}, {"text": "  "}, {"text": "five\nstill five", "id": 2}]
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n\n", encoding="utf8")
    with bz2.open(tmp_path / "d.jsonl.bz2", "wt", encoding="utf8") as file_:
        file_.write(json.dumps({"text": "six"}) + "\n")
    nlp = spacy.blank("en")
    DocBin(docs=[nlp("seven eight"), nlp(""), nlp("nine")]).to_disk(tmp_path / "e.spacy")
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.txt").write_text("eleven\n", encoding="utf8")
    (folder / "b.jsonl").write_text(json.dumps({"text": "ten"}) + "\n", encoding="utf8")
    (folder / "notes.md").write_text("not read\n", encoding="utf8")
    (folder / ".hidden.txt").write_text("hidden\n", encoding="utf8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"twelve\n\nthirteen\n"), encoding="utf8"))
    paths = ["a.txt", "b.txt.gz", "c.jsonl", "d.jsonl.bz2", "e.spacy", "folder", "-"]
    with pytest.warns(UserWarning, match=r"\[W019\] Skipping 1 file\(s\) under .*folder.*: notes.md"):
        texts = list(read_texts([tmp_path / p if p != "-" else p for p in paths]))
    assert texts == [
        "one",
        "two",
        "three",
        "four",
        "five\nstill five",
        "six",
        "seven eight",
        "nine",
        "ten",  # folder/b.jsonl sorts before folder/sub/
        "eleven",
        "twelve",
        "thirteen",
    ]


def test_a_store_of_texts_opens_as_a_context_store_with_its_settings_recorded(tmp_path):
    result = add_texts(tmp_path / "s.sqlite", TEXTS, max_contexts=3, window=2, progress=False)
    words = [w for text in TEXTS for w in tokenize(text, lowercase=True)]
    assert result["created"] and result["texts"] == 4 and result["words"] == len(words)
    assert result["vocab_size"] == result["new_words"] == len(set(words))
    with ContextStore.open(tmp_path / "s.sqlite") as store:
        assert store.count("Quokka") == 5 and store.lowercase and store.window == 2
        assert store.meta["source"] == "texts" and store.meta["max_contexts"] == "3" and store.meta["texts"] == "4"
        assert store.count("sandwich") == 1 and store.contexts("sandwich") == ["stole a sandwich from a"]
        assert len(store.contexts("quokka")) == 3  # 5 occurrences, the cap
    check_consistent(tmp_path / "s.sqlite", cap=3)


def test_the_parts_of_a_hyphen_joined_word_are_words_of_the_store_and_an_older_store_keeps_its_rule(tmp_path):
    """spaCy cuts "twinkly-eyed" into "twinkly", "-", "eyed", the tokens the component meets: a store of texts
    counts each part as a word too, in the word's context with the part as its occurrence (the store records the
    rule, `word_parts`); an add to a store built before (no `word_parts`) keeps to whole words, as it was sampled."""
    texts = ["Her twinkly-eyed grin was jaw-droppingly good.", "A twinkly lamp glowed."]
    result = add_texts(tmp_path / "s.sqlite", texts, max_contexts=3, progress=False)
    assert result["words"] == 6 + 2 + 2 + 4 and result["total_words"] == 14  # the words, then the parts
    with ContextStore.open(tmp_path / "s.sqlite") as store:
        assert store.meta["word_parts"] == "hyphens"
        assert (store.count("twinkly-eyed"), store.count("twinkly"), store.count("eyed")) == (1, 2, 1)
        assert store.context_spans("droppingly") == [("Her twinkly-eyed grin was jaw-droppingly good", 30, 40)]
        assert store.contexts("twinkly") == ["Her twinkly-eyed grin was jaw-droppingly good", "A twinkly lamp glowed"]
    check_consistent(tmp_path / "s.sqlite", cap=3)
    conn = sqlite3.connect(tmp_path / "s.sqlite")  # as a store built before the parts were words
    conn.execute("DELETE FROM meta WHERE key = 'word_parts'")
    conn.commit()
    conn.close()
    add_texts(tmp_path / "s.sqlite", ["A zorbing-mad quokka."], progress=False)
    with ContextStore.open(tmp_path / "s.sqlite") as store:
        assert store.count("zorbing-mad") == 1 and store.count("zorbing") == 0 and store.meta["word_parts"] == "none"


# -- adding -------------------------------------------------------------------------------------


def test_building_then_adding_counts_what_one_build_of_all_texts_counts(tmp_path):
    many = [f"{text} Day {i % 7}." for i, text in enumerate(TEXTS * 6)]
    add_texts(tmp_path / "once.sqlite", many, max_contexts=4, progress=False)
    add_texts(tmp_path / "grown.sqlite", many[:5], max_contexts=4, progress=False)
    result = add_texts(tmp_path / "grown.sqlite", many[5:17], progress=False)  # the store's cap, window, casing
    add_texts(tmp_path / "grown.sqlite", many[17:], progress=False)
    assert not result["created"] and result["texts"] == 12
    once, grown = counts_of(tmp_path / "once.sqlite"), counts_of(tmp_path / "grown.sqlite")
    assert grown == once and once["quokka"] == 30 and once["day"] == 24
    for path in (tmp_path / "once.sqlite", tmp_path / "grown.sqlite"):
        check_consistent(path, cap=4)
    with ContextStore.open(tmp_path / "grown.sqlite") as store:
        assert store.meta["texts"] == "24" and store.meta["adds"] == "3"


def test_adds_keep_the_sample_uniform_over_every_occurrence(tmp_path):
    """Algorithm R resumed: after 20 occurrences and then 20 more, each is in the 4-slot sample with chance
    4/40, so about 2 of the 4 come from the first add. Restarting the sample at each add would keep almost
    none of them (every later occurrence would take a slot)."""
    first = [f"kumquat {i}" for i in range(20)]
    second = [f"kumquat {i}" for i in range(20, 40)]
    from_first = []
    for seed in range(60):
        path = tmp_path / f"s{seed}.sqlite"
        add_texts(path, first, max_contexts=4, seed=seed, progress=False)
        add_texts(path, second, seed=seed, progress=False)
        with ContextStore.open(path) as store:
            contexts = store.contexts("kumquat")
            assert len(contexts) == 4 and store.count("kumquat") == 40
        from_first.append(sum(int(text.split()[1]) < 20 for text in contexts))
    mean = sum(from_first) / len(from_first)
    assert 1.5 < mean < 2.5, mean  # hypergeometric: mean 2, sd of the mean about 0.12


def test_adding_the_same_texts_again_stores_no_context_twice_but_counts_grow(tmp_path):
    path = tmp_path / "s.sqlite"
    add_texts(path, TEXTS, progress=False)
    before = rows_of(path)
    result = add_texts(path, TEXTS, progress=False)
    assert result["contexts_added"] == 0 and result["new_words"] == 0
    assert sorted(rows_of(path)) == sorted(before)  # every word has all its distinct contexts already
    assert counts_of(path)["quokka"] == 10
    texts = [text for _, _, text, _, _ in rows_of(path)]
    words = [word for word, *_ in rows_of(path)]
    assert len(set(zip(words, texts))) == len(texts)
    check_consistent(path, cap=16)


def test_an_interrupted_add_leaves_the_old_store_byte_identical(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    add_texts(path, TEXTS, progress=False)
    old = path.read_bytes()
    calls = []

    def failing(text, lowercase=False):
        calls.append(text)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C halfway through the new texts
        return real(text, lowercase)

    real = text_store.tokenize_spans
    monkeypatch.setattr(text_store, "tokenize_spans", failing)
    with pytest.raises(KeyboardInterrupt):
        add_texts(path, [f"a new text {i} about kumquats" for i in range(5)], progress=False)
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
    with pytest.raises(ValueError, match=r"\[E088\]"):
        add_texts(path, ["", "  "], progress=False)  # nothing to add: an error, and the store unchanged
    assert path.read_bytes() == old


# -- named errors -------------------------------------------------------------------------------


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "name, data, pattern",
    [
        ("gone.txt", None, r"\[E209\] Corpus path does not exist: .*gone.txt"),
        ("texts.csv", b"a,b\n", r"\[E082\] .*texts.csv: not a kind of text file texts-store reads \(.csv\)"),
        ("t.jsonl", b'{"text": "fine"}\n\n{"label": 1}\n', r"\[E080\] .*t.jsonl, line 3: .*found no \"text\" field"),
        ("t.jsonl", b'{"text": null}\n', r"\[E080\] .*t.jsonl, line 1: .*found \"text\": null"),
        ("t.jsonl", b'{"text": "a"}\n{"text": \n', r"\[E081\] .*t.jsonl, line 2: not a JSON object"),
        ("t.jsonl", b'["a list"]\n', r"\[E081\] .*t.jsonl, line 1: not a JSON object \(a list\)"),
        ("t.txt", "caf\u00e9\n".encode("latin-1"), r"\[E211\] Corpus file is not valid UTF-8: .*t.txt"),
        (
            "t.jsonl",
            b'{"text": "ok"}\n' + '{"text": "caf\u00e9"}\n'.encode("latin-1"),
            r"\[E211\].* \(line 2\): .*t.jsonl",
        ),
        ("t.spacy", b"not a docbin", r"\[E083\] .*t.spacy: cannot read it as a spaCy DocBin"),
        ("t.txt.gz", b"not gzip", r"\[E212\] Corpus file cannot be read"),
    ],
)
def test_bad_inputs_are_named_and_write_nothing(tmp_path, name, data, pattern):
    source = tmp_path / name if data is None else write(tmp_path / name, data)
    with pytest.raises(ValueError, match=pattern):
        add_texts(tmp_path / "s.sqlite", read_texts(source), progress=False)
    assert not (tmp_path / "s.sqlite").exists() and not list(tmp_path.glob(".s.sqlite.*"))


def test_adding_needs_a_store_of_texts_with_the_same_settings(tmp_path):
    user_file = write(tmp_path / "notes.sqlite", b"my notes")
    with pytest.raises(ValueError, match=r"\[E084\] Cannot add texts to .*notes.sqlite: .*\[E113\]"):
        add_texts(user_file, TEXTS, progress=False)
    assert user_file.read_bytes() == b"my notes"
    general = context_store_of(tmp_path, ["the farmer sold a kumquat", "the farmer sold a kumquat again"])
    with pytest.raises(ValueError, match=r"\[E086\] Cannot add texts to .*c.sqlite: it was built by `prepare`"):
        add_texts(general, TEXTS, progress=False)
    path = tmp_path / "s.sqlite"
    add_texts(path, TEXTS, window=5, progress=False)
    with pytest.raises(
        ValueError, match=r"\[E085\] .*s.sqlite was built with window \(--context-words\) 5, but 25 was asked"
    ):
        add_texts(path, TEXTS, window=25, progress=False)
    with pytest.raises(ValueError, match=r"\[E085\] .*with casing lowercased, but cased \(--cased\) was asked"):
        add_texts(path, TEXTS, lowercase=False, progress=False)
    with pytest.raises(ValueError, match=r"\[E085\] .*with max_contexts \(--max-contexts\) 16, but 8 was asked"):
        add_texts(path, TEXTS, max_contexts=8, progress=False)
    assert add_texts(path, TEXTS, window=5, lowercase=True, max_contexts=16, progress=False)["texts"] == 4


# -- the command --------------------------------------------------------------------------------


def test_the_command_builds_adds_and_reads_stdin(tmp_path):
    (tmp_path / "t.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS[:2]), encoding="utf8")
    out = tmp_path / "s.sqlite"
    result = invoke("texts-store", tmp_path / "t.jsonl", out, "--max-contexts", "2", "--context-words", "3", "--cased")
    assert result.exit_code == 0, result.output
    built = json.loads(result.output)
    assert built["created"] and built["texts"] == 2 and built["total_words"] == 21
    result = runner.invoke(app, ["texts-store", "-", str(out), "--add"], input="\n".join(TEXTS[2:]) + "\n")
    assert result.exit_code == 0, result.output
    added = json.loads(result.output)
    assert not added["created"] and added["texts"] == 2 and added["total_texts"] == 4
    with ContextStore.open(out) as store:
        assert store.count("quokka") == 4 and store.count("Quokka") == 1  # cased, kept by the add
        assert store.window == 3 and len(store.contexts("quokka")) == 2
    result = invoke("texts-store", tmp_path / "t.jsonl", out, "--add", "--context-words", "4")
    assert result.exit_code == 1 and "[E085]" in result.output


def test_the_command_never_replaces_a_file_it_did_not_write_without_force(tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf8")
    mine = write(tmp_path / "mine.sqlite", b"my own database")
    result = invoke("texts-store", tmp_path / "t.txt", mine)
    assert result.exit_code == 1 and "[E071] texts-store: " in result.output and "--force" in result.output
    assert mine.read_bytes() == b"my own database"
    result = invoke("texts-store", tmp_path / "t.txt", mine, "--add")
    assert result.exit_code == 1 and "[E084]" in result.output and mine.read_bytes() == b"my own database"
    general = context_store_of(tmp_path, ["the farmer sold a kumquat", "the farmer sold a kumquat again"])
    result = invoke("texts-store", tmp_path / "t.txt", general)
    assert result.exit_code == 1 and "is marked 'spacy-bertram-contexts'" in " ".join(result.output.split())
    result = invoke("texts-store", tmp_path / "t.txt", mine, "--force")
    assert result.exit_code == 0, result.output
    assert counts_of(mine)["quokka"] == 5


def test_the_command_rebuilds_its_own_store_only_with_force(tmp_path):
    (tmp_path / "t.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf8")
    out = tmp_path / "s.sqlite"
    assert invoke("texts-store", tmp_path / "t.txt", out).exit_code == 0
    assert invoke("texts-store", tmp_path / "t.txt", out, "--add").exit_code == 0
    before = out.read_bytes()
    result = invoke("texts-store", tmp_path / "t.txt", out)
    assert result.exit_code == 1 and "[E087]" in result.output and "--add" in result.output
    assert out.read_bytes() == before and counts_of(out)["quokka"] == 10
    result = invoke("texts-store", tmp_path / "t.txt", out, "--force")
    assert result.exit_code == 0 and counts_of(out)["quokka"] == 5  # rebuilt from these texts alone
    result = invoke("texts-store", out)
    assert result.exit_code == 1 and "[E089] texts-store needs the texts and the store file" in result.output
    result = invoke("texts-store", tmp_path / "t.txt", tmp_path / "new.sqlite", "--add")
    assert result.exit_code == 1 and "[E084]" in result.output and "[E110]" in result.output
    assert not (tmp_path / "new.sqlite").exists()


def test_adding_to_a_store_damaged_in_the_middle_is_refused_before_any_text_is_read(tmp_path):
    """`--add` on a store with 4 KB overwritten in the middle exited 0 and reported totals."""
    lines = [f"The quokka number {i} lives on Rottnest Island with word{i} and friend{i % 7} today." for i in range(80)]
    (tmp_path / "t.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    out = tmp_path / "s.sqlite"
    assert invoke("texts-store", tmp_path / "t.txt", out).exit_code == 0
    damage_middle(out)
    damaged = out.read_bytes()
    result = invoke("texts-store", tmp_path / "t.txt", out, "--add")
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    message = " ".join(result.output.split())
    assert "[E187] The context store" in message and f"{out} cannot be read whole" in message, message
    assert out.read_bytes() == damaged and sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite", "t.txt"]


def test_a_store_of_the_bound_on_contexts_holds_only_the_contexts_it_stores(tmp_path):
    """Each new word reserved `max_contexts` slots at once: 100,000,000 grew to 23.6 GB on 40 lines and was killed
    by the kernel, 3,000,000,000 raised a raw MemoryError and a larger value a raw OverflowError. The slots are
    taken as they fill now, and a count beyond the bound is E052 before any text is read."""
    import tracemalloc

    lines = [f"The quokka number {i} lives on Rottnest Island with word{i} and friend{i % 7} today." for i in range(40)]
    for huge in (3_000_000_000, 99_999_999_999_999_999_999):
        with pytest.raises(ValueError, match=r"\[E052\] max_contexts \(--max-contexts\) must be a whole number from 1"):
            add_texts(tmp_path / "huge.sqlite", lines, max_contexts=huge, progress=False)
    assert not (tmp_path / "huge.sqlite").exists()
    tracemalloc.start()
    try:
        add_texts(tmp_path / "s.sqlite", lines, max_contexts=10_000, progress=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, peak  # 0.7 MB; 97 words x 10,000 reserved slots x 8 bytes were 7.8 MB
    check_consistent(tmp_path / "s.sqlite", 10_000)
    assert counts_of(tmp_path / "s.sqlite")["quokka"] == 40
