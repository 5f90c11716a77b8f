"""evaluation/pipelines.py: the assembled pipeline loads and injects."""
from __future__ import annotations

import pytest
import spacy



def test_assembled_pipeline_loads_and_injects(trained, bertram_assets, tmp_path):
    from spacy_bertram.evaluation.pipelines import assemble_pipeline

    out = assemble_pipeline(trained["model"], bertram_assets["model"], tmp_path / "asm")
    nlp = spacy.load(out / "pipeline")
    assert nlp.pipe_names == ["bertram", "transformer", "textcat"]
    assert nlp.config["components"]["transformer"]["model"]["injection"] == "slash"
    assert "spacy-bertram>=0.1.0" in nlp.meta["requirements"]
    doc = nlp("the farmer sold a kumquat")
    assert set(doc.cats) == {"animal", "food"}
    assert "import spacy_bertram.pipeline.component" in (out / "code.py").read_text()


def test_assemble_refuses_a_directory_it_did_not_write(trained, bertram_assets, tmp_path):
    from conftest import invoke

    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    result = invoke("assemble", trained["model"], bertram_assets["model"], out)
    assert result.exit_code == 1 and "holds nothing assemble wrote (notes.txt, sub)" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "sub"]  # untouched
    assert invoke("assemble", trained["model"], bertram_assets["model"], out, "--force").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["code.py", "pipeline"]
    again = invoke("assemble", trained["model"], bertram_assets["model"], out)  # its own output: replaced
    assert again.exit_code == 0, again.output


def test_assemble_threshold_counts_in_the_models_training_corpus(trained, bertram_assets, tmp_path):
    import shutil

    from conftest import invoke
    from spacy_bertram.evaluation.pipelines import assemble_pipeline, rare_zipf
    from spacy_bertram.rare_words import write_counts

    bad = invoke("assemble", trained["model"], bertram_assets["model"], tmp_path / "bad", "--threshold", "-5")
    assert bad.exit_code == 1 and "--threshold must be a positive number" in bad.output
    assert not (tmp_path / "bad").exists()
    with pytest.raises(ValueError, match="ships no counts.tsv"):
        assemble_pipeline(trained["model"], bertram_assets["model"], tmp_path / "none", threshold=100)
    model = tmp_path / "model"
    shutil.copytree(bertram_assets["model"], model)
    write_counts(model / "counts.tsv", {"the": 900, "farmer": 60, "kumquat": 40})
    rules = {}
    for threshold in (50, 100):
        out = assemble_pipeline(trained["model"], model, tmp_path / f"t{threshold}", threshold=threshold)
        rules[threshold] = spacy.load(out / "pipeline").get_pipe("bertram").rule
    assert rules[100].frequencies == "model" and rules[100].max_zipf == rare_zipf(100, 1000)
    assert rules[50].max_zipf < rules[100].max_zipf  # the option changes which words are rare
    default = spacy.load(assemble_pipeline(trained["model"], model, tmp_path / "d") / "pipeline")
    assert (default.get_pipe("bertram").rule.frequencies, default.get_pipe("bertram").rule.max_zipf) == ("wordfreq", 3.0)
