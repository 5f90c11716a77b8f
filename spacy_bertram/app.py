"""`python -m spacy_bertram COMMAND` (console script: `spacy-bertram COMMAND`).

The commands are defined beside what they run and registered on `app`:
corpus and BERTRAM in `training/commands.py` (prepare, targets, train, vectors);
rarification and evaluation, the paper's section 4, in `evaluation/commands.py`
(split, train-baseline, rarify, evaluate, pool, similarity, intrinsic, report,
assemble). `cli.py` imports both and runs `app`; the command modules import
`app` from here, so there is no import cycle.

This module and the command modules import only typer and light settings:
torch, transformers and spaCy are imported inside each command, so `--help`
answers at once.

Every step that runs a model takes `--gpu-id` the spaCy way (-1: CPU); every
command's `--help` shows each option's default and meaning.
Errors in the input (missing files, empty datasets, unknown labels, WordNet not
installed) end the command with a one-line message and exit code 1.
"""
import json
import logging
from typing import Any, Callable, NoReturn

import typer

app = typer.Typer(
    name="spacy-bertram",
    help=__doc__.split("\n\n")[0] + "\n\nBERTRAM for spaCy transformer pipelines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

GPU_HELP = "GPU id (spaCy's --gpu-id); -1 for the CPU"
FORCE_HELP = "write into OUTPUT even if it is not empty and holds nothing this command wrote (what it replaces is lost)"


def fail(err: BaseException) -> NoReturn:
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(code=1)


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")


def echo_json(data: dict) -> None:
    typer.echo(json.dumps(data, indent=1, default=str))


def run_checked(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a step; input errors become `error: ...` and exit code 1."""
    from .evaluation.wordnet import WordNetMissingError

    try:
        return function(*args, **kwargs)
    except (ValueError, WordNetMissingError, FileNotFoundError, OSError) as err:
        fail(err)
