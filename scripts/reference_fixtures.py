#!/usr/bin/env python
"""Make the test fixtures of the paper's reference implementation, github.com/timoschick/bertram:
`python scripts/reference_fixtures.py --reference DIR [--out tests/fixtures/reference]`.

DIR is a checkout of that repository; its code is run, never copied. The script builds the environment
that code runs in (a venv of its own: Python 3.11, torch, transformers 2.1.1, jsonpickle, numpy; made
once in --venv and reused), then runs scripts/reference_runner.py there. The runner makes tiny random
BERT and RoBERTa checkpoints with the reference's own classes, saves them with its own save methods,
loads them back with its BertramWrapper and infers the vectors of a set of cases. The output directory
gets one folder a checkpoint, `cases.json` (the cases, the expected vectors, the rows the reference
fed its encoder) and a README saying how it was made. Running it twice writes the same bytes.

The output and the venv follow the file rule every writer follows: the script replaces only what it
wrote (a directory holding someone else's files is refused without --force), through a temp directory
renamed into place, so a killed run leaves the previous fixtures as they were.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the runner, for its checkpoint names
from bertram_experiments.errors import Errors
from reference_runner import CHECKPOINTS  # scripts/reference_runner.py (its top level imports the stdlib only)
from spacy_bertram.project_support import atomic_directory, check_output_dir, mark_json, output_mark, text_mark

COMMAND = "reference_fixtures"
ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "reference_runner.py"
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "reference"
#: What the reference's inference needs, pinned so that every machine builds the same environment.
REQUIREMENTS = ("torch==2.13.0", "transformers==2.1.1", "jsonpickle==4.1.4", "numpy==2.4.6")
#: The record that says a venv is this script's, and what it holds.
ENV_STAMP = "reference-env.json"
#: The modules of the reference the runner imports.
REFERENCE_MODULES = ("bertram.py", "input_processor.py", "ngram_models.py", "utils.py", "log.py")
CASES = "cases.json"
README = "README.md"


class FixtureError(RuntimeError):
    """A step of the fixtures failed; the message names it and what to do."""


def default_venv() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "spacy-bertram" / "reference-env"


def check_reference(reference: Path) -> None:
    missing = [name for name in REFERENCE_MODULES if not (reference / name).is_file()]
    if missing:
        raise FixtureError(Errors.E196.format(reference=str(reference), missing=", ".join(missing)))


def python_version(python: str) -> str:
    """The version of the interpreter the venv is made from (and recorded with it)."""
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print('.'.join(map(str, sys.version_info[:3])))"],
            capture_output=True,
            text=True,
        )
    except OSError:
        done = None
    if done is None or done.returncode != 0:
        raise FixtureError(Errors.E197.format(python=python))
    return done.stdout.strip()


def _run(command: List[str], message: str, **fields: str) -> None:
    """`command` in the runner's environment; `message` (an E-code's text) with the end of its output if it fails."""
    done = subprocess.run(command, capture_output=True, text=True, env=runner_env())
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-2000:]
        raise FixtureError(message.format(returncode=done.returncode, command=" ".join(command), tail=tail, **fields))


def runner_env() -> Dict[str, str]:
    """This environment without what would put the project's Python on the venv's path, one thread, and no
    bytecode written into the reference's checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def ensure_env(venv: Path, python: str, force: bool) -> Path:
    """The venv's interpreter: the venv is reused when its record names this Python and these requirements,
    else made anew in a temp directory that replaces it once pip has installed everything."""
    wanted = {"python": python_version(python), "requirements": list(REQUIREMENTS)}
    stamp = venv / ENV_STAMP
    if output_mark(stamp) == COMMAND:
        recorded = json.loads(stamp.read_text(encoding="utf8"))
        if {key: recorded.get(key) for key in wanted} == wanted:
            return venv / "bin" / "python"
    check_output_dir(venv, [ENV_STAMP], command=COMMAND, force=force, replaces=True, marked=[ENV_STAMP])
    print(f"Making the reference's environment in {venv} (pip install {' '.join(REQUIREMENTS)})", flush=True)
    with atomic_directory(venv, owned=["*"]) as tmp:
        _run([python, "-m", "venv", str(tmp)], Errors.E198, venv=str(venv))
        _run([str(tmp / "bin" / "python"), "-m", "pip", "install", "-q", *REQUIREMENTS], Errors.E198, venv=str(venv))
        (tmp / ENV_STAMP).write_text(json.dumps(mark_json(wanted, COMMAND), indent=2) + "\n", encoding="utf8")
    return venv / "bin" / "python"


