"""app.py and the commands: the checks every command runs before it imports its step or does any work:
its arguments, and the one output rule (nothing is overwritten or removed that the command did not write
unless --force, and an output that cannot be written is refused)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import typer.main

from spacy_bertram.cli.app import _lang_aliases, check_gpu, check_lang, check_made_by, number_in
from spacy_bertram.cli import app
from spacy_bertram.torch_build import cpu_only_torch

from tests.util import EXPERIMENT_COMMANDS, context_store_of, corpus_lines, damage_middle, invoke

ROOT = Path(__file__).parent.parent


def test_number_in_takes_the_range_open_or_closed_and_only_finite_numbers():
    assert number_in(0, 1, high_open=True)("0") == 0.0 and number_in(0, low_open=True)("5") == 5.0
    assert number_in(0, 0.5, low_open=True, high_open=True)("0.25") == 0.25 and number_in()("-3") == -3.0
    refused = [
        (number_in(0, low_open=True), "0", "must be a finite number above 0, got 0"),
        (number_in(0, 1, high_open=True), "1.0", "must be a finite number at least 0 and below 1, got 1.0"),
        (number_in(0, 0.5, low_open=True, high_open=True), "0.5", "above 0 and below 0.5, got 0.5"),
        (number_in(0, 1), "-0.1", "at least 0 and at most 1, got -0.1"),
        (number_in(0), "ten", "a finite number at least 0, got 'ten'"),
    ]
    for parse, text, message in refused:
        with pytest.raises(typer.BadParameter, match=re.escape(message)):
            parse(text)


@pytest.mark.parametrize("bounds", [{}, {"low": 0}, {"low": 0, "low_open": True}, {"low": 0, "high": 1}])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_nan_and_infinity_pass_no_range(bounds, value):
    """NaN compares false with everything: a check written as `if x < 0: refuse` lets it through; infinity
    passes any lower bound (typer's own min/max let both through)."""
    with pytest.raises(typer.BadParameter, match=rf"must be a finite number.*, got {value}"):
        number_in(**bounds)(value)


def test_a_range_is_refused_by_the_command_line_before_any_work(tmp_path):
    """Whole numbers through typer's min=, the rest through number_in: typer's usage error (exit 2) names
    the option, per value of a multi-value option too."""
    out = str(tmp_path / "out")
    for argv, option in [
        (["train", "store", out, "--lr", "0.01", "0", "0.01"], "--lr"),
        (["train", "store", out, "--held-out", "0.7"], "--held-out"),
        (["train", "store", out, "--epochs", "1", "-1", "1"], "--epochs"),
        (["train", "store", out, "--warmup", "nan"], "--warmup"),
    ]:
        result = invoke(*argv)
        assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output, (argv, result.output)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("lang", ["en", "de", "xx", "eng", "ger", "iw", "zz", "q1", "en_core", "../en", "", "EN"])
def test_check_lang_agrees_with_spacy_without_importing_it(lang):
    from spacy.util import get_lang_class

    try:
        get_lang_class(lang)
        spacy_knows = True
    except (ImportError, ValueError):
        spacy_knows = False
    if spacy_knows:
        check_lang(lang)
    else:
        with pytest.raises(ValueError, match=r"\[E283\] --lang .* is not a language spaCy knows"):
            check_lang(lang)


def test_the_aliases_read_from_spacys_source_are_spacys():
    import spacy
    from spacy.util import LANG_ALIASES

    aliases = _lang_aliases(Path(spacy.__file__).parent)
    assert aliases == {alias: code for code, names in LANG_ALIASES.items() for alias in names}
    assert aliases["eng"] == "en"
    assert _lang_aliases(Path("/nonexistent")) is None  # then spaCy itself is asked


def test_check_made_by_names_the_argument_and_the_command(tmp_path):
    files = ("train.spacy", "dev.spacy")
    cases = [
        (tmp_path / "none", "does not exist"),
        (tmp_path / "file", "is not a directory"),
        (tmp_path / "half", "has no dev.spacy"),
    ]
    (tmp_path / "file").write_text("x", encoding="utf8")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "train.spacy").write_bytes(b"")
    for path, why in cases:
        with pytest.raises(ValueError, match=rf"\[E284\] SPLITS_DIR '{path}' {why}: it is the output of `split`"):
            check_made_by(path, "SPLITS_DIR", "split", files)
    (tmp_path / "half" / "dev.spacy").write_bytes(b"")
    check_made_by(tmp_path / "half", "SPLITS_DIR", "split", files)


