"""dictionary/wordnet.py: the missing-WordNet message and the prepared layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from bertram_experiments.rarification.substitution import SubstitutionDictionary
from spacy_bertram.dictionary.wordnet import (
    LEXNAMES,
    REQUIRED_FILES,
    WordNetMissingError,
    find_wordnet_source,
    prepare_wordnet,
)


# ---------------------------------------------------------------- WordNet layout


def test_wordnet_missing_message(tmp_path: Path, monkeypatch):
    with pytest.raises(WordNetMissingError, match=r"(?s)\[E388\].*apt-get install -y wordnet-base"):
        find_wordnet_source(tmp_path / "nowhere")
    with pytest.raises(WordNetMissingError, match=r"(?s)\[E388\].*wordnet_dir"):
        SubstitutionDictionary(wordnet_dir=tmp_path / "nowhere")
    monkeypatch.setattr("spacy_bertram.dictionary.wordnet.DEBIAN_WORDNET_DIRS", (str(tmp_path / "no"),))
    monkeypatch.delenv("SPACY_BERTRAM_WORDNET_DIR", raising=False)
    with pytest.raises(WordNetMissingError, match=r"\[E388\]"):
        prepare_wordnet(cache_dir=tmp_path / "empty-cache")


def test_prepare_wordnet_copies_files_and_writes_lexnames(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    real = tmp_path / "real.txt"
    real.write_text("x\n")
    for name in REQUIRED_FILES:
        (src / name).symlink_to(real)  # linked files must become copies
    (src / "index.sense").write_text("")  # present: nothing to generate
    root = prepare_wordnet(src, tmp_path / "cache")
    target = root / "corpora" / "wordnet"
    for name in REQUIRED_FILES:
        assert (target / name).is_file() and not (target / name).is_symlink()
    lines = (target / "lexnames").read_text().splitlines()
    assert len(lines) == len(LEXNAMES) == 45
    assert lines[0] == "00\tadj.all\t3" and lines[44] == "44\tadj.ppl\t3"
    assert prepare_wordnet(src, tmp_path / "cache") == root  # reused
    assert [p.name for p in (root / "corpora").iterdir()] == ["wordnet"]


def test_an_incomplete_cache_is_replaced_and_a_users_file_in_it_survives(tmp_path: Path):
    src = tmp_path / "src"
    src.mkdir()
    for name in REQUIRED_FILES:
        (src / name).write_text(f"{name}\n")
    (src / "index.sense").write_text("")
    target = tmp_path / "cache" / "corpora" / "wordnet"
    target.mkdir(parents=True)
    (target / REQUIRED_FILES[0]).write_text("half a copy")  # an older, incomplete copy
    (target / "notes.txt").write_text("mine")
    prepare_wordnet(src, tmp_path / "cache")
    assert (target / REQUIRED_FILES[0]).read_text() == f"{REQUIRED_FILES[0]}\n"
    assert all((target / name).is_file() for name in REQUIRED_FILES)
    assert (target / "notes.txt").read_text() == "mine"
    assert [p.name for p in (tmp_path / "cache" / "corpora").iterdir()] == ["wordnet"]
