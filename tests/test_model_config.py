"""BertramConfig: settings checked in Python as they are in config.json."""

from __future__ import annotations

import json
import typing

import pytest

from spacy_bertram import BertramConfig
from spacy_bertram.model.config import CONTEXT_MODES, MODE_TRAITS, MODES, PAPER_SETTINGS, SLOT_MODES, Mode


def test_config_values_are_checked_in_python_too():
    with pytest.raises(ValueError, match=r"\[E058\] 'use_subword_mean' must be true or false"):
        BertramConfig(use_subword_mean="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[E052\] max_word_pieces .* must be a whole number from 1 to"):
        BertramConfig(max_word_pieces=0)
    assert BertramConfig(ngram_dropout=0).ngram_dropout == 0  # an integer is a number


def test_modes_are_declared_once_and_checked():
    assert MODES == typing.get_args(Mode) and MODES[-1] == "inplace"
    assert CONTEXT_MODES == tuple(m for m in MODES if m != "form") and set(SLOT_MODES) == {"add", "replace"}
    assert [BertramConfig(mode=m).fills_slot for m in MODES] == [False, False, False, True, True, False]
    # the table holds what each mode's rows do: spelled only inplace, the prefix slot only ADD, the mask slot REPLACE
    assert [m for m in MODES if MODE_TRAITS[m].spelled] == ["inplace"]
    assert [m for m in MODES if MODE_TRAITS[m].prefix_slot] == ["add"]
    assert [m for m in MODES if MODE_TRAITS[m].rows is not None and MODE_TRAITS[m].rows.mask_slot] == ["replace"]
    assert MODE_TRAITS["context"].rows == MODE_TRAITS["shallow"].rows  # the same rows: one pool serves both
    with pytest.raises(ValueError, match=r"\[E050\] Unknown BERTRAM mode 'concat'"):
        BertramConfig(mode="concat")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"\[E058\] 'mode' must be a string, got int 3"):
        BertramConfig(mode=3)  # type: ignore[arg-type]


def test_the_defaults_are_what_train_makes_and_the_paper_is_one_name_away():
    config = BertramConfig()
    assert (config.mode, config.read_layer, config.subword_share, config.own_embedding_for_one_piece) == (
        "inplace",
        -2,
        0.15,
        True,
    )
    paper = BertramConfig(**PAPER_SETTINGS)
    assert (paper.mode, paper.read_layer, paper.subword_share, paper.own_embedding_for_one_piece) == (
        "add",
        -1,
        0.0,
        False,
    )
    # the reference implementation's formula, rows and gate; no subword mean in the form
    assert (paper.mimicking, paper.context_rows, paper.shallow_gate, paper.use_subword_mean) == (
        "linear",
        "reference",
        "after",
        False,
    )


@pytest.mark.parametrize("setting", ["mimicking", "context_rows", "shallow_gate"])
def test_a_reference_setting_outside_its_choices_is_refused_by_name(setting):
    with pytest.raises(ValueError, match=rf"\[E097\] The BERTRAM config's {setting} must be one of"):
        BertramConfig(**{setting: "paper"})


def test_a_config_json_that_lacks_a_setting_is_refused_by_name(tmp_path):
    """Every config.json this version writes names each setting: one that lacks some was written elsewhere or
    edited, and today's default may not be what its weights were trained with."""
    partial = {key: value for key, value in BertramConfig().to_dict().items() if key not in ("read_layer", "mode")}
    (tmp_path / "config.json").write_text(json.dumps(partial), encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E059\] The BERTRAM config lacks \['mode', 'read_layer'\]"):
        BertramConfig.from_disk(tmp_path / "config.json")
    inplace = BertramConfig(mode="inplace", read_layer=-2, subword_share=0.5, own_embedding_for_one_piece=True)
    assert BertramConfig.from_dict(inplace.to_dict()) == inplace  # written files name every key
    assert BertramConfig.from_dict(BertramConfig().to_dict()) == BertramConfig()
    with pytest.raises(ValueError, match=r"\[E055\] Unknown keys in BERTRAM config: \['colour'\]"):
        BertramConfig.from_dict({**BertramConfig().to_dict(), "colour": "red"})


def test_behaviour_follows_the_mode_table_not_the_modes_names():
    """Every mode has its traits; no module compares a network's or a stage's mode with a mode's name
    (`config.mode == "add"`). (A bare `mode` may be another kind: the injection's "replace".)"""
    import ast
    from pathlib import Path

    from spacy_bertram.model.config import MODE_TRAITS

    assert set(MODE_TRAITS) == set(MODES)
    assert [m for m in MODES if MODE_TRAITS[m].one_stage] == ["inplace"]
    found = []
    for path in (Path(__file__).parent.parent / "spacy_bertram").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            if isinstance(node, ast.Compare):
                names = [ast.unparse(x) for x in (node.left, *node.comparators)]
                literal = [
                    x for x in (node.left, *node.comparators) if isinstance(x, ast.Constant) and x.value in MODES
                ]
                if literal and any(n.endswith(".mode") for n in names):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert not found, found
