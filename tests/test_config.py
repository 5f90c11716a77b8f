"""BertramConfig: settings checked in Python as they are in config.json."""
from __future__ import annotations

import pytest

from spacy_bertram import BertramConfig


def test_config_values_are_checked_in_python_too():
    with pytest.raises(ValueError, match="'use_subword_mean' must be true or false"):
        BertramConfig(use_subword_mean="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_word_pieces must be at least 1"):
        BertramConfig(max_word_pieces=0)
    assert BertramConfig(ngram_dropout=0).ngram_dropout == 0  # an integer is a number
