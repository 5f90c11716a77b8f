"""training/targets.py: training words, held-out words and target files."""
from __future__ import annotations

import random

import pytest
import torch

from spacy_bertram.encoder import load_encoder
from spacy_bertram.training.ota import OTASettings
from spacy_bertram.training.segmentation import RareLikeSegmenter
from spacy_bertram.training.sources import MemoryContexts
from spacy_bertram.training.targets import TargetSet, build_targets, select_training_words



def tiny_lines(n_lines=400, seed=0):
    words = "the cat dog fox bird fish tree house car road city river sea sky sun moon day night apple lemon " \
            "garden farm farmer market people time year man woman child kumquats unable grower".split()
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(10)) for _ in range(n_lines)]


def test_training_words_and_held_out(tiny_bert_path):
    _, tokenizer = load_encoder(tiny_bert_path)
    base = MemoryContexts.from_lines(tiny_lines())
    counts = dict(base.counts())
    counts.update({"123": 500, "x2": 400, "e-mail": 300, "x": 300})
    contexts = {w: [f"a {w} b"] for w in counts}
    source = MemoryContexts(counts, contexts)
    segmenter = RareLikeSegmenter(tokenizer)
    words, counts, held = select_training_words(source, segmenter, min_count=20, held_out_fraction=0.1, seed=3)
    assert not {"123", "x2", "e-mail"} & set(words)  # alphabetic only
    assert "x" not in words  # its rare-like segmentation would be [UNK]
    assert all(c >= 20 for c in counts) and counts == sorted(counts, reverse=True)
    assert sum(held) == 4 and len(words) == 33
    again = select_training_words(source, segmenter, min_count=20, held_out_fraction=0.1, seed=3)
    assert again[2] == held
    other = select_training_words(source, segmenter, min_count=20, held_out_fraction=0.1, seed=4)
    assert other[2] != held


def test_targets_rows_and_ota_roundtrip(tiny_bert_path, tmp_path):
    encoder, tokenizer = load_encoder(tiny_bert_path)
    source = MemoryContexts.from_lines(tiny_lines())
    targets = build_targets(source, encoder, tokenizer, tiny_bert_path, min_count=20,
                            ota=OTASettings(steps=3), progress=False)
    table = encoder.get_input_embeddings().weight.detach()
    for i, word in enumerate(targets.words):
        if targets.kinds[i] == "row":
            assert torch.equal(targets.vectors[i], table[targets.pieces[i][0]])
            assert targets.rare_like[i] != targets.pieces[i]
    assert targets.kinds[targets.words.index("kumquats")] == "ota"
    targets.save(tmp_path / "targets")
    loaded = TargetSet.load(tmp_path / "targets", expected_width=table.shape[1])
    assert loaded.words == targets.words and torch.equal(loaded.vectors, targets.vectors)
    assert loaded.held_out == targets.held_out and loaded.rare_like == targets.rare_like
    with pytest.raises(ValueError, match=r"\[E250\].*width 32.*width 384"):
        TargetSet.load(tmp_path / "targets", expected_width=384)


def test_too_few_or_no_training_words(tiny_bert_path):
    _, tokenizer = load_encoder(tiny_bert_path)
    segmenter = RareLikeSegmenter(tokenizer)
    with pytest.raises(ValueError, match=r"\[E258\] Only 0 alphabetic words"):
        select_training_words(MemoryContexts({}, {}), segmenter)
    with pytest.raises(ValueError, match=r"\[E258\].*Lower the minimum count"):
        select_training_words(MemoryContexts.from_lines(tiny_lines()), segmenter, min_count=500)


def test_corrupt_target_dir_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"\[E251\].*is not a target set"):
        TargetSet.load(tmp_path)
