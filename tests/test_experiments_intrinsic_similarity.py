"""bertram_experiments/intrinsic/similarity.py: Spearman and the subword-mean baseline against hand computation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy
import numpy as np
import pytest
from scipy.stats import spearmanr

from bertram_experiments.intrinsic.similarity import spearman_rho
from bertram_experiments.intrinsic.similarity import (
    SubwordMean,
    evaluate_similarity,
    read_contexts,
    read_similarity_pairs,
)


# -- Spearman and the bootstrap ---------------------------------------------------------


def test_spearman_rho_against_ranks_by_hand():
    human = [1.0, 2.0, 3.0, 4.0, 5.0]
    cosines = [0.10, 0.30, 0.20, 0.50, 0.40]  # ranks 1 3 2 5 4: d^2 = 0+1+1+1+1 = 4
    assert spearman_rho(human, cosines) == pytest.approx(1 - 6 * 4 / (5 * 24))  # 0.8
    assert spearman_rho(human, cosines) == pytest.approx(spearmanr(human, cosines)[0])
    tied = [0.1, 0.1, 0.2, 0.3, 0.3]
    assert spearman_rho(human, tied) == pytest.approx(spearmanr(human, tied)[0])
    assert numpy.isnan(spearman_rho(human, [0.5] * 5))


# ---------------------------------------------------------------- similarity


def test_spearman_matches_hand_computation(tmp_path: Path):
    pairs_file = tmp_path / "pairs.tsv"
    pairs_file.write_text("word\trare\tscore\ncar\ta\t1.0\ncar\tb\t3.0\ncar\tc\t2.0\ncar\td\t4.0\n")
    ctx = tmp_path / "contexts"
    ctx.mkdir()
    (ctx / "a.txt").write_text("first context of a\n\nsecond context of a\n")
    pairs = read_similarity_pairs(pairs_file)
    assert pairs[1] == ("car", "b", 3.0)
    angles = {"car": 0.0, "a": 1.2, "b": 0.9, "c": 0.6, "d": 0.3}  # cosine ranks a<b<c<d
    seen = {}

    def vectors(batch):
        seen.update(dict(batch))
        return np.array([[math.cos(angles[w]), math.sin(angles[w])] for w, _ in batch])

    result = evaluate_similarity(pairs, vectors, contexts=ctx)
    # human ranks (1, 3, 2, 4) vs cosine ranks (1, 2, 3, 4): sum d^2 = 2, rho = 1 - 6*2/(4*15)
    assert result.spearman == pytest.approx(0.8)
    assert result.n == 4
    assert result.cosines[0] == pytest.approx(math.cos(1.2))
    assert seen["a"] == ["first context of a", "second context of a"] and seen["b"] == []
    assert read_contexts(ctx, "a", max_contexts=1) == ["first context of a"]


def test_subword_mean_is_mean_of_wordpiece_embeddings(tiny_bert_path):
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_bert_path)
    model = AutoModel.from_pretrained(tiny_bert_path)
    baseline = SubwordMean.from_model(model, tok)
    table = model.get_input_embeddings().weight.detach().numpy()
    ids = tok("kumquats", add_special_tokens=False)["input_ids"]
    assert len(ids) > 1
    out = baseline([("kumquats", ["ignored context"]), ("fruit", [])])
    assert np.allclose(out[0], table[ids].mean(axis=0), atol=1e-6)
    assert np.allclose(out[1], table[tok.convert_tokens_to_ids("fruit")], atol=1e-6)
    pairs = [("fruit", "kumquats", 1.0), ("fruit", "apple", 2.0), ("car", "kumquats", 0.5)]
    result = evaluate_similarity(pairs, baseline)
    assert -1.0 <= result.spearman <= 1.0