@pytest.mark.skipif(torch.cuda.is_available(), reason="refusing a GPU id needs a machine without CUDA")
def test_check_gpu_refuses_any_gpu_id_without_cuda():
    check_gpu(-1)
    check_gpu(-1, -2)
    for ids in [(0,), (-1, 1)]:
        with pytest.raises(ValueError, match=rf"\[E117\] --gpu-id {max(ids)} asks for CUDA device {max(ids)}"):
            check_gpu(*ids)


def test_check_gpu_accepts_the_devices_torch_has(monkeypatch):
    """Faked: torch is loaded here, so it is asked (not torch/version.py), and it says two devices."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    check_gpu(0, 1)
    with pytest.raises(ValueError, match=r"\[E118\] --gpu-id 2: this machine has 2 CUDA devices"):
        check_gpu(0, 2)


#: In a fresh interpreter: `main_for(argv)`, the `main` of the command line that argv's command lives on.
MAIN_FOR = """
import typer.main
from spacy_bertram.cli import main as plugin_main
from bertram_experiments.cli import app as experiments_app, main as experiments_main
experiment_commands = set(typer.main.get_command(experiments_app).commands)
def main_for(argv):
    return experiments_main if argv[0] in experiment_commands else plugin_main
"""

REFUSE = (
    """
import contextlib, io, json, sys, time
started = time.perf_counter()
"""
    + MAIN_FOR
    + """
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            main_for(argv)(argv)
            code = 0
        except SystemExit as exit_:
            code = exit_.code
    heavy = sorted(m for m in ("torch", "transformers", "spacy", "thinc", "dask") if m in sys.modules)
    results.append([code, err.getvalue(), heavy, time.perf_counter() - started])
    started = time.perf_counter()
