"""scripts/stack_suite.sh's refusals, before it builds anything. What it builds (a venv per stack, then the whole
suite in it) is the suite itself, run by hand: its figures are in docs/packaging.md."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "stack_suite.sh"


def run(*args: str, env: dict = None) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}
    )


def test_it_says_how_to_call_it_without_arguments():
    result = run()
    assert result.returncode == 2 and "VENV STACK" in result.stderr and "pinned" in result.stderr


def test_an_unknown_stack_is_refused(tmp_path):
    result = run(str(tmp_path / "venv"), "latest")
    assert result.returncode == 2 and "STACK must be pinned or next, got 'latest'" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_a_directory_it_did_not_make_is_left_alone(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me", encoding="utf8")
    result = run(str(mine), "pinned")
    assert result.returncode == 2 and "is not a venv this script made" in result.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]


def test_a_source_directory_that_is_not_spacy_transformers_is_refused(tmp_path):
    result = run(str(tmp_path / "venv"), "next", env={"SPACY_TRANSFORMERS_SRC": str(tmp_path)})
    assert result.returncode == 2 and "is not a spacy-transformers source directory" in result.stderr
    assert not (tmp_path / "venv").exists()
