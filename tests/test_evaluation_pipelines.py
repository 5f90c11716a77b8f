"""evaluation/pipelines.py: the assembled pipeline loads and injects."""
from __future__ import annotations

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
