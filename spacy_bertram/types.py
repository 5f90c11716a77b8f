"""Type aliases shared by the package."""
from pathlib import Path
from typing import Union

PathLike = Union[str, Path]
"""A filesystem path: a `str` or a `pathlib.Path`."""
