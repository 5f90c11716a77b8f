#!/usr/bin/env python
"""Write docs/errors.md from the error catalogues: `python scripts/errors_doc.py`.

The plugin's codes (spacy_bertram/errors.py) come first, then the project's experiments' own
(bertram_experiments/errors.py), which a user of the component never meets.

`--check` writes nothing and exits with 1 if docs/errors.md is out of date
(tests/test_errors.py runs the same comparison). The catalogue is read with
`ast`, not imported, so the script needs neither the package installed nor spaCy.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "spacy_bertram" / "errors.py"
EXPERIMENTS_CATALOGUE = ROOT / "bertram_experiments" / "errors.py"
DOC = ROOT / "docs" / "errors.md"
#: "    # E0xx: the model, ..." opens a group of codes in the catalogue ("# W0xx" the warnings).
GROUP = re.compile(r"^    # ([EW]\dxx): (.+)$")
CLASSES = ("Errors", "Warnings")

HEADER = """# Error codes

Every error spacy-bertram raises begins with the package and its code:
`(spacy-bertram) [E024] token_budget must be a positive number of tokens, got 0`. The message
names the setting, file or input at fault and what to do about it; `{name}` below stands for the
value filled in when the error is raised. A command prints `error: (spacy-bertram) [E...] ...`
and exits with 1. Warnings (`W...`, Python's `warnings.warn`, a `UserWarning`) are written the
same way; the work goes on, and the message says what was left out.

The codes live in `spacy_bertram/errors.py` (`Errors.E024`, `Warnings.W001`), grouped by area;
the project's experiments (`python -m bertram_experiments`, not part of the installed package) add
their own in `bertram_experiments/errors.py`, listed last. No code has two meanings. This page is
generated from both: `python scripts/errors_doc.py` (the tests fail when it is out of
date). The numbers are spacy-bertram's own and unrelated to spaCy's codes of the same form, which
is what the "(spacy-bertram)" in front says: when spaCy wraps one of ours (an `nlp.pipe` worker
error reads `[E871] ... (spacy-bertram) [E121] ...`), look up the inner code here and the outer
one in spaCy's documentation.
"""


def catalogue(path: Path = CATALOGUE) -> List[Tuple[str, str, List[Tuple[str, str]]]]:
    """(group code, group title, [(code, message), ...]) in the catalogue's order."""
    source = path.read_text(encoding="utf8")
    messages = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name in CLASSES:
            for statement in node.body:
                if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
                    messages[statement.lineno] = (statement.targets[0].id, statement.value.value)
    groups: List[Tuple[str, str, List[Tuple[str, str]]]] = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = GROUP.match(line)
        if match:
            groups.append((match.group(1), match.group(2), []))
        elif number in messages:
            groups[-1][2].append(messages[number])
    return groups


def cell(message: str) -> str:
    """A message as a code span in a table cell: pipes escaped, line breaks kept as <br>."""
    parts = [f"`` {line.replace('|', chr(92) + '|')} ``" for line in message.split("\n")]
    return "<br>".join(parts)


EXPERIMENTS_HEADER = """# The experiments' codes

Raised by the project's experiments (`python -m bertram_experiments`: rarification, evaluation,
synonym recovery, NER, the report), from `bertram_experiments/errors.py`; the installed plugin
never raises them.
"""


def render_groups(path: Path, level: str) -> List[str]:
    out = []
    for group, title, entries in catalogue(path):
        out.append(f"{level} {group}: {title}\n")
        out.append("| code | message |")
        out.append("|---|---|")
        out.extend(f"| {code} | {cell(message)} |" for code, message in entries)
        out.append("")
    return out


def render(path: Path = CATALOGUE, experiments: Path = EXPERIMENTS_CATALOGUE) -> str:
    return "\n".join([HEADER, *render_groups(path, "##"), EXPERIMENTS_HEADER, *render_groups(experiments, "##")])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit with 1 if docs/errors.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DOC.read_text(encoding="utf8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC} is out of date: run python scripts/errors_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text, encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
