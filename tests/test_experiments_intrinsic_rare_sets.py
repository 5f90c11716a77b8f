"""bertram_experiments/intrinsic/rare_sets.py: the Chimera reader."""

from __future__ import annotations

from bertram_experiments.intrinsic.rare_sets import NONCE, parse_chimera_line

from tests.util import CHIMERA_L2, PROBES


def test_chimera_line_becomes_sentences_with_one_nonce_word():
    item = parse_chimera_line(CHIMERA_L2[3], "x: line 4")
    assert item.sentences == [f"the {NONCE} was big and green", f"he walked to the reeves {NONCE} in the city"]
    assert item.context_text == "the was big and green he walked to the reeves in the city"
    assert item.probes == PROBES.split(",") and item.ratings == [1, 1, 1, 3, 1, 2]
