"""`python -m spacy_bertram COMMAND` (console script: `spacy-bertram COMMAND`).

The commands are defined beside what they run and registered on `app`:
corpus and BERTRAM in `training/commands.py` (prepare, targets, train, vectors);
rarification and evaluation, the paper's section 4, in `evaluation/commands.py`
(split, train-baseline, rarify, evaluate, pool, similarity, intrinsic, report,
assemble); named entities with and without bertram in `evaluation/ner/commands.py`
(ner-folds, ner-train, ner-evaluate). `cli.py` imports them and runs `app`; the command modules import
`app` from here, so there is no import cycle.

This module and the command modules import only typer and light settings:
torch, transformers and spaCy are imported inside each command, so `--help`
answers at once.

Every step that runs a model takes `--gpu-id` the spaCy way (-1: CPU); every
command's `--help` shows each option's default and meaning, as plain text wrapped
at the terminal's width: typer's boxed (rich) tables cut long option names,
help words and defaults with "…" at 80 columns.
Errors in the input (missing files, empty datasets, unknown labels, WordNet not
installed) end the command with a one-line message and exit code 1.
"""
import json
import logging
from typing import Any, Callable, List, NoReturn, Optional

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption


def summary(help_text: Optional[str]) -> str:
    """A command's help cut to its first paragraph, on one line: what the command list shows of it."""
    return " ".join((help_text or "").partition("\f")[0].strip().split("\n\n")[0].split())


class SummaryGroup(TyperGroup):
    """Lists each command with its whole summary, wrapped: click cuts it to one line ending in "..."."""

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:  # formatter: click's HelpFormatter
        commands = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        rows = [(name, summary(command.short_help or command.help))
                for name, command in commands if command is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


from .dictionary.wordnet import WordNetMissingError

app = typer.Typer(
    name="spacy-bertram",
    cls=SummaryGroup,
    help=__doc__.split("\n\n")[0] + "\n\nBERTRAM for spaCy transformer pipelines.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # click's plain help: it wraps what does not fit, where rich's tables cut it
)

GPU_HELP = "GPU id (spaCy's --gpu-id); -1 for the CPU"
FORCE_HELP = "write into OUTPUT even if it is not empty and holds nothing this command wrote (what it replaces is lost)"
FORCE_FILE_HELP = "replace the output file even if this command did not write it"


class MultiValueCommand(TyperCommand):
    """A command whose options of several values (`--epochs 100 20 30`) never take an option as a value.

    click hands the next N words to such an option whatever they are, so
    `--epochs 1 1 --no-progress` read the flag as the third epoch count.
    """

    def parse_args(self, ctx: typer.Context, args: List[str]) -> List[str]:
        for param in self.params:
            if not isinstance(param, TyperOption) or param.nargs < 2:
                continue
            for index, word in enumerate(args):
                if word not in param.opts:
                    continue
                values = args[index + 1 : index + 1 + param.nargs]
                given = [v for v in values if not v.startswith("--")]
                if len(given) < param.nargs and (len(given) < len(values) or index + param.nargs >= len(args)):
                    after = f" before {values[len(given)]}" if len(given) < len(values) else ""
                    raise typer.BadParameter(
                        f"{word} takes {param.nargs} values ({param.help}), got {len(given)}"
                        f"{' (' + ' '.join(given) + ')' if given else ''}{after}", ctx=ctx, param=param)
        return super().parse_args(ctx, args)


def fail(err: BaseException) -> NoReturn:
    typer.echo(f"error: {err}", err=True)
    raise typer.Exit(code=1)


def setup_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")


def echo_json(data: dict) -> None:
    typer.echo(json.dumps(data, indent=1, default=str))


def run_checked(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a step; input errors become `error: ...` and exit code 1."""
    try:
        return function(*args, **kwargs)
    except (ValueError, WordNetMissingError, FileNotFoundError, OSError) as err:
        fail(err)
