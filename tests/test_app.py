"""One output rule for every command: nothing is overwritten or removed that the command did not write
(unless --force), and an output that cannot be written is refused, before any import or work."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from spacy_bertram.cli import app

from tests.util import invoke

ROOT = Path(__file__).parent.parent
COMMANDS = sorted(typer.main.get_command(app).commands)


#: Every command that writes, with inputs that do not exist: the output check must come first. {out} is the
#: output, a directory (E007) or, for the commands that write one file, a file (E071).
WRITERS = {
    "prepare": ["x", "{out}"], "targets": ["x", "{out}"], "train": ["x", "{out}"],
    "vectors": ["x", "x", "{out}", "--workers", "0"], "split": ["x", "{out}"], "train-baseline": ["x", "{out}"],
    "rarify": ["x", "x", "{out}", "--counts", "x"], "evaluate": ["x", "x", "{out}"],
    "evaluate-originals": ["x", "x", "{out}", "--bertram", "x"], "pool": ["x", "--output", "{out}"],
    "assemble": ["x", "x", "{out}"], "ner-folds": ["x", "{out}"], "ner-train": ["x", "{out}", "--bertram", "x"],
    "ner-evaluate": ["x", "x", "{out}"], "similarity": ["x", "x", "x", "--output", "{out}"],
    "intrinsic": ["x", "--output", "{out}"], "report": ["{out}"], "dictionary": ["{out}"],
    "synonym-recovery": ["x", "--wordnet", "--output", "{out}"],
}
ONE_FILE = {"similarity": "m.json", "intrinsic": "m.json", "report": "r.md", "dictionary": "d.sqlite",
            "synonym-recovery": "s.json"}


def writer_argv(command: str, out: Path):
    return [command, *(str(out) if arg == "{out}" else arg for arg in WRITERS[command])]


def foreign_output(command: str, root: Path) -> Path:
    """What a user keeps where the command is pointed: a file of theirs, or a directory holding one."""
    out = root / ONE_FILE.get(command, "out")
    mine = out if command in ONE_FILE else out / "notes.txt"
    mine.parent.mkdir(parents=True, exist_ok=True)
    mine.write_text("mine", encoding="utf8")
    return out


def test_every_command_that_writes_is_listed():
    assert set(WRITERS) == set(COMMANDS) - {"rare-words"}  # rare-words prints, it writes nothing


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_every_command_refuses_what_it_did_not_write_before_anything_is_done(command, tmp_path):
    out = foreign_output(command, tmp_path)
    before = sorted(tmp_path.rglob("*"))
    result = invoke(*writer_argv(command, out))
    code = "E071" if command in ONE_FILE else "E007"
    assert result.exit_code == 1 and f"[{code}] {command}: " in result.output and "--force" in result.output
    assert sorted(tmp_path.rglob("*")) == before and "mine" in {p.read_text() for p in before if p.is_file()}


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_every_command_refuses_an_unwritable_output_at_once(command, unwritable_dir):
    result = invoke(*writer_argv(command, unwritable_dir / ONE_FILE.get(command, "out")))
    assert result.exit_code == 1 and f"[E070] {command}: cannot write" in result.output, result.output
    assert f"{str(unwritable_dir)!r} is not writable" in result.output and list(unwritable_dir.iterdir()) == []


REFUSED_CHECK = """
import json, sys
from spacy_bertram.cli import main
codes = []
for argv in json.loads(sys.argv[1]):
    try:
        main(argv)
    except SystemExit as exit_:
        codes.append(exit_.code)
heavy = ("torch", "transformers", "spacy", "spacy_transformers", "thinc", "dask")
print(json.dumps([codes, sorted(m for m in heavy if m in sys.modules)]))
"""


def test_a_refused_output_costs_no_heavy_import(tmp_path):
    """The check comes before the step is imported: torch and spaCy take seconds to import."""
    argvs = [writer_argv(command, foreign_output(command, tmp_path / command)) for command in sorted(WRITERS)]
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", REFUSED_CHECK, json.dumps(argvs)], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": path}, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [[1] * len(WRITERS), []]


@pytest.mark.parametrize("own, other", [("evaluate", "evaluate-originals"), ("evaluate-originals", "evaluate")])
def test_evaluate_and_evaluate_originals_redo_their_own_metrics_only(own, other, tmp_path):
    """Both write metrics.json and predictions.jsonl: each redoes its own run (marked), never the other's."""
    out = tmp_path / "metrics"
    out.mkdir()
    (out / "metrics.json").write_text(json.dumps({"written_by": own, "n_items": 3}), encoding="utf8")
    result = invoke(*writer_argv(other, out))
    assert result.exit_code == 1 and f"holds metrics.json (written by {own}), which {other} would overwrite" in \
        " ".join(result.output.split()), result.output
    result = invoke(*writer_argv(own, out))  # passes the check, then fails on the missing inputs
    assert result.exit_code == 1 and "[E007]" not in result.output
    assert json.loads((out / "metrics.json").read_text()) == {"written_by": own, "n_items": 3}
