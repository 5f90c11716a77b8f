"""The bounds of every count (spacy_bertram/bounds.py): each command line's whole-number options, refused out of
range while typer parses them, the Python checks, and the table of docs/configuration.md#bounds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Tuple

import pytest
import typer.main

from spacy_bertram.cli import app
from bertram_experiments.cli import app as experiments_app

ROOT = Path(__file__).resolve().parent.parent
#: Whole-number options that are no counts, each checked against the machine: a CUDA device torch has, a layer
#: the encoder has.
NOT_COUNTS = {"gpu_id", "read_layer"}


def whole_number_options() -> Iterator[Tuple[str, str, object]]:
    """(command line, command, option) for every option of int type (a tuple of ints too) of both command lines."""
    for module, application in (("spacy_bertram", app), ("bertram_experiments", experiments_app)):
        for name, command in sorted(typer.main.get_command(application).commands.items()):
            for param in command.params:
                annotation = str(param.type_descriptor.annotation)
                if re.search(r"\bint\b", annotation) and param.name not in NOT_COUNTS:
                    yield module, name, param


def test_every_count_option_has_a_lower_and_an_upper_bound_of_its_kind():
    """`texts-store --max-contexts` had no upper bound: 100000000 grew to 23.6 GB and was killed by the kernel."""
    options = list(whole_number_options())
    assert len(options) > 90  # both command lines, every command
    unbounded = [f"{module} {name} --{param.name}" for module, name, param in options if param.max is None]
    assert not unbounded, unbounded
    from spacy_bertram.bounds import COUNT_BOUNDS

    highs = {bound.high for bound in COUNT_BOUNDS.values()}
    assert all(param.max in highs and param.min is not None for _, _, param in options)
    assert all(param.min <= param.default <= param.max for _, _, param in options if isinstance(param.default, int))


def test_every_count_option_is_in_the_docs_table_whose_bounds_are_the_codes():
    from spacy_bertram.bounds import COUNT_BOUNDS

    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf8")
    section = text.split("\n## Bounds\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| ([\d,]+) \| ([\d,]+) \|", section, flags=re.M)
    documented = {kind: (int(low.replace(",", "")), int(high.replace(",", ""))) for kind, low, high in rows}
    assert documented == {kind: (bound.low, bound.high) for kind, bound in COUNT_BOUNDS.items()}
    options = sorted({f"--{param.name.replace('_', '-')}" for _, _, param in whole_number_options()})
    missing = [option for option in options if not re.search(rf"{re.escape(option)}(?![\w-])", section)]
    assert not missing, missing


#: Each value out of its option's bound, refused while typer parses it. On the code before the bounds the first two
#: raised a raw MemoryError and OverflowError after reading the texts, `vectors --min-count -1` was accepted, and a
#: seed above 2**32 - 1 reached numpy's seeding after the work began.
OUT_OF_BOUNDS = [
    (["texts-store", "texts.txt", "out.sqlite", "--max-contexts", "3000000000"], "--max-contexts"),
    (["texts-store", "texts.txt", "out.sqlite", "--max-contexts", "99999999999999999999"], "--max-contexts"),
    (["texts-store", "texts.txt", "out.sqlite", "--context-words", "99999999999999999999"], "--context-words"),
    (["prepare", "texts.txt", "out", "--max-contexts", "99999999999999999999"], "--max-contexts"),
    (["prepare", "texts.txt", "out", "--seed", "4294967296"], "--seed"),
    (["vectors", "model", "store", "out", "--min-count", "-1"], "--min-count"),
    (["vectors", "model", "store", "out", "--shard-size", "99999999999999999999"], "--shard-size"),
    (["train", "store", "out", "--pool-contexts", "10001"], "--pool-contexts"),
    (["pool", "texts.txt", "--output", "out", "--bootstrap-resamples", "1000000000"], "--bootstrap-resamples"),
]

REFUSE = r"""
import contextlib, io, json, sys, time
argv = json.loads(sys.argv[1])
from bertram_experiments.cli import main as experiments
from spacy_bertram.cli import main as plugin
results = []
for args in argv:
    err = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stderr(err):
        try:
            (experiments if args[0] == "pool" else plugin)(args)
            code = 0
        except SystemExit as exit_:
            code = exit_.code
        except BaseException as raised:  # what the code before the bounds raised
            code = type(raised).__name__
    heavy = sorted(m for m in ("torch", "transformers", "spacy", "thinc") if m in sys.modules)
    results.append([code, err.getvalue(), heavy, time.perf_counter() - started])
print(json.dumps(results))
"""


def test_a_count_out_of_bounds_is_refused_while_the_options_are_parsed(tmp_path):
    (tmp_path / "texts.txt").write_text("a quokka on Rottnest Island\n" * 40, encoding="utf8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    stdout = subprocess.run(
        [sys.executable, "-c", REFUSE, json.dumps([argv for argv, _ in OUT_OF_BOUNDS])],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=True,
    ).stdout
    for (argv, option), (code, stderr, heavy, seconds) in zip(OUT_OF_BOUNDS, json.loads(stdout.splitlines()[-1])):
        assert code == 2 and f"Invalid value for '{option}'" in stderr, (argv, code, stderr)
        assert heavy == [] and seconds < 2.0, (argv, heavy, seconds)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["texts.txt"]


def test_a_count_setting_is_checked_by_its_kind():
    from spacy_bertram.bounds import check_count, count_range

    assert count_range("contexts") == {"min": 1, "max": 10_000} and count_range("words", low=0)["min"] == 0
    assert check_count(10_000, "contexts_per_word", "contexts") == 10_000
    for value in (0, 10_001, 2**70, True, 2.0, "8"):
        with pytest.raises(ValueError, match=r"\[E052\] contexts_per_word must be a whole number from 1 to 10,000"):
            check_count(value, "contexts_per_word", "contexts")
    with pytest.raises(ValueError, match=r"\[E052\] --seed must be a whole number from 0 to 4,294,967,295, got -1"):
        check_count(-1, "--seed", "seed")