print(json.dumps(results))
"""
)


#: The expected refusal of a value out of its option's range: typer's usage error (exit code 2), not a coded one.
USAGE = "usage"


def test_a_refusal_imports_no_heavy_module(tmp_path, bertram_dir):
    """torch, spaCy and transformers took 8-13 s to import before these values were refused;
    now they are refused first, in the command line's own time (about 0.5 s), input paths included:
    a missing model or store, and a file that is no context store, took 5-19 s to be refused."""
    out = str(tmp_path / "out")
    (tmp_path / "text.sqlite").write_text("not a database\n")
    (tmp_path / "empty.sqlite").write_bytes(b"")
    (tmp_path / "half-model").mkdir()
    (tmp_path / "half-model" / "config.json").write_text("{}")
    store = str(context_store_of(tmp_path, ["a kumquat grew in the garden"] * 3))
    shutil.copy(store, tmp_path / "no-words.sqlite")
    with sqlite3.connect(tmp_path / "no-words.sqlite") as connection:  # a store built from an empty corpus
        connection.execute("DELETE FROM contexts")
        connection.execute("DELETE FROM words")
        connection.execute("UPDATE meta SET value = '0' WHERE key = 'vocab_size'")
    (tmp_path / "texts.txt").write_text("a quokka on Rottnest Island\n")
    (tmp_path / "damaged").mkdir()
    damaged = context_store_of(tmp_path / "damaged", corpus_lines(600))
    damage_middle(damaged)
    (tmp_path / "table").mkdir()  # a table of another model (its record alone: what a rerun compares first)
    table = {"format": "spacy-bertram-vector-table", "model_id": "another", "max_contexts": 8}
    (tmp_path / "table" / "table.json").write_text(json.dumps(table))
    cases = [
        (["rare-words", "/nonexistent", "a kumquat"], "E601"),
        (["rare-words", "en_no_such_pipeline", "a kumquat"], "E601"),
        (["rare-words", "half-model", "a kumquat"], "E284"),
        (["rare-words", bertram_dir, "a kumquat", "caf\udce9"], "E602"),
        (["rare-words", bertram_dir], "E603"),
        (["rare-words", bertram_dir, "--file", "missing.txt"], "E604"),
        (["train", "missing-store-dir", out], "E286"),
        (["targets", "text.sqlite", out], "E286"),
        (["vectors", bertram_dir, "empty.sqlite", out], "E286"),
        (["vectors", "/nonexistent", store, out], "E284"),
        (["vectors", bertram_dir, "no-words.sqlite", out], "E287"),
        (["synonym-recovery", bertram_dir, "--store", "text.sqlite", "--wordnet"], "E286"),
        (["intrinsic", bertram_dir, "--store", "text.sqlite"], "E286"),
        (["assemble", "baseline", "half-model", out], "E284"),
        (["assemble", "baseline", bertram_dir, out, "--injection", "sideways"], "E156"),
        (["rare-words", "model", "a kumquat", "--lang", "zz"], "E283"),
        (["rare-words", "model", "a kumquat", "--max-zipf", "nan"], "E039"),
        (["ner-folds", "wnut16", out, "--lang", "zz"], "E283"),
        (["targets", "store", out, "--max-words", "3"], "E256"),
        # refused after torch had loaded (6-22 s): paths, counts and the encoder told from files alone
        (["prepare", "missing-corpus", out], "E209"),
        (["prepare", "corpus", out, "--min-count", "-5"], USAGE),
        (["vectors", bertram_dir, store, out, "--words", "missing.txt"], "E259"),
        (["train", store, out, "--read-layer", "99"], "E068"),
        (["train", store, out, "--base-model", "/nonexistent/enc"], "E295"),
        (["targets", store, out, "--base-model", "/nonexistent/enc"], "E295"),
        (["train", store, out, "--epochs", "0", "0", "0"], "E294"),
        (["vectors", "model", "store", out, "--shard-size", "0"], USAGE),  # the job's setting, for Python too
        (["evaluate-originals", "model", "missing", out, "--bertram", "model"], "E284"),
        (["train-baseline", "missing", out, "--max-steps", "10"], "E284"),
        (["intrinsic", "model", "--fold", "2/2"], "E327"),
        # refused after the work (8-10 s), or not at all: a damaged store, a rerun with other settings, a context
        # store as --definitions
        (["vectors", bertram_dir, str(damaged), out, "--rare-only", "--workers", "0"], "E286"),
        (["texts-store", str(tmp_path / "texts.txt"), str(damaged), "--add"], "E187"),
        (["vectors", bertram_dir, store, str(tmp_path / "table"), "--workers", "0"], "E266"),
        (["train", store, out, "--definitions", store, "--no-progress"], "E509"),
    ]
    if cpu_only_torch() is not None:  # told without importing torch
        cases.append((["vectors", bertram_dir, store, out, "--workers", "0", "--gpu-id", "0"], "E117"))
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    stdout = subprocess.run(
        [sys.executable, "-c", REFUSE, json.dumps([argv for argv, _ in cases])],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        check=True,
    ).stdout
    for (argv, code), (exit_code, stderr, heavy, seconds) in zip(cases, json.loads(stdout.splitlines()[-1])):
        if code == USAGE:  # the option's own range, refused while typer parses it
            assert (exit_code, heavy) == (2, []) and "Invalid value for '--" in stderr, (argv, stderr, heavy)
        else:
            assert (exit_code, heavy) == (1, []), (argv, stderr, heavy)
            assert stderr.startswith(f"error: (spacy-bertram) [{code}] "), (argv, stderr)
        assert seconds < 2.0, (argv, seconds)
    assert not (tmp_path / "out").exists()
    said = {code: stderr for (argv, code), (_, stderr, _, _) in zip(cases, json.loads(stdout.splitlines()[-1]))}
    assert "[E187] The context store" in said["E286"] and f"{damaged} cannot be read whole" in said["E286"]
    assert "(model_id: 'another' -> '" in said["E266"]  # the setting that differs, named as train's E277 does
    assert sorted(p.name for p in (tmp_path / "table").iterdir()) == ["table.json"]


def test_version_prints_the_package_version_at_once():
    """`python -m spacy_bertram --version`: the version alone and exit 0, without torch, spaCy or transformers."""
    import spacy_bertram

    result = subprocess.run(
        [sys.executable, "-m", "spacy_bertram", "--version"], capture_output=True, text=True, cwd=ROOT
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{spacy_bertram.__version__}\n", "")
    script = (
        "import sys\nfrom spacy_bertram.cli import main\ntry:\n    main(['--version'])\n"
        "except SystemExit as exit_:\n    assert not exit_.code\n"
        "print([m for m in ('torch', 'transformers', 'spacy', 'thinc') if m in sys.modules])"
    )
    heavy = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=True)
    assert heavy.stdout.splitlines() == [spacy_bertram.__version__, "[]"]
    assert "--version" in invoke("--help").output


# -- the one output rule ----------------------------------------------------------------------

COMMANDS = sorted({*typer.main.get_command(app).commands, *EXPERIMENT_COMMANDS})


#: Every command that writes, with inputs that do not exist: the output check must come first. {out} is the
#: output, a directory (E007) or, for the commands that write one file, a file (E071).
WRITERS = {
    "prepare": ["x", "{out}"],
    "texts-store": ["x", "{out}"],
    "targets": ["x", "{out}"],
    "train": ["x", "{out}"],
    "convert-reference": ["x", "{out}"],
    "vectors": ["x", "x", "{out}", "--workers", "0"],
    "split": ["x", "{out}"],
    "train-baseline": ["x", "{out}"],
    "rarify": ["x", "x", "{out}", "--counts", "x"],
    "evaluate": ["x", "x", "{out}"],
    "evaluate-originals": ["x", "x", "{out}", "--bertram", "x"],
    "pool": ["x", "--output", "{out}"],
    "assemble": ["x", "x", "{out}"],
    "ner-folds": ["x", "{out}"],
    "ner-train": ["x", "{out}", "--bertram", "x"],
    "ner-evaluate": ["x", "x", "{out}"],
    "ner-full-evaluate": ["x", "x", "{out}"],
    "similarity": ["x", "x", "x", "--output", "{out}"],
    "intrinsic": ["x", "--output", "{out}"],
    "report": ["{out}"],
    "dictionary": ["{out}"],
    "synonym-recovery": ["x", "--wordnet", "--output", "{out}"],
    "learning-curve": ["x", "--output", "{out}"],
    "label-curve": ["textcat", "x", "{out}", "x", "--bertram", "x", "--stock-config", "x", "--bertram-config", "x"],
    "label-curve-report": ["x", "--output", "{out}"],
    "compare-runs": ["--before", "x", "--after", "x", "--output", "{out}"],
}
ONE_FILE = {
    "similarity": "m.json",
    "intrinsic": "m.json",
    "report": "r.md",
    "dictionary": "d.sqlite",
    "texts-store": "t.sqlite",
    "synonym-recovery": "s.json",
}


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


REFUSED_CHECK = (
    """
