"""bertram_experiments/pipelines.py: the assembled pipeline loads and injects."""

from __future__ import annotations

import spacy


def test_assembled_pipeline_loads_and_injects(trained, bertram_assets, tmp_path):
    from bertram_experiments.pipelines import assemble_pipeline

    out = assemble_pipeline(trained["model"], bertram_assets["model"], tmp_path / "asm")
    nlp = spacy.load(out / "pipeline")
    assert nlp.pipe_names == ["bertram", "transformer", "textcat"]
    assert nlp.config["components"]["transformer"]["model"]["injection"] == "recentre"  # the architecture's default
    assert nlp.config["components"]["bertram"]["contexts"] == "none"  # the component's: the spelling alone
    assert "spacy-bertram>=0.1.0" in nlp.meta["requirements"]
    doc = nlp("the farmer sold a kumquat")
    assert set(doc.cats) == {"animal", "food"}
    assert "import spacy_bertram.pipeline.component" in (out / "code.py").read_text()


def test_assemble_refuses_a_directory_not_its_own_and_keeps_what_it_did_not_write(trained, bertram_assets, tmp_path):
    from tests.util import invoke

    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    result = invoke("assemble", trained["model"], bertram_assets["model"], out)
    assert result.exit_code == 1 and "holds nothing assemble wrote (notes.txt, sub)" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "sub"]  # untouched
    assert invoke("assemble", trained["model"], bertram_assets["model"], out, "--force").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == ["code.py", "notes.txt", "pipeline", "sub"]  # the user's kept
    again = invoke("assemble", trained["model"], bertram_assets["model"], out)  # its own output: replaced
    assert again.exit_code == 0, again.output
    assert (out / "notes.txt").read_text() == "mine" and (out / "sub").is_dir()


def test_assemble_max_zipf_sets_the_components_rule(trained, bertram_assets, tmp_path):
    from tests.util import invoke
    from bertram_experiments.pipelines import assemble_pipeline

    bad = invoke("assemble", trained["model"], bertram_assets["model"], tmp_path / "bad", "--max-zipf", "-5")
    assert bad.exit_code == 1 and "--max-zipf must be a Zipf value above 0" in bad.output
    assert not (tmp_path / "bad").exists()
    rules = {}
    for zipf in (2.0, 3.5):
        out = assemble_pipeline(trained["model"], bertram_assets["model"], tmp_path / f"z{zipf}", max_zipf=zipf)
        rules[zipf] = spacy.load(out / "pipeline").get_pipe("bertram").word_sources.rule
    assert rules[2.0].max_zipf == 2.0 and rules[3.5].max_zipf == 3.5
    assert rules[2.0].frequencies == "auto" and rules[2.0].min_wordpieces == 2  # the component's own rule
    pipeline = spacy.load(tmp_path / "z3.5" / "pipeline")
    doc = pipeline("the kumquat was good")  # Zipf 1.86, three wordpieces of the tiny encoder: rare
    assert [doc[i].text for i in doc._.bertram] == ["kumquat"]


def test_the_assembled_pipeline_needs_no_model_directory(trained, bertram_assets, tmp_path, monkeypatch):
    """`assemble BASELINE "mödel dir" out` run where the model lies: the pipeline carries the model, so it
    runs the same once the directory is gone, from any working directory."""
    import shutil

    from tests.util import invoke, same_vectors

    shutil.copytree(bertram_assets["model"], tmp_path / "mödel dir")
    monkeypatch.chdir(tmp_path)
    result = invoke("assemble", trained["model"], "mödel dir", "out")
    assert result.exit_code == 0, result.output
    texts = ["the farmer sold a kumquat", "a kumquat is a small fruit"]
    expected = list(spacy.load("out/pipeline").pipe(texts))
    assert all(doc._.bertram for doc in expected)
    shutil.rmtree(tmp_path / "mödel dir")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    docs = list(spacy.load(tmp_path / "out" / "pipeline").pipe(texts))
    assert all(same_vectors(a, b) and a.cats == b.cats for a, b in zip(docs, expected))
