"""`prepare`: corpus -> counts.tsv + contexts.sqlite + prepare.json, all or nothing."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import spacy_bertram.training.store_builder as contexts_mod
from spacy_bertram.cli import app
from spacy_bertram.context_store import ContextStore
from spacy_bertram.training.prepare import prepare


LINES = [
    "The farmer grows kumquats in the garden.",
    "A kumquat is a small fruit; the farmer sells the fruit at the market.",
    "The dog sleeps in the garden.",
]


@pytest.fixture
def corpus_dir(tmp_path):
    directory = tmp_path / "corpus"
    (directory / "sub").mkdir(parents=True)
    (directory / "a.txt").write_text("\n".join(LINES[:2]) + "\n", encoding="utf8")
    (directory / "sub" / "b.txt").write_text(LINES[2] + "\n\n", encoding="utf8")
    return directory


def test_prepare_writes_counts_store_and_info(corpus_dir, tmp_path):
    out = tmp_path / "out"
    result = prepare(corpus_dir, out, min_count=2, max_contexts=2, rare_max_contexts=1, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["contexts.sqlite", "counts.tsv", "prepare.json"]
    counts = dict(line.split("\t") for line in (out / "counts.tsv").read_text(encoding="utf8").splitlines())
    assert counts["the"] == "7" and counts["farmer"] == "2" and counts["kumquats"] == "1"
    assert list(counts)[:6] == ["the", "a", "farmer", "fruit", "garden", "in"]  # count desc, then word
    assert sum(map(int, counts.values())) == result.total_words == 7 + 14 + 6
    store = ContextStore.open(result.store)
    assert store.total_words == result.total_words
    assert store.count("The") == 7 and store.count("garden") == 2
    assert len(store.contexts("the")) == 2  # max_contexts
    assert len(store.contexts("garden")) == 2
    assert store.contexts("kumquats") == [LINES[0].rstrip(".")]  # rare word, rare cap 1
    assert store.meta["min_count"] == "2" and store.meta["window"] == "25"
    info = json.loads((out / "prepare.json").read_text())
    assert info["training_words"] == result.training_words == 6
    assert info["settings"]["min_count"] == 2 and len(info["corpus"]) == 2


def test_prepare_accepts_a_list_of_files_and_cased(corpus_dir, tmp_path):
    result = prepare([corpus_dir / "a.txt"], tmp_path / "out", min_count=1, lowercase=False, progress=False)
    store = ContextStore.open(result.store)
    assert store.count("The") == 1 and store.count("the") == 4
    assert result.files == 1 and result.lines == 2


def _assert_nothing_written(out):
    assert not out.exists() or list(out.iterdir()) == []


def test_empty_corpus(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "empty.txt").write_text("", encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E214\] Corpus is empty: no words found"):
        prepare(tmp_path / "c", tmp_path / "out", min_count=1, progress=False)
    _assert_nothing_written(tmp_path / "out")


def test_binary_and_non_utf8_files(corpus_dir, tmp_path):
    (corpus_dir / "weights.bin").write_bytes(b"PK\x03\x04\x00\x00binary")
    with pytest.raises(ValueError, match=r"\[E210\].*weights.bin"):
        prepare(corpus_dir, tmp_path / "out", min_count=1, progress=False)
    (corpus_dir / "weights.bin").unlink()
    (corpus_dir / "latin1.txt").write_bytes("na\u00efve caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"\[E211\].*UTF-8.*latin1\.txt"):
        prepare(corpus_dir, tmp_path / "out", min_count=1, progress=False)
    _assert_nothing_written(tmp_path / "out")
    with pytest.warns(UserWarning, match="latin1.txt"):
        result = prepare(corpus_dir, tmp_path / "out", min_count=1, errors="skip", progress=False)
    assert result.files == 2


def test_too_few_training_words(corpus_dir, tmp_path):
    with pytest.raises(ValueError, match=r"\[E227\] Too few training words.*min_count=100"):
        prepare(corpus_dir, tmp_path / "out", min_count=100, progress=False)
    _assert_nothing_written(tmp_path / "out")


def test_failure_while_collecting_leaves_no_output(corpus_dir, tmp_path, monkeypatch):
    out = tmp_path / "out"

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(contexts_mod._Reservoirs, "flush", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        prepare(corpus_dir, out, min_count=1, progress=False)
    _assert_nothing_written(out)


def test_main_cli(corpus_dir, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["prepare", str(corpus_dir), str(out), "--min-count", "2", "--max-contexts", "3"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["total_words"] == 27 and (out / "prepare.json").exists()
    result = CliRunner().invoke(app, ["prepare", str(corpus_dir), str(tmp_path / "o2"), "--min-count", "1000"])
    assert result.exit_code == 1
    assert "Too few training words" in result.stderr


def test_context_words_is_prepares_own_name_for_its_window(corpus_dir, tmp_path):
    """Words kept on each side of an occurrence: not the component's context_window (a doc's tokens)."""
    result = CliRunner().invoke(
        app, ["prepare", str(corpus_dir), str(tmp_path / "out"), "--min-count", "2", "--context-words", "1"]
    )
    assert result.exit_code == 0, result.output
    store = ContextStore.open(tmp_path / "out" / "contexts.sqlite")
    assert store.window == 1 and all(len(text.split()) <= 3 for text in store.contexts("garden"))
    info = json.loads((tmp_path / "out" / "prepare.json").read_text(encoding="utf8"))
    assert info["settings"]["context_words"] == 1 and "context_window" not in info["settings"]
    refused = CliRunner().invoke(app, ["prepare", str(corpus_dir), str(tmp_path / "o2"), "--context-window", "1"])
    assert refused.exit_code == 2 and "No such option: --context-window" in refused.output


def test_exclude_leaves_out_matching_files_and_names_a_pattern_that_matches_none(corpus_dir, tmp_path):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["prepare", str(corpus_dir), str(out), "--min-count", "1", "--exclude", "b.t?t"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["total_words"] == 7 + 14  # a.txt alone: sub/b.txt's dog is left out
    store = ContextStore.open(out / "contexts.sqlite")
    assert store.count("dog") == 0 and store.count("kumquat") == 1
    result = CliRunner().invoke(app, ["prepare", str(corpus_dir), str(tmp_path / "o2"), "--exclude", "wordnet.txt"])
    assert result.exit_code == 1
    expected = f"[E291] --exclude 'wordnet.txt' matches no corpus file in ['{corpus_dir}']"
    assert expected in " ".join(result.stderr.split())  # the corpus argument named, not every file in it
    assert not (tmp_path / "o2").exists()


def test_included_rare_word_gets_its_own_contexts(corpus_dir, tmp_path):
    """Selected word ids need not be contiguous: contexts are stored under the word's own id."""
    result = prepare(
        corpus_dir, tmp_path / "out", min_count=2, rare_max_contexts=0, include_words=["Kumquats"], progress=False
    )
    store = ContextStore.open(result.store)
    assert store.contexts("kumquats") == [LINES[0].rstrip(".")]
    assert store.contexts("at") == [] and store.num_contexts("at") == 0  # ranked between, not selected


