"""`python -m spacy_bertram COMMAND` (console script: `spacy-bertram COMMAND`).

The commands make and inspect a model and live beside this module in `cli/`, registered on `app`:
corpus and BERTRAM in `training.py` (prepare, texts-store, targets, train, vectors), definition stores in
`dictionary.py`, the rule's decisions in `rare_words.py` (rare-words). The package's `__init__` imports
them and runs `app`; the command modules import `app` from here, and the steps they run live in the
folders below `cli/` (training/, dictionary/, explain), so no import points up. The
paper's experiments are not part of the package: the project runs them (`python -m bertram_experiments`),
with this module's help layout and checks.

This module and the command modules import only typer and light settings:
torch, transformers and spaCy are imported inside each command, so `--help`
answers at once.

Every step that runs a model takes `--gpu-id` the spaCy way (-1: CPU); every
command's `--help` shows each option's default and meaning, as plain text wrapped
at the terminal's width: typer's boxed (rich) tables cut long option names,
help words and defaults with "…" at 80 columns.
Errors in the input (missing files, empty datasets, unknown labels, WordNet not
installed) end the command with a one-line message and exit code 1.

Each command checks its arguments at the top of its body, before it imports its
step (the options' ranges in typer's `min=` and `number_in`, `check_lang`, `check_made_by`, then `check_gpu`, the one
check that imports torch): a bad value costs a fraction of a second, not the
imports' 8-13 s, and nothing is written.
"""

import ast
import importlib.metadata
import importlib.util
import json
import logging
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, Union

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from ..dictionary.wordnet import WordNetMissingError
from ..errors import Errors
from ..torch_build import CUDA_EXTRA, cpu_only_reason, cpu_only_torch
from ..types import MODEL_FILES


def summary(help_text: Optional[str]) -> str:
    """A command's help cut to its first paragraph, on one line: what the command list shows of it."""
    return " ".join((help_text or "").partition("\f")[0].strip().split("\n\n")[0].split())


class SummaryGroup(TyperGroup):
    """Lists each command with its whole summary, wrapped: click cuts it to one line ending in "..."."""

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:  # formatter: click's HelpFormatter
        commands = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        rows = [
            (name, summary(command.short_help or command.help))
            for name, command in commands
            if command is not None and not command.hidden
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def command_line(name: str, help_text: str) -> typer.Typer:
    """A typer app with this package's help layout: the plugin's, and the project's experiments' beside it."""
    return typer.Typer(
        name=name,
        cls=SummaryGroup,
        help=help_text,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # click's plain help: it wraps what does not fit, where rich's tables cut it
    )


app = command_line("spacy-bertram", __doc__.split("\n\n")[0] + "\n\nBERTRAM for spaCy transformer pipelines.")


def print_version(value: bool) -> None:
    """--version: the package's version alone (for scripts and bug reports), from its light __init__, at once."""
    if value:
        from .. import __version__

        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def app_options(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=print_version, help="print spacy-bertram's version and exit"
    ),
) -> None:
    """The options of `python -m spacy_bertram` itself, before a command (typer's group callback)."""


GPU_HELP = "GPU id (spaCy's --gpu-id); -1 for the CPU"
INT8_ENCODER_HELP = "run BERTRAM's context encoder with int8 linear layers on the CPU (faster, not exact)"
FORCE_HELP = "write into OUTPUT even if it is not empty and holds nothing this command wrote (what it replaces is lost)"
FORCE_FILE_HELP = "replace the output file even if this command did not write it"
MAX_ZIPF_HELP = (
    "the bertram component's rule: rare = wordfreq Zipf below this and 2+ wordpieces "
    "of the encoder (3.0: about once per million words)"
)


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
                        f"{' (' + ' '.join(given) + ')' if given else ''}{after}",
                        ctx=ctx,
                        param=param,
                    )
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


# -- the arguments, checked before any heavy import and before any work ------------------------


def number_in(
    low: Optional[float] = None, high: Optional[float] = None, *, low_open: bool = False, high_open: bool = False
) -> Callable[[str], float]:
    """The parser of a float option with a range (typer's `parser=`; whole-number options use typer's
    `min=`): a value out of range is typer's usage error naming the option, before any work.

    Finite, because NaN passes every check written as "refuse x < 0" (all its comparisons are false)
    and infinity passes any lower bound, and both fail much later, after outputs were written; open
    bounds, which typer's min/max cannot say ("> 0" for a learning rate, "[0, 1)" for a share).
    """
    parts = []
    if low is not None:
        parts.append(f"{'above' if low_open else 'at least'} {low:g}")
    if high is not None:
        parts.append(f"{'below' if high_open else 'at most'} {high:g}")
    wanted = "a finite number" + (" " + " and ".join(parts) if parts else "")

    def parse(text: Union[str, float]) -> float:
        try:
            value = float(text)
        except ValueError:
            raise typer.BadParameter(f"must be {wanted}, got {text!r}") from None
        too_low = low is not None and (value <= low if low_open else value < low)
        too_high = high is not None and (value >= high if high_open else value > high)
        if not math.isfinite(value) or too_low or too_high:
            raise typer.BadParameter(f"must be {wanted}, got {text}")
        return value

    return parse


