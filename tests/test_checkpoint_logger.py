"""Pipelines saved at chosen training steps, and the NER configs' training variants (fine-tuned or frozen
embeddings)."""

from __future__ import annotations

from pathlib import Path

import pytest
import spacy
from spacy.util import registry

from spacy_bertram.checkpoint_logger import LOGGER_NAME, check_checkpoint_steps, checkpoint_logger
from bertram_experiments.ner.commands import parse_steps
from bertram_experiments.rarification.baseline import baseline_config
from spacy_bertram.injection.frozen_embeddings import FREEZE_CALLBACK

CONFIGS = Path(__file__).parent.parent / "configs"


@pytest.mark.parametrize("name", ["ner_minilm.cfg", "ner_minilm_bertram.cfg"])
def test_fine_tuning_drops_the_freezing_callback_the_config_names(name):
    assert baseline_config(CONFIGS / name)["initialize"]["after_init"] == {"@callbacks": FREEZE_CALLBACK}
    assert baseline_config(CONFIGS / name, freeze=False)["initialize"]["after_init"] is None


def test_checkpoints_use_the_registered_logger(tmp_path):
    config = baseline_config(
        CONFIGS / "ner_minilm.cfg", max_steps=400, eval_frequency=100, checkpoints=[300, 100], checkpoint_dir=tmp_path
    )
    assert config["training"]["logger"] == {
        "@loggers": LOGGER_NAME,
        "steps": [100, 300],
        "directory": str(tmp_path),
        "progress_bar": False,
    }
    assert registry.loggers.get(LOGGER_NAME) is not None


@pytest.mark.parametrize("steps", [[150], [400], [0], [500]])
def test_a_step_spacy_never_logs_is_refused(steps):
    with pytest.raises(ValueError, match=r"multiple of eval_frequency \(100\) and below max_steps \(400\)"):
        check_checkpoint_steps(steps, 100, 400)


def test_the_option_parses_a_comma_list():
    assert parse_steps("300, 100", 100, 1000) == (100, 300)
    assert parse_steps("", 100, 1000) == ()
    with pytest.raises(ValueError, match="checkpoint steps 100;300"):
        parse_steps("100;300", 100, 1000)


def test_the_logger_saves_at_the_chosen_evaluations_only(tmp_path, capsys):
    nlp = spacy.blank("en")
    log_step, finalize = checkpoint_logger([200], str(tmp_path / "checkpoints"))(nlp, None, None)
    for step in (100, 200):
        log_step(None)  # spaCy's steps between evaluations
        log_step(
            {
                "epoch": 0,
                "step": step,
                "score": 0.5,
                "other_scores": {},
                "losses": {},
                "checkpoints": [],
                "seconds": 1,
                "words": 10,
            }
        )
    finalize()
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-200"]
    assert spacy.load(tmp_path / "checkpoints" / "step-200").pipe_names == []
