"""scripts/stack_outputs.py on this stack: `write` runs the README's block and a `spacy train` of
configs/textcat_minilm_bertram.cfg, and `compare` of a run with itself finds no difference and loads its pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from tests.util import make_bertram_dir

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "stack_outputs.py"


@pytest.mark.slow
def test_write_then_compare_on_one_stack(tmp_path):
    model = make_bertram_dir(tmp_path / "bertram", "default")
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, str(SCRIPT), "write", str(out), "--model", model, "--steps", "2"],
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    arrays = numpy.load(out / "outputs.npz")
    assert arrays["infer"].shape == (1, 384)
    assert any(name.startswith("trained_doc0_cats") for name in arrays.files)
    assert any("_vector" in name for name in arrays.files)  # the rare words got vectors
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "compare", str(out), str(out)],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["max_diff"] == {"vectors": 0.0, "tensors": 0.0, "trained cats": 0.0}
    assert figures["load out"] < 1e-6
    again = subprocess.run(
        [sys.executable, str(SCRIPT), "write", str(out), "--model", model], capture_output=True, text=True, timeout=300
    )
    assert again.returncode != 0 and "exists: give a new directory" in again.stderr