def reference_commit(reference: Path) -> Optional[str]:
    try:
        done = subprocess.run(["git", "-C", str(reference), "rev-parse", "HEAD"], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def dumps(value: Any, indent: int = 0) -> str:
    """JSON with each list of numbers or strings on one line: a vector, a row's tokens read as one."""
    pad = " " * (indent + 2)
    if isinstance(value, dict) and value:
        items = [f"{pad}{json.dumps(key)}: {dumps(item, indent + 2)}" for key, item in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list) and any(isinstance(item, (dict, list)) for item in value):
        return "[\n" + ",\n".join(pad + dumps(item, indent + 2) for item in value) + "\n" + " " * indent + "]"
    return json.dumps(value, ensure_ascii=False)


README_TEXT = """# Fixtures made by the paper's reference implementation

Made by the code of the BERTRAM paper, github.com/timoschick/bertram at commit
{commit}, run in an environment of its own (Python {python}, torch {torch},
transformers {transformers}), with

    python scripts/reference_fixtures.py --reference CHECKOUT --out tests/fixtures/reference

where CHECKOUT is a clone of that repository. The script imports the reference's modules from the
checkout and writes every file here with the reference's own classes and save methods; running it
again writes the same bytes.

Each folder is one checkpoint in the reference's format, around a tiny random encoder (2 layers,
hidden size 32, intermediate size 64, 64 positions) with every BERTRAM weight drawn at random:

{checkpoints}

Each holds:

- `pytorch_model.bin`, `config.json`: `model.save_pretrained` (transformers 2.1.1's format: a
  torch state dict, and the encoder's config without a `model_type`)
- `bertram_config.json`: `BertramConfig.save` (jsonpickle)
- `input_processor.json`, `input_processor.json.vocab`: `InputProcessor.save` (jsonpickle; the
  `.vocab` file is the word list the n-gram table is built from when the processor is loaded;
  `bert_model` and `vocab_file` name the checkpoint folder itself and the list it was copied from)
- the tokenizer: `vocab.txt` (WordPiece) or `vocab.json` and `merges.txt` (byte-level BPE), with
  `tokenizer_config.json` and `special_tokens_map.json`, read by the reference's slow tokenizers
  and by today's fast ones alike

`cases.json` holds, per checkpoint, its transformer class, mode, `max_seq_length`, n-gram table
(id order) and cases. A case is a word and its contexts (none, one, three, eight; contexts longer
than `max_seq_length`, cut on either side of the mask; a context without the word, which the
reference skips; the word twice in a context; the word next to punctuation, which the reference
does not mask; runs of whitespace; a second word; a word none of whose n-grams has an id), with
what the reference's `BertramWrapper.infer_vector` returns (`vector`, float32 values written in
full) and the steps on the way: the word's `ngrams` and `ngram_ids`, the n-gram vector
(`form_vector`), the attentive-mimicking weights of the used contexts (`weights`; null without
contexts, where the vector is the n-gram vector), the indices of the `skipped` contexts, and for
each used context its row (`tokens`, `input_ids`, before the zero padding to `max_seq_length`) and
the position read from the encoder's output (`mask_position`).
"""


def write_outputs(out: Path, reference: Path) -> None:
    """cases.json as the runner wrote it, with the reference's commit and this script's mark; the README."""
    data = json.loads((out / CASES).read_text(encoding="utf8"))
    commit = reference_commit(reference)
    data = mark_json({"reference": {"repository": "github.com/timoschick/bertram", "commit": commit}, **data}, COMMAND)
    (out / CASES).write_text(dumps(data) + "\n", encoding="utf8")
    names = "\n".join(f"- `{name}`: {kind}, mode {mode}" for name, kind, mode, *_ in CHECKPOINTS)
    readme = README_TEXT.format(commit=commit or "unknown", checkpoints=names, **data["versions"])
    (out / README).write_text(text_mark(COMMAND) + "\n" + readme, encoding="utf8")


def make_fixtures(reference: Path, out: Path, venv: Path, python: str, force: bool = False) -> None:
    reference = reference.resolve()
    check_reference(reference)
    owned = [CASES, README, *(name for name, *_ in CHECKPOINTS)]
    check_output_dir(out, owned, command=COMMAND, force=force, replaces=True, marked=[CASES, README])
    interpreter = ensure_env(venv, python, force)
    with atomic_directory(out, owned) as tmp:
        _run(
            [str(interpreter), str(RUNNER), "--reference", str(reference), "--out", str(tmp)],
            Errors.E199,
            reference=str(reference),
        )
        write_outputs(tmp, reference)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, type=Path, help="a checkout of github.com/timoschick/bertram")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the fixtures' directory (default: %(default)s)")
    parser.add_argument("--venv", type=Path, default=default_venv(), help="the reference's venv (default: %(default)s)")
    parser.add_argument(
        "--python", default="python3.11", help="the Python the venv is made from (default: %(default)s)"
    )
    parser.add_argument("--force", action="store_true", help="write into an --out or --venv that holds others' files")
    args = parser.parse_args(argv)
    try:
        make_fixtures(args.reference, args.out, args.venv, args.python, args.force)
    except (FixtureError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"Wrote {len(CHECKPOINTS)} checkpoints and {CASES} to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
