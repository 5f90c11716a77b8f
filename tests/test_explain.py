"""spacy_bertram/explain.py and `rare-words`: the component's decisions, token by token."""
from __future__ import annotations

import pytest

from tests.util import invoke


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
    assert pipe.rule.max_zipf == 3.0
    with pytest.raises(ValueError, match=r"\[E369\].*rare_words\] max_zipf"):
        rule_pipeline(tmp_path / "p", max_zipf=2.0)


def test_a_model_without_digests_is_warned_about_once_per_run(bertram_assets, tmp_path):
    """`rare-words` reads the model's settings, then the component loads it: one W005, not one per read."""
    import shutil
    import warnings

    from spacy_bertram.storage import DIGESTS_FILE

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
