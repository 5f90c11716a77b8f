"""The `bertram` component with a vector table: lookups, skipping, model checks, round trips."""

from __future__ import annotations

import json
from typing import List

import pytest
import spacy
from spacy.lang.en import English

import spacy_bertram.pipeline.component as component_module
from spacy_bertram.model.layers import infer_vectors

from tests.util import TEXT, make_bertram_dir, make_nlp, make_table, same_vectors

TEXTS = [TEXT, "A zorbing quokka.", "", "the cat"]


def count_inferred(pipe, monkeypatch) -> List[List[str]]:
    calls: List[List[str]] = []
    monkeypatch.setattr(
        component_module,
        "infer_vectors",
        lambda model, items: calls.append([w for w, _ in items]) or infer_vectors(model, items),
    )
    return calls


def test_words_in_the_table_get_their_row_without_inference(bertram_dir, tiny_bert_path, tmp_path, monkeypatch):
    make_table(bertram_dir, ["kumquat", "quokka"], tmp_path / "table")
    nlp = make_nlp(bertram_dir, tiny_bert_path, vector_table=str(tmp_path / "table"))
    pipe = nlp.get_pipe("bertram")
    inferred = count_inferred(pipe, monkeypatch)
    docs = list(nlp.pipe(TEXTS))
    assert sorted(docs[0]._.bertram) == [1, 11] and all((docs[0]._.bertram[i] == 1.0).all() for i in (1, 11))
    assert sorted(docs[1]._.bertram) == [1, 2] and (docs[1]._.bertram[2] == 2.0).all()
    assert inferred == [["zorbing"]]  # only the word the table lacks
    assert not (docs[1]._.bertram[1] == 1.0).all() and docs[2]._.bertram == {}
    skip = make_nlp(bertram_dir, tiny_bert_path, vector_table=str(tmp_path / "table"), infer_missing=False)
    inferred = count_inferred(skip.get_pipe("bertram"), monkeypatch)
    doc = skip("A zorbing quokka.")
    assert sorted(doc._.bertram) == [2] and inferred == []  # zorbing keeps its stock encoding


def test_table_given_at_initialize_and_refused_for_another_model(bertram_dir, tiny_bert_path, tmp_path):
    make_table(bertram_dir, ["kumquat"], tmp_path / "table")
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    nlp.get_pipe("bertram").initialize(lambda: [], nlp=nlp, vector_table=str(tmp_path / "table"))
    assert (nlp(TEXT)._.bertram[1] == 1.0).all()
    other = make_bertram_dir(tmp_path / "other", tiny_bert_path, seed=1)
    make_table(other, ["kumquat"], tmp_path / "other-table")
    with pytest.raises(ValueError, match=r"\[E130\].*another BERTRAM model"):
        make_nlp(bertram_dir, tiny_bert_path, vector_table=str(tmp_path / "other-table"))
    with pytest.raises(ValueError, match=r"\[E132\] No vector table"):
        make_nlp(bertram_dir, tiny_bert_path, vector_table=str(tmp_path / "nowhere"))


def test_a_subword_share_other_than_the_tables_says_so(bertram_dir, tiny_bert_path, tmp_path):
    """The table's rows are the model's own mix: a component mixing otherwise warns (W018), not at the model's."""
    import warnings

    make_table(bertram_dir, ["kumquat"], tmp_path / "table")
    nlp = make_nlp(bertram_dir, tiny_bert_path, vector_table=str(tmp_path / "table"))
    pipe = nlp.get_pipe("bertram")
    with pytest.warns(UserWarning, match=r"\[W018\] 'bertram' mixes .* at subword_share 0.8, .* model's own 0.15"):
        pipe.subword_share = 0.8  # checked when set, not at each doc
    nlp(TEXT)
    pipe.subword_share = 0.15  # the model's own share: nothing to say
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nlp(TEXT)
    assert not [w for w in caught if "W018" in str(w.message)]  # the share is part of what the check is kept for


def test_encoder_of_the_table_must_match(bertram_dir, tiny_bert_path, tmp_path):
    table = make_table(bertram_dir, ["kumquat"], tmp_path / "table")
    table.meta["encoder"] = {**table.meta["encoder"], "embedding_digest": "f" * 32}
    table.to_disk(tmp_path / "table")
    with pytest.raises(ValueError, match=r"\[E131\].*another encoder"):
        make_nlp(bertram_dir, tiny_bert_path, vector_table=str(tmp_path / "table"))


def test_table_round_trips_with_the_pipeline(bertram_dir, tiny_bert_path, tmp_path):
    make_table(bertram_dir, ["kumquat", "quokka"], tmp_path / "table")
    nlp = make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path, vector_table=str(tmp_path / "table"))
    docs = list(nlp.pipe(TEXTS))
    nlp.to_disk(tmp_path / "pipeline")
    # One part of the component's save (serialization.py): listed in cfg with its digest.
    assert (tmp_path / "pipeline" / "bertram" / "vector_table").is_file()
    assert "vector_table" in json.loads((tmp_path / "pipeline" / "bertram" / "cfg").read_text())["parts"]
    # Neither the table's nor the model's original directory is needed any more.
    moved = {"components.bertram.vector_table": "/nowhere", "components.bertram.model.model_path": "/nowhere"}
    loaded = spacy.load(tmp_path / "pipeline", config=moved)
    from_bytes = English.from_config(nlp.config).from_bytes(nlp.to_bytes())
    for other in (loaded, from_bytes):
        pipe = other.get_pipe("bertram")
        pipe.cache.clear()
        assert pipe.vectors is not None and pipe.vectors.words == ["kumquat", "quokka"]
        assert all(same_vectors(a, b) for a, b in zip(docs, other.pipe(TEXTS)))


def test_a_table_is_written_only_over_a_tables_files(bertram_dir, tmp_path):
    """to_disk into a directory holding the user's table.json (or vectors.safetensors) refuses, naming the file,
    unless overwrite=True; a table's own files are replaced, and a user's file beside them or in shards/ stays."""
    from spacy_bertram import VectorTable

    table = make_table(bertram_dir, ["kumquat", "quokka"], tmp_path / "table")
    out = tmp_path / "mine"
    out.mkdir()
    (out / "table.json").write_text('{"my": "table"}', encoding="utf8")
    with pytest.raises(
        ValueError,
        match=r"\[E007\] VectorTable.to_disk: .*mine' holds table.json \(not marked as written by VectorTable.to_disk"
        r"\).* pass overwrite=True",
    ):
        table.to_disk(out)
    assert [p.name for p in out.iterdir()] == ["table.json"] and json.loads((out / "table.json").read_text()) == {
        "my": "table"
    }
    table.to_disk(out, overwrite=True)
    (out / "shards").mkdir()
    (out / "shards" / "plan.json").write_text("{}", encoding="utf8")  # an unfinished run's: the table's
    (out / "shards" / "notes.txt").write_text("mine", encoding="utf8")
    (out / "notes.txt").write_text("mine", encoding="utf8")
    table.to_disk(out)  # its own files: replaced
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == [
        "notes.txt",
        "shards",
        "shards/notes.txt",
        "table.json",
        "vectors.safetensors",
    ]
    assert VectorTable.from_disk(out).words == ["kumquat", "quokka"]
