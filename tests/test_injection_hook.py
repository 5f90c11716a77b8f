"""The embedding hook: one shot, the planned batch or a coded error, nothing left behind by a failed call."""

from __future__ import annotations

import dataclasses
from typing import List, Optional

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from transformers import AutoModel

from spacy_bertram.injection import model as injection_model
from spacy_bertram.injection.batch import InjectionPlan
from spacy_bertram.injection.hook import EmbeddingHook, clear_pending

TEXT = "the farmer sold kumquats at the market"
RARE = 3


def plan_for(ids: numpy.ndarray, rows: List[int], cols: List[int], add: bool = True) -> InjectionPlan:
    """A plan putting ones at (rows, cols) of a batch of these ids."""
    width = 32
    return InjectionPlan(
        input_ids=ids,
        attention_mask=numpy.ones_like(ids),
        token_type_ids=None,
        vector_rows=numpy.asarray(rows, dtype="int64"),
        vector_cols=numpy.asarray(cols, dtype="int64"),
        vectors=numpy.ones((len(rows), width), dtype="float32"),
        src=numpy.tile(numpy.arange(ids.shape[1]), (ids.shape[0], 1)),
        keep=numpy.ones(ids.shape, dtype=bool),
        add=add,
    )


@pytest.fixture(scope="module")
def hf(tiny_encoder_path):
    return AutoModel.from_pretrained(tiny_encoder_path).eval()


def hooks_on(hf) -> int:
    return len(hf.get_input_embeddings()._forward_hooks)


def test_the_hook_adds_the_vectors_once_and_removes_itself(hf):
    ids = numpy.array([[2, 60, 61, 62, 3]])
    embeddings = hf.get_input_embeddings()
    with torch.no_grad():
        plain = embeddings(torch.as_tensor(ids))
        hook = EmbeddingHook(hf, plan_for(ids, [0, 0], [1, 2]))
        shifted = embeddings(torch.as_tensor(ids))
        again = embeddings(torch.as_tensor(ids))
    hook.check_fired()
    assert hooks_on(hf) == 0
    torch.testing.assert_close(shifted[0, 1:3], plain[0, 1:3] + 1)
    assert torch.equal(shifted[0, [0, 3, 4]], plain[0, [0, 3, 4]])
    assert torch.equal(again, plain)  # one shot


def test_a_batch_of_another_shape_is_refused(hf):
    hook = EmbeddingHook(hf, plan_for(numpy.array([[2, 60, 61, 3]]), [0], [1]))
    with pytest.raises(RuntimeError, match=r"\[E176\] .*shape \(1, 6, 32\).*planned a batch of \(1, 4\)"):
        hf(input_ids=torch.tensor([[2, 60, 61, 62, 63, 3]]))
    assert hooks_on(hf) == 0
    with pytest.raises(RuntimeError, match=r"\[E178\]"):
        hook.check_fired()


def test_other_wordpieces_at_the_vector_positions_are_refused(hf):
    planned = numpy.array([[2, 60, 61, 3]])
    EmbeddingHook(hf, plan_for(planned, [0, 0], [1, 2]), check_ids=True)
    with pytest.raises(RuntimeError, match=r"\[E177\] .*\(2 of the 2 positions"):
        hf(input_ids=torch.tensor([[2, 70, 71, 3]]))
    assert hooks_on(hf) == 0
    hook = EmbeddingHook(hf, plan_for(planned, [0, 0], [1, 2]), check_ids=True)
    hf(input_ids=torch.as_tensor(planned))  # the same ids pass
    hook.check_fired()


def test_a_hook_that_never_fired_is_an_error(hf):
    hook = EmbeddingHook(hf, plan_for(numpy.array([[2, 3]]), [0], [0]))
    hook.remove()
    hook.remove()  # idempotent
    with pytest.raises(RuntimeError, match=r"\[E178\] The encoder .* ran without calling its input embeddings"):
        hook.check_fired()


