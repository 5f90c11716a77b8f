"""spacy_bertram/explain.py and `rare-words`: the component's decisions, token by token."""

from __future__ import annotations

import pytest

from spacy_bertram.cli import app

from tests.util import invoke, runner


def test_rule_pipeline_explains_each_token(bertram_assets):
    from spacy_bertram.explain import explain_texts, format_decisions, rule_pipeline

    nlp, pipe = rule_pipeline(bertram_assets["model"])
    (decisions,) = explain_texts(nlp, pipe, ["The kumquat won't grow, 42 times."])
    by_text = {d.text: d for d in decisions}
    assert by_text["kumquat"].rare and by_text["kumquat"].wordpieces == 3
    assert by_text["wo"].reason == "a piece of a word the tokenizer split"
    assert by_text["The"].reason.startswith("frequent: Zipf")
    table = format_decisions([decisions])
    assert "kumquat" in table and "yes" in table and "42" not in table  # no word: left out
    assert "42" in format_decisions([decisions], every_token=True)
    nlp, pipe = rule_pipeline(bertram_assets["model"], max_zipf=1.5)
    assert not explain_texts(nlp, pipe, ["kumquat"])[0][0].rare  # Zipf 1.86 >= 1.5


def test_rare_words_command(bertram_assets, tmp_path):
    result = invoke("rare-words", str(bertram_assets["model"]), "a kumquat harvest")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "kumquat" in line)
    assert "yes" in line and "3 wordpieces" in line
    result = invoke("rare-words", str(tmp_path / "nowhere"), "text")
    assert result.exit_code == 1 and "error:" in result.output


def test_a_pipeline_rule_is_not_overridden_silently(bertram_assets, tmp_path):
    import spacy

    from spacy_bertram.explain import rule_pipeline

    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"model_path": str(bertram_assets["model"])}})
    nlp.to_disk(tmp_path / "p")
    loaded, pipe = rule_pipeline(tmp_path / "p")
    assert pipe.word_sources.rule.max_zipf == 3.0
    with pytest.raises(ValueError, match=r"\[E369\].*rare_words\] max_zipf"):
        rule_pipeline(tmp_path / "p", max_zipf=2.0)


def test_a_model_without_digests_is_warned_about_once_per_run(bertram_assets, tmp_path):
    """`rare-words` reads the model's settings, then the component loads it: one W005, not one per read."""
    import shutil
    import warnings

    from spacy_bertram.model.storage import DIGESTS_FILE

    old = tmp_path / "old-model"
    shutil.copytree(bertram_assets["model"], old)
    (old / DIGESTS_FILE).unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every warning recorded, repeats included
        result = invoke("rare-words", str(old), "a kumquat harvest")
        again = invoke("rare-words", str(old), "a quokka")
    assert result.exit_code == 0 and again.exit_code == 0, result.output
    assert [str(w.message).count("[W005]") for w in caught if "[W005]" in str(w.message)] == [1]
    assert "kumquat" in result.output


def test_rare_words_takes_what_spacy_load_takes(bertram_assets, tmp_path, monkeypatch):
    """MODEL: a saved pipeline directory, an installed pipeline package (`spacy package`, pip-installed: here laid
    out on sys.path as pip lays it out), or a BERTRAM model directory; anything else names all three."""
    import importlib
    import json
    import sys

    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("bertram", config={"model": {"model_path": str(bertram_assets["model"])}})
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    site = tmp_path / "site"
    package = site / "en_tc_bertram"
    nlp.meta.update({"name": "tc_bertram", "version": "1.0.0"})
    package.mkdir(parents=True)
    nlp.to_disk(package / "en_tc_bertram-1.0.0")
    (package / "meta.json").write_text(json.dumps(nlp.meta), encoding="utf8")
    (package / "__init__.py").write_text(
        "from spacy.util import load_model_from_init_py\n\n\ndef load(**overrides):\n"
        "    return load_model_from_init_py(__file__, **overrides)\n"
    )
    (site / "en_tc_bertram-1.0.0.dist-info").mkdir()
    (site / "en_tc_bertram-1.0.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: en_tc_bertram\nVersion: 1.0.0\n", encoding="utf8"
    )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.delitem(sys.modules, "en_tc_bertram", raising=False)
    monkeypatch.chdir(tmp_path)  # "en_tc_bertram" is no path here
    for model in (tmp_path / "pipeline", "en_tc_bertram", bertram_assets["model"]):
        result = invoke("rare-words", model, "the kumquat")
        assert result.exit_code == 0, (model, result.output)
        assert "yes" in next(line for line in result.output.splitlines() if "kumquat" in line), model
    for model, why in [
        ("en_no_such_pipeline", "is no directory and no installed pipeline package"),
        ("spacy", "is no directory and no installed pipeline package"),  # a package, no pipeline
        (tmp_path, "holds neither a pipeline (config.cfg) nor a BERTRAM model"),
    ]:
        result = invoke("rare-words", model, "the kumquat")
        assert result.exit_code == 1 and f"[E601] MODEL '{model}' {why}" in result.output, result.output
        assert all(
            form in result.output
            for form in ("installed pipeline package", "saved pipeline directory", "BERTRAM model directory")
        ), result.output


def test_rare_words_refuses_text_that_is_not_utf8_by_name(bertram_assets, tmp_path):
    """A non-UTF-8 argument reaches Python as surrogates ('caf\\udce9'), which failed, uncoded, in the
    tokenizer; a legacy-encoded file or stdin failed in the decoder."""
    model = bertram_assets["model"]
    result = invoke("rare-words", model, "a kumquat", "caf\udce9")
    assert result.exit_code == 1, result.output
    assert (
        "[E602] text 2 of the command line is not UTF-8 text: byte 0xe9 at position 4" in result.output
        and "iconv -f latin1 -t utf-8" in result.output
        and "Traceback" not in result.output
    ), result.output
    (tmp_path / "latin1.txt").write_bytes("a kumquat\ncaf\u00e9\n".encode("latin-1"))
    result = invoke("rare-words", model, "--file", tmp_path / "latin1.txt")
    assert result.exit_code == 1 and "[E602] --file '" in result.output and "0xe9 at line 2" in result.output
    result = runner.invoke(app, ["rare-words", str(model), "-"], input="caf\u00e9".encode("latin-1"))
    assert result.exit_code == 1 and "[E602] stdin is not UTF-8 text: byte 0xe9 at line 1" in result.output


def test_rare_words_reads_texts_from_a_file_and_stdin(bertram_assets, tmp_path):
    model = bertram_assets["model"]
    (tmp_path / "texts.txt").write_text("a kumquat harvest\n\nthe farmer sold a café\n", encoding="utf8")
    result = invoke("rare-words", model, "the market", "--file", tmp_path / "texts.txt")
    assert result.exit_code == 0, result.output
    tables = result.output.split("text ")[1:]
    assert [table.split("\n")[0] for table in tables] == ["1", "2", "3"]  # the argument, then the lines (blank: none)
    assert "market" in tables[0] and "kumquat" in tables[1] and "café" in tables[2]
    result = runner.invoke(app, ["rare-words", str(model), "-"], input="a kumquat\nthe farmer\n")
    assert result.exit_code == 0, result.output
    assert "text 2" in result.output and "kumquat" in result.output.split("text 2")[0]
    for argv, message in [
        ([], "[E603] rare-words has no text to inspect"),
        (["--file", tmp_path / "missing.txt"], "[E604] --file '"),
        (["--file", tmp_path], "[E604] --file '"),
    ]:
        result = invoke("rare-words", model, *argv)
        assert result.exit_code == 1 and message in result.output, (argv, result.output)