def test_prepare_reads_jsonl_and_docbin_files_as_texts_store_does(corpus_dir, tmp_path):
    """A .jsonl corpus file was read as plain text: `text` counted as a word, contexts beginning `text": "A
    quokka`. prepare reads a file's texts as texts-store does (`corpus.file_texts`): the "text" field of each
    line, other fields ignored; a .spacy DocBin's docs; the same store as the texts written one per line."""
    import gzip

    import spacy
    from spacy.tokens import DocBin

    from spacy_bertram.training.text_store import read_texts

    texts = ["A quokka smiled at the camera.", "The quokka is a wallaby of Rottnest."]
    jsonl = "".join(json.dumps({"id": n, "text": text, "label": "pos"}) + "\n" for n, text in enumerate(texts))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf8")
    records = tmp_path / "records"
    records.mkdir()
    (records / "texts.jsonl").write_text(jsonl, encoding="utf8")
    packed = tmp_path / "packed"
    packed.mkdir()
    (packed / "texts.jsonl.gz").write_bytes(gzip.compress(jsonl.encode("utf8")))
    docs = tmp_path / "docs"
    docs.mkdir()
    nlp = spacy.blank("en")
    DocBin(docs=[nlp.make_doc(text) for text in texts]).to_disk(docs / "texts.spacy")
    expected = prepare(plain, tmp_path / "from_txt", min_count=1, progress=False)
    with ContextStore.open(expected.store) as store:
        want = (dict(store.counts()), store.contexts("quokka"))
    assert "text" not in want[0] and want[1] == [text.rstrip(".") for text in texts]  # cut from word to word
    for directory in (records, packed, docs):
        result = prepare(directory, tmp_path / f"from_{directory.name}", min_count=1, progress=False)
        assert result.lines == 2 and result.total_words == expected.total_words
        with ContextStore.open(result.store) as store:
            assert (dict(store.counts()), store.contexts("quokka")) == want, directory.name
        assert list(read_texts(directory)) == texts  # texts-store reads the same texts
    (records / "bad.jsonl").write_text('{"text": "one"}\n{"body": "two"}\n', encoding="utf8")
    with pytest.raises(ValueError, match=r'\[E080\].*bad\.jsonl, line 2.*no "text" field'):
        prepare(records, tmp_path / "out", min_count=1, progress=False)
    _assert_nothing_written(tmp_path / "out")
    with pytest.warns(UserWarning, match=r"bad\.jsonl"):  # --skip-bad-files skips it as a whole, found up front
        assert prepare(records, tmp_path / "out", min_count=1, errors="skip", progress=False).lines == 2


def _outputs(out):
    return {p.name: p.read_bytes() for p in out.iterdir()}


def test_a_rerun_with_other_settings_is_refused_unless_forced(corpus_dir, tmp_path):
    """As train (E277) and vectors (E266) refuse another run's output: the same settings redo the run; others are
    refused before any work, naming what changed, in Python and on the command line, unless --force."""
    out = tmp_path / "out"
    prepare(corpus_dir, out, min_count=2, progress=False)
    before = _outputs(out)
    prepare(corpus_dir, out, min_count=2, progress=False)  # the same run again
    with pytest.raises(
        ValueError,
        match=r"\[E092\] prepare: .*out' holds a finished prepare run with other settings "
        r"\(max_contexts: 64 -> 3; min_count: 2 -> 1, by its prepare.json\).*--force",
    ):
        prepare(corpus_dir, out, min_count=1, max_contexts=3, progress=False)
    result = CliRunner().invoke(app, ["prepare", str(corpus_dir), str(out), "--min-count", "2", "--cased"])
    assert result.exit_code == 1 and "[E092] prepare: " in result.stderr and "lowercase: True -> False" in result.stderr
    assert _outputs(out).keys() == before.keys() and _outputs(out)["counts.tsv"] == before["counts.tsv"]
    result = CliRunner().invoke(app, ["prepare", str(corpus_dir), str(out), "--min-count", "1", "--force"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "prepare.json").read_text())["settings"]["min_count"] == 1
