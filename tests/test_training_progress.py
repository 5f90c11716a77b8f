"""training/progress.py: the one way bars are made, spaCy's: drawn on a terminal, never into a redirected log."""

from __future__ import annotations

import io
import re
from pathlib import Path

from spacy_bertram.training.progress import progress_bar

ROOT = Path(__file__).parent.parent


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a console's stderr does."""

    def isatty(self) -> bool:
        return True


def drawn(stream: io.StringIO, progress: bool) -> str:
    for _ in progress_bar(range(50), progress=progress, file=stream, mininterval=0, desc="Counting"):
        pass
    bar = progress_bar(progress=progress, total=5, file=stream, mininterval=0, desc="Encoding")
    bar.update(5)
    bar.close()
    return stream.getvalue()


def test_a_bar_draws_on_a_terminal_only_and_never_when_progress_is_off():
    """`disable=not progress` drew every redraw into a log file (`train ... 2> log`); spaCy's `disable=None`
    lets tqdm turn itself off where its stream is no terminal."""
    assert "Counting" in drawn(Terminal(), progress=True) and "Encoding" in drawn(Terminal(), progress=True)
    assert drawn(io.StringIO(), progress=True) == ""
    assert drawn(Terminal(), progress=False) == ""


def test_every_bar_of_the_package_and_the_experiments_is_made_here():
    """One owner: no module calls tqdm itself (a call would bring back `disable=not progress`)."""
    own = ROOT / "spacy_bertram" / "training" / "progress.py"
    callers = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("spacy_bertram", "bertram_experiments", "scripts", "benchmarks")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != own
        for number, line in enumerate(path.read_text(encoding="utf8").splitlines(), 1)
        if re.search(r"\btqdm\(|\bimport tqdm|from tqdm import", line)
    ]
    assert callers == []
