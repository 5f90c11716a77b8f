"""training/settings.py: one default per network setting (BertramConfig's), the run's record and its inverse."""
from __future__ import annotations

from dataclasses import fields

import pytest

from spacy_bertram.config import BertramConfig
from spacy_bertram.training.settings import NETWORK_KEYS, TrainSettings

#: What `train` recorded in progress.json before the network settings were BertramConfig's.
FLAT_RECORD = {
    "mode": "inplace", "use_subword_mean": True, "read_layer": -2, "subword_share": 0.5,
    "own_embedding_for_one_piece": True, "inplace_mask_fraction": 0.5, "epochs": [100, 20, 30],
    "lr": [1e-2, 1e-2, 3e-3], "batch_words": [64, 64, 64], "warmup": 0.1, "min_contexts": 4, "max_contexts": 32,
    "pool_contexts": 32, "max_seq_length": 96, "ngram_min_count": 3, "ngram_dropout": 0.1, "seed": 0,
    "reuse_states": True, "token_budget": 4096, "cache_memory_mb": 2048.0,
}


def test_the_network_settings_are_declared_once():
    own = {f.name for f in fields(TrainSettings)} - {"network"}
    assert not own & set(NETWORK_KEYS)  # no network setting repeated beside `network`
    assert TrainSettings().network == BertramConfig()
    with pytest.raises(TypeError, match=r"\[E269\] network must be a BertramConfig"):
        TrainSettings(network={"mode": "add"})  # type: ignore[arg-type]


def test_the_record_keeps_its_layout_and_reads_back():
    """The same keys as before plus max_word_pieces, so a run recorded earlier compares equal."""
    record = TrainSettings().to_dict()
    assert record == {**FLAT_RECORD, "max_word_pieces": 32}
    settings = TrainSettings(BertramConfig(base_model="tiny", mode="add", max_contexts=6), epochs=(2, 1, 1),
                             min_contexts=2, pool_contexts=8)
    assert "base_model" not in settings.to_dict()  # the run records its encoder beside the settings
    again = TrainSettings.from_dict({**settings.to_dict(), "base_model": "tiny"})
    assert again == settings and again.epochs == (2, 1, 1)
    assert TrainSettings.from_dict(FLAT_RECORD) == TrainSettings()


def test_settings_are_checked_against_the_network():
    with pytest.raises(ValueError, match=r"\[E272\].*min_contexts <= max_contexts <= pool_contexts"):
        TrainSettings(BertramConfig(max_contexts=40))
    with pytest.raises(ValueError, match=r"\[E051\] subword_share must be in"):
        TrainSettings.from_dict({"subword_share": 2.0})
    with pytest.raises(ValueError, match=r"\[E270\].*one value per stage"):
        TrainSettings(epochs=(1, 2))  # type: ignore[arg-type]

