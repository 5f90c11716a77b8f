"""training/targets.py: training words, held-out words and target files."""

from __future__ import annotations

import math
import random

import pytest
import torch

from spacy_bertram.model.encoder import load_encoder
from spacy_bertram.training.ota import OTASettings
from spacy_bertram.training.segmentation import RareLikeSegmenter
from spacy_bertram.training.sources import MemoryTrainingSource
from spacy_bertram.training.targets import TargetSet, build_targets, select_training_words


def tiny_lines(n_lines=400, seed=0):
    words = (
        "the cat dog fox bird fish tree house car road city river sea sky sun moon day night apple lemon "
        "garden farm farmer market people time year man woman child kumquats unable grower".split()
    )
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(10)) for _ in range(n_lines)]


def test_training_words_and_held_out(tiny_bert_path):
    _, tokenizer = load_encoder(tiny_bert_path)
    base = MemoryTrainingSource.from_lines(tiny_lines())
    counts = dict(base.counts())
    counts.update({"123": 500, "x2": 400, "e-mail": 300, "x": 300})
    contexts = {w: [f"a {w} b"] for w in counts}
    source = MemoryTrainingSource(counts, contexts)
    segmenter = RareLikeSegmenter(tokenizer)
    words, counts, held, n_corpus = select_training_words(
        source, segmenter, min_count=20, held_out_fraction=0.1, seed=3
    )
    assert n_corpus == len(words)
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
    source = MemoryTrainingSource.from_lines(tiny_lines())
    targets = build_targets(
        source, encoder, tokenizer, tiny_bert_path, min_count=20, ota=OTASettings(steps=3), progress=False
    )
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
        select_training_words(MemoryTrainingSource({}, {}), segmenter)
    with pytest.raises(ValueError, match=r"\[E258\].*Lower the minimum count"):
        select_training_words(MemoryTrainingSource.from_lines(tiny_lines()), segmenter, min_count=500)


def test_corrupt_target_dir_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"\[E251\].*is not a target set"):
        TargetSet.load(tmp_path)


def test_multi_piece_words_follow_the_corpus_words_and_are_never_rare(tiny_bert_path):
    """wordfreq's multi-piece words at or above the rule's threshold come after the corpus words,
    with or without contexts; none of them is a word the component would infer."""
    from wordfreq import zipf_frequency

    from spacy_bertram.rarity.frequencies import DEFAULT_MAX_ZIPF

    _, tokenizer = load_encoder(tiny_bert_path)
    segmenter = RareLikeSegmenter(tokenizer)
    source = MemoryTrainingSource.from_lines(tiny_lines())
    corpus = select_training_words(source, segmenter, min_count=20).words
    words, counts, held, n_corpus = select_training_words(source, segmenter, min_count=20, multi_piece_words=40)
    assert n_corpus == len(corpus)
    assert words[: len(corpus)] == corpus and len(words) == len(corpus) + 40
    extra = words[len(corpus) :]
    assert all(len(segmenter.pieces(w)) > 1 and w.isalpha() for w in extra)
    assert all(zipf_frequency(w, "en") >= DEFAULT_MAX_ZIPF for w in extra)
    assert not {segmenter.inputs.normalize(w) for w in extra} & {segmenter.inputs.normalize(w) for w in corpus}
    assert any(not source.contexts(w, 1) for w in extra)  # no corpus context needed
    assert all(c == source.count(w) for w, c in zip(extra, counts[len(corpus) :]))
    assert sum(held) == math.ceil(0.05 * len(words))
    higher = select_training_words(source, segmenter, min_count=20, multi_piece_words=40, multi_piece_min_zipf=5.0)[0]
    assert all(zipf_frequency(w, "en") >= 5.0 for w in higher[len(corpus) :])


def test_targets_report_the_multi_piece_share(tiny_bert_path):
    encoder, tokenizer = load_encoder(tiny_bert_path)
    source = MemoryTrainingSource.from_lines(tiny_lines())
    targets = build_targets(
        source,
        encoder,
        tokenizer,
        tiny_bert_path,
        min_count=20,
        ota=OTASettings(steps=1),
        progress=False,
        multi_piece_words=30,
    )
    info = targets.info
    assert info["multi_piece_words"] == 30 and info["n_ota"] == targets.kinds.count("ota") >= 30
    assert info["multi_piece_share"] == round(info["n_ota"] / len(targets), 4)
    assert info["n_with_contexts"] == sum(1 for w in targets.words if source.contexts(w, 1)) < len(targets)
    assert info["seconds"] >= 0


@pytest.mark.parametrize(
    "words, zipf, match",
    [
        (-1, 3.0, r"\[E052\] --multi-piece-words must be a whole number from 0 to 1,000,000,000, got -1"),
        (10, float("nan"), r"\[E039\].*--multi-piece-min-zipf"),
    ],
)
def test_bad_multi_piece_settings_are_refused(words, zipf, match):
    from spacy_bertram.training.settings import TrainingData

    with pytest.raises(ValueError, match=match):
        TrainingData(multi_piece_words=words, multi_piece_min_zipf=zipf)


def test_a_learning_curve_selects_smaller_sets_with_the_same_held_out_words_and_targets(tiny_bert_path):
    encoder, tokenizer = load_encoder(tiny_bert_path)
    source = MemoryTrainingSource.from_lines(tiny_lines())
    whole = build_targets(
        source,
        encoder,
        tokenizer,
        tiny_bert_path,
        min_count=20,
        ota=OTASettings(steps=1),
        progress=False,
        multi_piece_words=30,
    )
    n_corpus = whole.info["n_corpus"]
    small = whole.select(10, 5)
    held = [w for w, h in zip(whole.words, whole.held_out) if h]
    assert [w for w, h in zip(small.words, small.held_out) if h] == held
    trained = [w for w, h in zip(small.words, small.held_out) if not h]
    assert (
        trained
        == [w for w, h in zip(whole.words[:n_corpus], whole.held_out) if not h][:10]
        + [w for w, h in zip(whole.words[n_corpus:], whole.held_out[n_corpus:]) if not h][:5]
    )
    for i, word in enumerate(small.words):
        assert torch.equal(small.vectors[i], whole.vectors[whole.words.index(word)])
    assert small.info["n_ota"] == small.kinds.count("ota") and small.info["selected"]["from_words"] == len(whole)
    assert whole.select(None, None).words == whole.words
    assert whole.select(0, 0).words == held
