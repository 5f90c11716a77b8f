"""`python -m spacy_bertram dictionary`: a store from the command line, one-line errors."""

from __future__ import annotations

import json

import pytest

from tests.util import invoke

from spacy_bertram.dictionary.store import DefinitionStore


def test_the_command_writes_a_gcide_store(tmp_path, tiny_gcide):
    result = invoke(
        "dictionary", tmp_path / "defs.sqlite", "--sources", "gcide", "--gcide", tiny_gcide, "--no-gcide-wordnet-senses"
    )
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output[result.output.index("{") :])
    assert stats["headwords"] == 2 and stats["gcide_wordnet_derived"] is False
    with DefinitionStore.open(tmp_path / "defs.sqlite") as store:
        assert store.contexts("goose", limit=8) == [
            "goose: (Zool.) Any large web-footed bird of the subfamily Anserinae."
        ]


def test_a_corrupt_dictionary_ends_with_a_one_line_error(tmp_path, tiny_gcide):
    index = tmp_path / "gcide.index"
    index.write_text(tiny_gcide.read_text())
    (tmp_path / "gcide.dict.dz").write_bytes(b"garbage" * 10)
    result = invoke("dictionary", tmp_path / "out", "--sources", "gcide", "--gcide", index)
    assert result.exit_code == 1
    assert "gcide.dict.dz is not a readable dictd file" in result.output and "Reinstall" in result.output


def test_an_unknown_source_is_named(tmp_path):
    result = invoke("dictionary", tmp_path / "out", "--sources", "oed")
    assert result.exit_code == 1 and "'oed'" in result.output


def test_the_command_replaces_only_a_store_it_wrote(tmp_path, tiny_gcide):
    """An existing OUTPUT is replaced only where its meta table says it is a definition store (or --force):
    not a user's text file, not a context store from `prepare` (an SQLite file of another format)."""
    from spacy_bertram.training.prepare import prepare

    (tmp_path / "corpus.txt").write_text("the goose ate the grass\n" * 3, encoding="utf8")
    prepare([tmp_path / "corpus.txt"], tmp_path / "prepared", min_count=1, progress=False)
    notes = tmp_path / "notes.sqlite"
    notes.write_text("my notes", encoding="utf8")
    contexts = tmp_path / "prepared" / "contexts.sqlite"
    before = contexts.read_bytes()
    gcide = ["--sources", "gcide", "--gcide", tiny_gcide, "--no-gcide-wordnet-senses"]
    for path, found in (
        (notes, "carries no mark"),
        (contexts, "is marked 'spacy-bertram-contexts', not 'spacy-bertram-definitions'"),
    ):
        result = invoke("dictionary", path, *gcide)
        assert result.exit_code == 1 and "[E071] dictionary: " in result.output, result.output
        assert found in " ".join(result.output.split()) and "--force" in result.output
    assert notes.read_text(encoding="utf8") == "my notes" and contexts.read_bytes() == before
    assert invoke("dictionary", tmp_path / "defs.sqlite", *gcide).exit_code == 0
    result = invoke("dictionary", tmp_path / "defs.sqlite", *gcide)  # its own store: built again
    assert result.exit_code == 0, result.output
    assert invoke("dictionary", notes, *gcide, "--force").exit_code == 0
    with DefinitionStore.open(notes) as store:
        assert "goose" in store


def test_an_unwritable_output_is_refused_before_the_dictionaries_are_read(unwritable_dir, tmp_path):
    """The output check comes first: the GCIDE path is not even looked at (it does not exist here)."""
    result = invoke("dictionary", unwritable_dir / "defs.sqlite", "--gcide", tmp_path / "no" / "gcide.index")
    assert result.exit_code == 1
    assert f"[E070] dictionary: cannot write '{unwritable_dir / 'defs.sqlite'}'" in " ".join(result.output.split())
    assert list(unwritable_dir.iterdir()) == []


def test_the_wordnet_source_without_nltk_names_the_command_and_the_extra_before_any_work(
    tmp_path, tiny_gcide, monkeypatch
):
    """Without NLTK, `dictionary --sources wordnet` said "Rarification needs NLTK" (another command, and not the
    [dictionary] extra), after GCIDE was read. Now it names this command and the extra, before GCIDE is read;
    GCIDE alone still builds (without WordNet's irregular forms, W013)."""
    import sys

    import spacy_bertram.dictionary.build as build

    monkeypatch.setitem(sys.modules, "nltk", None)  # as if not installed: find_spec answers None, an import fails
    read = []
    real_entries = build.gcide_entries
    monkeypatch.setattr(build, "gcide_entries", lambda *args: read.append(args) or real_entries(*args))
    for sources in ("wordnet", "gcide,wordnet"):
        result = invoke("dictionary", tmp_path / "defs.sqlite", "--sources", sources, "--gcide", tiny_gcide)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        said = " ".join(result.output.split())
        assert "[E389] dictionary --sources wordnet needs NLTK" in said, said
        assert "pip install 'spacy-bertram[dictionary]'" in said and "Rarification" not in said
        assert read == [] and list(tmp_path.iterdir()) == []  # refused before GCIDE was read; nothing written
    with pytest.warns(UserWarning, match=r"\[W013\].*NLTK.*spacy-bertram\[dictionary\]"):
        result = invoke("dictionary", tmp_path / "defs.sqlite", "--sources", "gcide", "--gcide", tiny_gcide)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output[result.output.index("{") :])["headwords"] == 2
