"""The error catalogues (the plugin's and the experiments'): unique codes by area, formatted messages, the docs in
sync, no messages outside them."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from bertram_experiments.errors import Errors as ExperimentErrors
from bertram_experiments.errors import Warnings as ExperimentWarnings
from spacy_bertram.errors import Errors, Warnings
from spacy_bertram.model.inputs import validate_word

from tests.util import load_script

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "spacy_bertram"
CATALOGUE = PACKAGE / "errors.py"
EXPERIMENTS = ROOT / "bertram_experiments"
EXPERIMENTS_CATALOGUE = EXPERIMENTS / "errors.py"
#: (catalogue file, its classes, the sources that raise its codes)
CATALOGUES = {
    "plugin": (CATALOGUE, (Errors, Warnings), lambda: list(PACKAGE.rglob("*.py"))),
    "experiments": (
        EXPERIMENTS_CATALOGUE,
        (ExperimentErrors, ExperimentWarnings),
        lambda: [*EXPERIMENTS.rglob("*.py"), *(ROOT / "scripts").glob("*.py")],
    ),
}


def load_doc_script():
    return load_script("errors_doc")


def raw_messages(catalogue: type = Errors) -> Dict[str, str]:
    """code -> message as written in this class (the metaclass adds the code only on attribute access); the
    experiments' classes extend the plugin's, so only their own codes."""
    return {name: value for name, value in vars(catalogue).items() if not name.startswith("__")}


def messages_of(which: str) -> Dict[str, str]:
    errors, warnings = CATALOGUES[which][1]
    return {**raw_messages(errors), **raw_messages(warnings)}


def all_messages() -> Dict[str, str]:
    return {**messages_of("plugin"), **messages_of("experiments")}


@pytest.mark.parametrize("which", sorted(CATALOGUES))
def test_codes_are_unique_and_in_order_within_their_area(which):
    """Read with ast: a code assigned twice would silently keep only the last message."""
    groups = load_doc_script().catalogue(CATALOGUES[which][0])
    codes = [code for _, _, entries in groups for code, _ in entries]
    assert codes and len(codes) == len(set(codes)) == len(messages_of(which))
    assert all(re.fullmatch(r"[EW]\d{3}", code) for code in codes), codes
    assert codes == sorted(codes, key=lambda code: (code[0] == "W", code))
    for group, _, entries in groups:
        assert entries and all(code[1] == group[1] for code, _ in entries), group


def test_no_code_means_two_things():
    """The experiments' classes extend the plugin's: a code in both would hide the plugin's message."""
    assert not set(messages_of("plugin")) & set(messages_of("experiments"))
    assert ExperimentErrors.E024 == Errors.E024 and ExperimentErrors.E412.startswith("(spacy-bertram) [E412] ")


class Filler:
    """Any placeholder's value: formats under any spec (`{agreement:.2f}`) and conversion."""

    def __format__(self, spec: str) -> str:
        return "x"

    def __repr__(self) -> str:
        return "'x'"


@pytest.mark.parametrize("code", sorted(all_messages()))
def test_every_message_is_text_with_named_placeholders_and_one_prefix(code):
    raw = all_messages()[code]
    assert raw.strip() == raw and len(raw) > 10
    fields = [field for _, field, _, _ in string.Formatter().parse(raw) if field is not None]
    assert all(field.isidentifier() for field in fields), f"{code}: positional or dotted placeholder in {fields}"
    catalogue = ExperimentErrors if code[0] == "E" else ExperimentWarnings  # extends the plugin's: reads both
    text = getattr(catalogue, code).format(**{field: Filler() for field in fields})
    assert text.startswith(f"(spacy-bertram) [{code}] ")
    # The package and the code are the only prefix: no "bertram: " or "[components...] " in front of the text.
    assert not re.match(r"\[|bertram: ", raw), raw


@pytest.mark.parametrize("which", sorted(CATALOGUES))
def test_every_code_is_raised_somewhere(which):
    """A code no module of its side (the package; the experiments and the project's scripts) uses is a message left
    behind when its check went."""
    catalogue, (errors, _), sources = CATALOGUES[which]
    used = set()
    for path in sources():
        used.update(re.findall(r"Errors\.(E\d{3})\b", path.read_text(encoding="utf8")))
    assert not set(raw_messages(errors)) - used


def test_the_docs_list_every_code_and_are_in_sync():
    doc = (ROOT / "docs" / "errors.md").read_text(encoding="utf8")
    missing = [code for code in all_messages() if f"| {code} |" not in doc]
    assert not missing
    assert doc == load_doc_script().render(CATALOGUE, EXPERIMENTS_CATALOGUE), "run python scripts/errors_doc.py"


