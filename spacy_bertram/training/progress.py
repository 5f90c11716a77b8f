"""Progress bars of the training steps (and the project's experiments), made one way: spaCy's.

spaCy's commands pass tqdm `disable=None` when progress is asked for: tqdm then shows a bar on a
terminal and nothing where its stream is not one, so a log redirected to a file does not fill with
a redrawn bar per update. `progress=False` turns the bars off everywhere.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from tqdm import tqdm


def progress_bar(iterable: Optional[Iterable[Any]] = None, *, progress: bool = True, **kwargs: Any) -> tqdm:
    """A tqdm bar over `iterable` (or updated by hand, with `total=`) that draws only on a terminal
    when `progress` is on, and never when it is off; other keywords are tqdm's."""
    return tqdm(iterable, disable=None if progress else True, **kwargs)