def test_one_pending_hook_per_encoder(hf):
    ids = numpy.array([[2, 60, 3]])
    first = EmbeddingHook(hf, plan_for(ids, [0], [1]))
    second = EmbeddingHook(hf, plan_for(ids, [0], [2]))
    assert hooks_on(hf) == 1
    with torch.no_grad():
        hf(input_ids=torch.as_tensor(ids))
    assert second.fired and not first.fired
    EmbeddingHook(hf, plan_for(ids, [0], [1]))
    clear_pending(hf.get_input_embeddings())
    assert hooks_on(hf) == 0


# -- in the pipeline ---------------------------------------------------------------------------------


def make_nlp(path: str, injection: str) -> spacy.Language:
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "transformer",
        config={
            "model": {
                "@architectures": "spacy-bertram.TransformerModel.v1",
                "name": path,
                "injection": injection,
                "tokenizer_config": {"use_fast": True},
            }
        },
    )
    nlp.initialize()
    return nlp


def doc_with_vector(nlp: spacy.Language, vector: Optional[numpy.ndarray] = None) -> List[Doc]:
    doc = nlp.make_doc(TEXT)
    doc._.bertram = {RARE: numpy.ones(32, dtype="float32") if vector is None else vector}
    return [doc]


@pytest.mark.parametrize("mode", ["recentre", "slash", "replace"])
def test_a_failed_call_leaves_no_hook(tiny_encoder_path, monkeypatch, mode):
    nlp = make_nlp(tiny_encoder_path, mode)
    model = nlp.get_pipe("transformer").model
    layer = model.transformer.encoder.layer[0]

    def fail(*args, **kwargs):
        raise KeyboardInterrupt("stopped")

    monkeypatch.setattr(layer, "forward", fail)
    with pytest.raises(KeyboardInterrupt):
        model.predict(doc_with_vector(nlp))
    assert hooks_on(model.transformer) == 0
    monkeypatch.undo()
    fresh = make_nlp(tiny_encoder_path, mode).get_pipe("transformer").model
    got = model.predict(doc_with_vector(nlp)).model_output.last_hidden_state
    assert torch.equal(got, fresh.predict(doc_with_vector(nlp)).model_output.last_hidden_state)


def test_recentre_refuses_an_encoder_batch_other_than_the_planned_one(tiny_encoder_path, monkeypatch):
    """Should the encoder ever receive another batch than the one the plan was made on, recentre stops with a
    coded error instead of shifting the wrong wordpieces."""
    nlp = make_nlp(tiny_encoder_path, "recentre")
    model = nlp.get_pipe("transformer").model
    make_plan = injection_model.make_injection_plan

    def planned_on(change):
        def plan(spans, wordpieces, *rest):
            return make_plan(spans, change(wordpieces), *rest)

        return plan

    def wider(wp):  # one more padding column than the encoder gets
        pad = lambda a: numpy.pad(numpy.asarray(a), ((0, 0), (0, 1)))  # noqa: E731
        return dataclasses.replace(
            wp,
            input_ids=pad(wp.input_ids),
            attention_mask=pad(wp.attention_mask),
            token_type_ids=None if wp.token_type_ids is None else pad(wp.token_type_ids),
        )

    monkeypatch.setattr(injection_model, "make_injection_plan", planned_on(wider))
    docs = doc_with_vector(nlp)
    n = len(model.tokenizer(TEXT)["input_ids"])  # 12 in the tiny BERT, 10 in the tiny RoBERTa
    with pytest.raises(RuntimeError, match=rf"\[E176\] .*shape \(1, {n}, 32\).*planned a batch of \(1, {n + 1}\)"):
        model.predict(docs)

    def shifted(wp):  # the same shape, the rare word one position to the right
        ids = numpy.asarray(wp.input_ids).copy()
        ids[0, 1:] = ids[0, :-1].copy()
        return dataclasses.replace(wp, input_ids=ids)

    monkeypatch.setattr(injection_model, "make_injection_plan", planned_on(shifted))
    with pytest.raises(RuntimeError, match=r"\[E177\]"):
        model.predict(doc_with_vector(nlp))
    assert hooks_on(model.transformer) == 0