EXCEPTION_NAME = re.compile(r"(Error|Exception)$")
#: Exceptions whose wording is Python's own protocol, not a message for users: a module's `__getattr__`
#: says what `import x; x.missing` says. Internal invariants are `assert`s, which this scan does not see.
PYTHON_PROTOCOL = {"AttributeError"}


def inline_messages(source: str) -> List[Tuple[int, str]]:
    """(line, exception) of each exception built with a message written in place: a string, an
    f-string or a formatted string literal, wherever it is built (raise, return, an argument)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        name = ast.unparse(node.func).split(".")[-1]
        message = node.args[0]
        if isinstance(message, ast.Call) and isinstance(message.func, ast.Attribute):
            message = message.func.value  # "...".format(...)
        elif isinstance(message, ast.BinOp):
            message = message.left  # "..." % args, "..." + text
        literal = isinstance(message, ast.JoinedStr) or (
            isinstance(message, ast.Constant) and isinstance(message.value, str)
        )
        if EXCEPTION_NAME.search(name) and literal and name not in PYTHON_PROTOCOL:
            found.append((node.lineno, name))
    return found


def test_the_scan_finds_inline_messages_and_passes_catalogued_ones():
    source = (
        "raise ValueError(f'bad {x}')\n"
        "raise KeyError('missing')\n"
        "err = DatasetError('{} is bad'.format(x))\n"
        "raise ValueError(Errors.E001.format(module=m, name=n))\n"
        "raise typer.BadParameter('typer keeps its style')\n"
    )
    assert inline_messages(source) == [(1, "ValueError"), (2, "KeyError"), (3, "DatasetError")]


def test_no_inline_error_message_outside_the_catalogue():
    inline = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *EXPERIMENTS.rglob("*.py")]):
        if path not in (CATALOGUE, EXPERIMENTS_CATALOGUE):
            found = inline_messages(path.read_text(encoding="utf8"))
            if found:
                inline[path.relative_to(ROOT).as_posix()] = found
    assert not inline, "move these messages to spacy_bertram/errors.py (bertram_experiments/errors.py)"


def test_a_code_reads_as_spacy_does_with_the_package_in_front():
    assert Errors.E024.format(setting="token_budget", bounds="a whole number from 1 to 10", token_budget=0) == (
        "(spacy-bertram) [E024] token_budget must be a number of encoder tokens per call, a whole number from 1 to "
        "10, got 0"
    )
    with pytest.raises(ValueError, match=r"^\(spacy-bertram\) \[E019\] Cannot infer a BERTRAM vector for the empty"):
        validate_word("  ")
    assert Warnings.W013.startswith("(spacy-bertram) [W013] WordNet not found")


def warn_calls(source: str) -> List[Tuple[int, str]]:
    """(line, first argument) of each `warnings.warn(...)` / `warn(...)` and each `logger.warning(...)`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("warnings.warn", "warn") or name.endswith("logger.warning"):
                found.append((node.lineno, ast.unparse(node.args[0]) if node.args else name))
    return found


def test_every_warning_is_a_catalogued_warnings_warn():
    """One mechanism (`warnings.warn`, as spaCy), one catalogue (`Warnings.W...`): no logger warnings,
    no inline warning text."""
    bad = {}
    for path in sorted([*PACKAGE.rglob("*.py"), *EXPERIMENTS.rglob("*.py")]):
        for line, call in warn_calls(path.read_text(encoding="utf8")):
            if not re.match(r"Warnings\.W\d{3}\b", call):
                bad.setdefault(path.relative_to(ROOT).as_posix(), []).append((line, call[:60]))
    assert not bad, "use warnings.warn(Warnings.W...) from spacy_bertram/errors.py"
    assert warn_calls("warnings.warn(f'x {y}')\nlogger.warning('z')\nwarnings.warn(Warnings.W001)\n") == [
        (1, "f'x {y}'"),
        (2, "'z'"),
        (3, "Warnings.W001"),
    ]


@pytest.mark.parametrize("which", sorted(CATALOGUES))
def test_every_warning_code_is_used(which):
    catalogue, (_, warnings), sources = CATALOGUES[which]
    used = set()
    for path in sources():
        used.update(re.findall(r"Warnings\.(W\d{3})\b", path.read_text(encoding="utf8")))
    codes = {name for name in vars(warnings) if re.fullmatch(r"W\d{3}", name)}
    assert codes and not codes - used
