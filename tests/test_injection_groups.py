"""injection/groups.py: an injected batch runs in calls of rows of similar length, equal to one padded call."""

from __future__ import annotations

from typing import List

import numpy
import pytest
import spacy
import torch

import spacy_bertram.injection.groups as groups
from spacy_bertram.injection.groups import length_groups
from spacy_bertram.injection.batch import row_ends

from tests.util import transformer_config

SENTENCE = "the farmer sold kumquats at the market"  # kumquats -> kum ##qua ##t ##s
RARE = 3  # token index of "kumquats"


def test_row_ends_are_one_past_the_last_real_position():
    mask = numpy.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 0]])
    assert row_ends(mask).tolist() == [2, 4, 0, 3]


@pytest.mark.parametrize("mode", ["slash", "replace", "recentre"])
def test_length_groups_equal_one_call(tiny_encoder_path, mode, monkeypatch):
    """Rows of very different lengths run in groups; outputs and gradients equal one padded call at every real
    position (recentre's one call is the stock call, whose padding positions hold states no listener reads)."""
    no_dropout = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    config = transformer_config(tiny_encoder_path, mode)
    config["model"]["transformer_config"] = {**no_dropout, "output_hidden_states": True}
    nlp = spacy.blank("en")
    nlp.add_pipe("transformer", config=config)
    nlp.initialize()
    model = nlp.get_pipe("transformer").model
    hf = model.transformer
    texts = [" ".join([SENTENCE] * (1 + k % 6)) for k in range(40)]
    vectors = [
        {RARE: numpy.random.default_rng(k).normal(size=32).astype("float32")} if k % 3 else None for k in range(40)
    ]

    def run(max_groups: int):
        monkeypatch.setattr(groups, "MAX_GROUPS", max_groups)
        shapes: List[tuple] = []
        handle = hf.register_forward_pre_hook(
            lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True
        )
        hf.zero_grad(set_to_none=True)
        docs = [nlp.make_doc(text) for text in texts]
        for doc, vecs in zip(docs, vectors):
            doc._.bertram = vecs
        output, backprop = model.begin_update(docs)
        rng = numpy.random.default_rng(0)
        d_docs = [
            [rng.normal(size=d.tensors[0].shape).astype("f") * d.wordpieces.attention_mask[..., None]]
            for d in output.doc_data
        ]
        backprop(output.unsplit_by_doc(d_docs))
        handle.remove()
        grads = {name: p.grad.clone() for name, p in hf.named_parameters() if p.grad is not None}
        return output, grads, shapes

    one, one_grads, one_shapes = run(1)
    grouped, grouped_grads, grouped_shapes = run(4)
    assert len(one_shapes) == 1 and len(grouped_shapes) == 2  # 40 rows: 2 groups of 20 (4 needs 64)
    assert sum(n * length for n, length in grouped_shapes) < 0.8 * one_shapes[0][0] * one_shapes[0][1]
    assert grouped.wordpieces.strings == one.wordpieces.strings
    numpy.testing.assert_array_equal(grouped.align.data, one.align.data)
    real = torch.as_tensor(numpy.asarray(one.wordpieces.attention_mask) > 0)[..., None]
    torch.testing.assert_close(
        grouped.model_output.last_hidden_state * real, one.model_output.last_hidden_state * real, atol=1e-5, rtol=1e-4
    )
    for ours, ref in zip(grouped.model_output["hidden_states"], one.model_output["hidden_states"]):
        torch.testing.assert_close(ours * real, ref * real, atol=1e-5, rtol=1e-4)
    assert one_grads.keys() == grouped_grads.keys() and len(one_grads) > 10
    for name, grad in one_grads.items():
        # float32 sums over ~1,000 positions: equal to rounding, relative to the largest entry
        torch.testing.assert_close(
            grouped_grads[name], grad, rtol=0, atol=1e-5 * float(grad.abs().max()) + 1e-8, msg=name
        )


def test_length_groups_choice():
    def lengths(values):
        return numpy.asarray(values)

    assert [len(g) for g in length_groups(lengths([10] * 20 + [50] * 20))] == [20, 20]
    mixed = lengths([50, 10] * 20)
    assert [set(mixed[g].tolist()) for g in length_groups(mixed)] == [{10}, {50}]
    assert len(length_groups(lengths([30] * 64))) == 1  # equal lengths: nothing to save
    assert len(length_groups(lengths([10] * 8 + [50] * 8))) == 1  # too few rows to split
    four = length_groups(lengths([5] * 16 + [20] * 16 + [40] * 16 + [80] * 16))
    assert [len(g) for g in four] == [16, 16, 16, 16]
