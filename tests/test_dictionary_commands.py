"""`python -m spacy_bertram dictionary`: a store from the command line, one-line errors."""
from __future__ import annotations

import json

from tests.util import invoke

from spacy_bertram.dictionary.store import DefinitionStore


def test_the_command_writes_a_gcide_store(tmp_path, tiny_gcide):
    result = invoke("dictionary", tmp_path / "defs.sqlite", "--sources", "gcide", "--gcide", tiny_gcide,
                    "--no-gcide-wordnet-senses")
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output[result.output.index("{"):])
    assert stats["headwords"] == 2 and stats["gcide_wordnet_derived"] is False
    with DefinitionStore.open(tmp_path / "defs.sqlite") as store:
        assert store.contexts("goose", limit=8) == ["goose: (Zool.) Any large web-footed bird of the subfamily "
                                                    "Anserinae."]


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