import json, sys
"""
    + MAIN_FOR
    + """
codes = []
for argv in json.loads(sys.argv[1]):
    try:
        main_for(argv)(argv)
    except SystemExit as exit_:
        codes.append(exit_.code)
heavy = ("torch", "transformers", "spacy", "spacy_transformers", "thinc", "dask")
print(json.dumps([codes, sorted(m for m in heavy if m in sys.modules)]))
"""
)


def test_a_refused_output_costs_no_heavy_import(tmp_path):
    """The check comes before the step is imported: torch and spaCy take seconds to import."""
    argvs = [writer_argv(command, foreign_output(command, tmp_path / command)) for command in sorted(WRITERS)]
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", REFUSED_CHECK, json.dumps(argvs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        check=True,
    ).stdout
    assert json.loads(out.strip().splitlines()[-1]) == [[1] * len(WRITERS), []]


@pytest.mark.parametrize("own, other", [("evaluate", "evaluate-originals"), ("evaluate-originals", "evaluate")])
def test_evaluate_and_evaluate_originals_redo_their_own_metrics_only(own, other, tmp_path):
    """Both write metrics.json and predictions.jsonl: each redoes its own run (marked), never the other's."""
    out = tmp_path / "metrics"
    out.mkdir()
    (out / "metrics.json").write_text(json.dumps({"written_by": own, "n_items": 3}), encoding="utf8")
    result = invoke(*writer_argv(other, out))
    assert (
        result.exit_code == 1
        and f"holds metrics.json (written by {own}), which {other} would overwrite" in " ".join(result.output.split())
    ), result.output
    result = invoke(*writer_argv(own, out))  # passes the check, then fails on the missing inputs
    assert result.exit_code == 1 and "[E007]" not in result.output
    assert json.loads((out / "metrics.json").read_text()) == {"written_by": own, "n_items": 3}
