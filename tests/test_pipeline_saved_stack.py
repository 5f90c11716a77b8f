"""A save records its stack; a pipeline saved with spacy-transformers 2 is refused on 1.x with the versions named."""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest
import spacy

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram.pipeline import saved_stack
from spacy_bertram.pipeline.saved_stack import STACK_KEYS, check_saved_stack
from tests.util import TEXT, make_nlp, same_vectors


def stack_here(spacy_transformers: str, transformers: str):
    """installed_version as it would read on that stack."""
    return lambda package: transformers if package == "transformers" else spacy_transformers


def test_a_save_records_the_installed_stack(bertram_dir, tiny_bert_path, tmp_path):
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    nlp.to_disk(tmp_path / "p")
    cfg = json.loads((tmp_path / "p" / "bertram" / "cfg").read_text(encoding="utf8"))
    assert cfg[STACK_KEYS["spacy-transformers"]] == version("spacy-transformers")
    assert cfg[STACK_KEYS["transformers"]] == version("transformers")


@pytest.mark.parametrize(
    "saved,here,refused",
    [("2.0.0", "1.4.0", True), ("2.1.3", "1.9", True), ("1.4.0", "2.0.0", False), ("2.0.0", "2.0.0", False)],
)
def test_only_a_newer_safetensors_save_on_an_older_reader_is_refused(monkeypatch, saved, here, refused):
    monkeypatch.setattr(
        saved_stack, "installed_version", lambda package: here if package != "transformers" else "4.53.2"
    )
    cfg = {STACK_KEYS["spacy-transformers"]: saved, STACK_KEYS["transformers"]: "5.24.0"}
    if refused:
        with pytest.raises(
            ValueError,
            match=rf"\[E192\] The pipeline .*spacy-transformers {saved} \(transformers "
            rf"5\.24\.0\).*spacy-transformers {here} \(transformers 4\.53\.2\).*>=2\.0",
        ):
            check_saved_stack(cfg, "The pipeline 'p'")
    else:
        check_saved_stack(cfg, "The pipeline 'p'")
    check_saved_stack({}, "a save from before the versions were recorded")  # nothing to compare: it loads
    check_saved_stack({STACK_KEYS["spacy-transformers"]: "unknown"}, "an unreadable version: it loads")


def test_spacy_load_refuses_a_pipeline_saved_on_spacy_transformers_2_here_on_1(
    bertram_dir, tiny_bert_path, tmp_path, monkeypatch
):
    """The refusal comes from the bertram component, which loads before the transformer, before the
    transformer's reader meets weights it cannot read; the same pipeline loads where the reader is new enough."""
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    doc = nlp(TEXT)
    nlp.to_disk(tmp_path / "p")
    cfg_path = tmp_path / "p" / "bertram" / "cfg"
    cfg = json.loads(cfg_path.read_text(encoding="utf8"))
    cfg[STACK_KEYS["spacy-transformers"]] = "2.0.0"
    cfg_path.write_text(json.dumps(cfg), encoding="utf8")
    monkeypatch.setattr(
        saved_stack, "installed_version", lambda package: "1.4.0" if package != "transformers" else "4.53.2"
    )
    with pytest.raises(ValueError, match=r"\[E192\] The pipeline at .*spacy-transformers 2\.0\.0"):
        spacy.load(tmp_path / "p")
    monkeypatch.setattr(
        saved_stack, "installed_version", lambda package: "2.0.0" if package != "transformers" else "5.24.0"
    )
    assert same_vectors(spacy.load(tmp_path / "p")(TEXT), doc)
