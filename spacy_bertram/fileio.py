"""Crash-safe file writing: nothing is ever left half-written.

Every writer creates a temp file (or directory) beside the target and renames
it into place, so a killed process leaves either the old file or the new one.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Optional, Union

PathLike = Union[str, Path]


@contextlib.contextmanager
def atomic_path(path: PathLike, is_dir: bool = False) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success it replaces `path` in one rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if is_dir:
        tmp = Path(tempfile.mkdtemp(dir=str(target.parent), prefix=f".{target.name}.", suffix=".tmp"))
    else:
        fd, name = tempfile.mkstemp(dir=str(target.parent), prefix=f".{target.name}.", suffix=".tmp")
        os.close(fd)
        tmp = Path(name)
    try:
        yield tmp
        if is_dir and target.exists():
            backup = target.parent / f".{target.name}.old"
            if backup.exists():
                shutil.rmtree(backup)
            os.replace(target, backup)
            os.replace(tmp, target)
            shutil.rmtree(backup)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            if tmp.is_dir():
                shutil.rmtree(tmp)
            else:
                tmp.unlink()


def write_json_atomic(path: PathLike, data: object, indent: Optional[int] = 2) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf8") as file_:
            json.dump(data, file_, ensure_ascii=False, indent=indent)


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
