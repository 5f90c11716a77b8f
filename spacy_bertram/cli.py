"""`python -m spacy_bertram COMMAND` (console script: `spacy-bertram COMMAND`).

The commands are defined beside what they run and registered on `app` here:
corpus and BERTRAM in `training/commands.py` (prepare, targets, train, vectors);
rarification and evaluation, the paper's section 4, in `evaluation/commands.py`
(split, train-baseline, rarify, evaluate, pool, similarity, intrinsic, report,
assemble); named entities with and without bertram in `evaluation/ner/commands.py`
(ner-folds, ner-train, ner-evaluate).

Every step that runs a model takes `--gpu-id` the spaCy way (-1: CPU); every
command's `--help` shows each option's default and meaning.
Errors in the input (missing files, empty datasets, unknown labels, WordNet not
installed) end the command with a one-line message and exit code 1.
"""
import json
import logging
import sys
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(
    name="spacy-bertram",
    help=__doc__.split("\n\n")[0] + "\n\nBERTRAM for spaCy transformer pipelines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

GPU_HELP = "GPU id (spaCy's --gpu-id); -1 for the CPU"


def fail(err: BaseException) -> None:
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(code=1)


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")


def echo_json(data: dict) -> None:
    typer.echo(json.dumps(data, indent=1, default=str))


def run_checked(function, *args, **kwargs):
    """Run a step; input errors become `error: ...` and exit code 1."""
    from .evaluation.wordnet import WordNetMissingError

    try:
        return function(*args, **kwargs)
    except (ValueError, WordNetMissingError, FileNotFoundError, OSError) as err:
        fail(err)


def prog_name() -> str:
    """The name usage lines show: `python -m spacy_bertram` or the console script's."""
    return "python -m spacy_bertram" if Path(sys.argv[0]).name == "__main__.py" else "spacy-bertram"


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script and `python -m spacy_bertram` entry point."""
    app(args=argv, prog_name=prog_name())


# The commands register themselves on `app` when imported.
from .training import commands as _training_commands  # noqa: E402,F401
from .evaluation import commands as _evaluation_commands  # noqa: E402,F401
from .evaluation.ner import commands as _ner_commands  # noqa: E402,F401

if __name__ == "__main__":
    main(sys.argv[1:])
