"""Drawing a figure to a PNG file: matplotlib on its file-only backend, imported only when a plot is
drawn, and the file written whole or not at all (temp file, then rename)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from spacy_bertram.project_support import PathLike, write_bytes_atomic


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_png(fig: Any, path: PathLike, dpi: int = 100) -> Path:
    """Write `fig` to `path` atomically and close it (pyplot keeps every open figure)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    pyplot().close(fig)
    return write_bytes_atomic(path, buf.getvalue(), overwrite=True)
