"""Type aliases and names shared by the package (a leaf: it imports nothing of it)."""
from pathlib import Path
from typing import Union

PathLike = Union[str, Path]
"""A filesystem path: a `str` or a `pathlib.Path`."""

DOC_EXTENSION = "bertram"
"""`doc._.bertram`: token index -> BERTRAM vector, set by the component, read by the injection."""
