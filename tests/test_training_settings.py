"""training/settings.py: one default per network setting (BertramConfig's), the run's record and its inverse."""

from __future__ import annotations

from dataclasses import fields

import pytest

from spacy_bertram.model.config import MODES, BertramConfig
from spacy_bertram.training.settings import (
    DEFAULT_PATH_MIX,
    NETWORK_KEYS,
    TrainingData,
    TrainSettings,
    check_vector_settings,
    stage_count,
)
from spacy_bertram.training.stages import plan_stages

#: Settings as `train` records them in progress.json (flat: the network's beside the stages').
FLAT_RECORD = {
    "mode": "inplace",
    "use_subword_mean": True,
    "read_layer": -2,
    "subword_share": 0.5,
    "own_embedding_for_one_piece": True,
    "inplace_mask_fraction": 0.5,
    "epochs": [100, 20, 30],
    "lr": [1e-2, 1e-2, 3e-3],
    "batch_words": [64, 64, 64],
    "warmup": 0.1,
    "min_contexts": 4,
    "max_contexts": 32,
    "pool_contexts": 32,
    "max_seq_length": 96,
    "ngram_min_count": 3,
    "ngram_dropout": 0.1,
    "seed": 0,
    "reuse_states": True,
    "token_budget": 4096,
    "cache_memory_mb": 2048.0,
}


def test_the_network_settings_are_declared_once():
    own = {f.name for f in fields(TrainSettings)} - {"network"}
    assert not own & set(NETWORK_KEYS)  # no network setting repeated beside `network`
    assert TrainSettings().network == BertramConfig()
    with pytest.raises(TypeError, match=r"\[E269\] network must be a BertramConfig"):
        TrainSettings(network={"mode": "add"})  # type: ignore[arg-type]


def test_the_record_keeps_its_layout_and_reads_back():
    """One flat key per setting, and a record reads back as the settings it records."""
    record = TrainSettings().to_dict()
    assert record == {
        **FLAT_RECORD,
        "max_word_pieces": 32,
        "path_phases": False,
        "rank_weight": 0.0,
        "rank_temperature": 0.1,
        "rank_negatives": 64,
        "ngram_style": "ours",
        "mimicking": "softmax",
        "context_rows": "matched",
        "add_quotes": False,
        "prefix_tokens": True,
        "shallow_gate": "per_context",
        "path_mix": [0.25, 0.25, 0.5],
        "subword_share": 0.15,
    }
    assert TrainSettings().path_mix == DEFAULT_PATH_MIX
    settings = TrainSettings(
        BertramConfig(base_model="tiny", mode="add", max_contexts=6), epochs=(2, 1, 1), min_contexts=2, pool_contexts=8
    )
    assert "base_model" not in settings.to_dict()  # the run records its encoder beside the settings
    again = TrainSettings.from_dict({**settings.to_dict(), "base_model": "tiny"})
    assert again == settings and again.epochs == (2, 1, 1)
    assert TrainSettings.from_dict(FLAT_RECORD) == TrainSettings(BertramConfig(subword_share=0.5))


def test_settings_are_checked_against_the_network():
    with pytest.raises(ValueError, match=r"\[E272\].*min_contexts <= max_contexts <= pool_contexts"):
        TrainSettings(BertramConfig(max_contexts=40))
    with pytest.raises(ValueError, match=r"\[E052\] subword_share must be in"):
        TrainSettings.from_dict({"subword_share": 2.0})
    with pytest.raises(ValueError, match=r"\[E270\].*one value per stage"):
        TrainSettings(epochs=(1, 2))  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_epochs_that_train_none_of_the_modes_stages_are_refused(mode):
    """0 epochs in every stage a mode runs wrote the untrained network as the model; a single 0 is kept (a
    stage left out, or the values a mode does not run), and the stage count is the one the stages are planned by."""
    n_stages = stage_count(mode)
    assert n_stages == len(plan_stages(TrainSettings(BertramConfig(mode=mode), epochs=(1, 1, 1))))
    with pytest.raises(ValueError, match=rf"\[E294\] --epochs 0 0 0 trains none of the stages the '{mode}' mode runs"):
        TrainSettings(BertramConfig(mode=mode), epochs=(0, 0, 0))
    unused = tuple(0 if stage < n_stages else 5 for stage in range(3))  # only the values the mode does not run
    if n_stages < 3:
        with pytest.raises(ValueError, match=r"\[E294\].*\(the default: --epochs 100 20 30\)"):
            TrainSettings(BertramConfig(mode=mode), epochs=unused)
    for stage in range(n_stages):  # any one stage that trains is enough
        assert TrainSettings(BertramConfig(mode=mode), epochs=tuple(int(i == stage) for i in range(3))).epochs


@pytest.mark.parametrize("lr", [(float("nan"), 1e-2, 3e-3), (1e-2, float("inf"), 3e-3), (1e-2, 1e-2, 0.0)])
def test_a_learning_rate_that_is_not_a_positive_number_is_refused(lr):
    """NaN passed `min(lr) <= 0` (both comparisons are false): training failed in the optimizer, after the
    targets were saved."""
    with pytest.raises(ValueError, match=r"\[E271\] .*lr finite and above 0, got lr \("):
        TrainSettings(lr=lr)


def test_the_training_data_settings_are_checked_when_made():
    """Before any store is opened or encoder loaded: `train` builds them first thing."""
    with pytest.raises(ValueError, match=r"\[E052\] held_out_fraction must be in \(0, 0.5\), got nan"):
        TrainingData(held_out_fraction=float("nan"))
    with pytest.raises(ValueError, match=r"\[E256\] --max-words 5 is below the 20 training words"):
        TrainingData(max_words=5)
    with pytest.raises(ValueError, match=r"\[E052\] --min-count must be a whole number from 1 to 1,000,000,000,000"):
        TrainingData(min_count=0)
    with pytest.raises(ValueError, match=r"\[E052\] --definitions-per-word must be a whole number from 1 to 10,000"):
        TrainingData(definitions_per_word=0)
    assert TrainingData(max_words=20, held_out_fraction=0.25).max_words == 20


def test_the_vector_settings_are_checked_without_a_model():
    good = dict(min_count=1, max_count=None, max_contexts=8, token_budget=0, shard_size=256, workers=0)
    check_vector_settings(**good)
    for change, code in [
        ({"max_count": 1}, "E261"),
        ({"max_contexts": 0}, "E052"),
        ({"token_budget": -1}, "E263"),
        ({"shard_size": 0}, "E052"),
        ({"workers": -1}, "E268"),
    ]:
        with pytest.raises(ValueError, match=rf"\[{code}\]"):
            check_vector_settings(**{**good, **change})


def test_path_phases_give_the_papers_order_in_thirds_of_the_stage():
    """Contexts alone, the spelling alone, then both; without phases every step takes the mix."""
    phased = TrainSettings(path_phases=True)
    steps = 300
    mixes = [phased.path_mix_at(step / steps) for step in range(steps)]
    assert mixes[:100] == [(0.0, 1.0, 0.0)] * 100
    assert mixes[100:200] == [(1.0, 0.0, 0.0)] * 100
    assert mixes[200:] == [(0.0, 0.0, 1.0)] * 100
    assert {TrainSettings().path_mix_at(p) for p in (0.0, 0.5, 0.99)} == {DEFAULT_PATH_MIX}
    assert TrainSettings(path_mix=None).path_mix_at(0.5) is None
    assert TrainSettings.from_dict(phased.to_dict()).path_phases is True