def _lang_aliases(spacy_dir: Path) -> Optional[Dict[str, str]]:
    """spaCy's aliases of its language codes ('eng' -> 'en': spacy.util.LANG_ALIASES), read from its
    source without importing it; None where they are not found there."""
    try:
        tree = ast.parse((spacy_dir / "util.py").read_text(encoding="utf8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LANG_ALIASES" for t in node.targets):
                return {alias: code for code, names in ast.literal_eval(node.value).items() for alias in names}
    except (OSError, SyntaxError, ValueError, AttributeError):
        pass
    return None


def check_lang(lang: str) -> None:
    """A language code spaCy knows, checked without importing spaCy (3-10 s): `spacy.blank(lang)`
    takes spacy/lang/<code>/, a language a package registers (the `spacy_languages` entry points)
    or an alias of a code ('eng'). Its ImportError [E048] was a traceback, after the model loaded."""
    spec = importlib.util.find_spec("spacy")  # finds the package without importing it
    spacy_dir = Path(list(spec.submodule_search_locations)[0]) if spec and spec.submodule_search_locations else None
    codes = {entry.name for entry in importlib.metadata.entry_points(group="spacy_languages")}
    if spacy_dir is not None:
        codes |= {init.parent.name for init in (spacy_dir / "lang").glob("*/__init__.py")}
        aliases = _lang_aliases(spacy_dir)
        if aliases is not None:
            if lang not in codes and aliases.get(lang) not in codes:
                raise ValueError(Errors.E283.format(lang=lang))
            return
    from spacy.util import get_lang_class  # spaCy laid out otherwise: ask it

    try:
        get_lang_class(lang)
    except ImportError:
        raise ValueError(Errors.E283.format(lang=lang)) from None


def check_made_by(path: Path, argument: str, command: str, files: Sequence[str]) -> None:
    """An input directory that `command` writes, with the files this command reads from it:
    a missing one names the argument and the command that makes it, not a bare [Errno 2]."""
    path = Path(path)
    if not path.is_dir():
        why = "is not a directory" if path.exists() else "does not exist"
    else:
        missing = [name for name in files if not (path / name).is_file()]
        if not missing:
            return
        why = "has no " + ", ".join(missing)
    raise ValueError(Errors.E284.format(argument=argument, path=str(path), why=why, command=command))


def pipeline_package(name: str) -> Optional[Path]:
    """The directory of the installed spaCy pipeline package `name` (`spacy package`'s output, pip-installed),
    found without importing it or spaCy; None where `name` is none. spaCy's own test (`spacy.util.is_package`,
    an installed distribution), and a meta.json beside its __init__.py: `spacy.load("spacy")` is no pipeline."""
    try:
        importlib.metadata.distribution(name)
        spec = importlib.util.find_spec(name)
    except (importlib.metadata.PackageNotFoundError, ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    directory = Path(list(spec.submodule_search_locations)[0])
    return directory if (directory / "meta.json").is_file() else None


def check_model(path: Union[str, Path], argument: str = "MODEL", pipeline: bool = False) -> None:
    """A trained BERTRAM directory (with `pipeline`: or what `spacy.load` takes, a saved pipeline directory or an
    installed pipeline package), known by its files, so that a wrong path fails before the imports and the
    model load that used to find it. A directory with some of a BERTRAM model's files is a damaged model."""
    path = Path(path)
    if pipeline and not any((path / name).is_file() for name in MODEL_FILES):
        if (path / "config.cfg").is_file() or (not path.exists() and pipeline_package(str(path)) is not None):
            return
        if path.is_dir():
            why = f"holds neither a pipeline (config.cfg) nor a BERTRAM model ({', '.join(MODEL_FILES)})"
        else:
            why = "is a file" if path.exists() else "is no directory and no installed pipeline package"
        raise ValueError(Errors.E601.format(argument=argument, model=str(path), why=why))
    check_made_by(path, argument, "train", MODEL_FILES)


def utf8_text(data: bytes, argument: str, lines: bool = False) -> str:
    """`data` as UTF-8 text, or a coded error naming `argument` and its first bad byte (by line where `lines`):
    text in a legacy encoding failed later, uncoded, where the encoder's tokenizer met its surrogates."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        newline = b"\n"
        where = f"line {data.count(newline, 0, err.start) + 1}" if lines else f"position {err.start + 1}"
        raise ValueError(Errors.E602.format(argument=argument, byte=data[err.start], where=where)) from None


def check_utf8_argument(text: str, argument: str) -> str:
    """A command-line argument as UTF-8 text: Python hands a non-UTF-8 one over with its bytes as surrogates
    ('caf\\udce9'), which no tokenizer can encode; `os.fsencode` gives the bytes back."""
    return utf8_text(os.fsencode(text), argument)


def check_store(path: Path, argument: str, words: bool = False) -> None:
    """A context store, opened and closed with sqlite3 alone (the format, the tables, a file cut short):
    the error names the argument, not a pipeline setting. `words`: it must hold some (a step that reads
    its words: nothing to do in an empty one)."""
    from ..context_store import open_context_store  # sqlite3 and this package's errors only

    try:
        with open_context_store(path) as store:
            empty = len(store) == 0
    except ValueError as err:
        raise ValueError(Errors.E286.format(argument=argument, err=str(err).rstrip("."))) from None
    if words and empty:
        raise ValueError(Errors.E287.format(argument=argument, path=str(path)))


def check_gpu(*gpu_ids: int, what: str = "--gpu-id") -> None:
    """Each GPU id >= 0 must be a CUDA device torch has here, before any work: a CPU-only torch
    failed at its first CUDA call ("Torch not compiled with CUDA enabled"), after outputs were
    written. A CPU-only build is told from torch/version.py, without importing torch (5-10 s)."""
    wanted = [gpu_id for gpu_id in gpu_ids if gpu_id >= 0]
    if not wanted:
        return
    version = cpu_only_torch() if "torch" not in sys.modules else None  # a loaded torch is asked (tests fake CUDA)
    if version is not None:
        raise ValueError(
            Errors.E117.format(what=what, gpu_id=wanted[0], why=cpu_only_reason(version), CUDA_EXTRA=CUDA_EXTRA)
        )
    from ..device import check_device

    for gpu_id in wanted:
        check_device(gpu_id, what)
