"""Crash-safe file writing: nothing is ever left half-written.

Every writer creates a temp file (or directory) beside the target and renames
it into place, so a killed process leaves either the old file or the new one.
Temp files are created private (0600/0700, so nobody reads a half-written
file); at the rename they get the permissions the process umask gives a newly
created file or directory, as `open` and `mkdir` would.
"""
from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from .errors import Errors
from .types import PathLike


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as file_:
            for line in file_:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: PathLike) -> None:
    """Give a temp file or directory (and all it holds) the mode `open`/`mkdir` would give it.

    Recursive because some writers (safetensors, for one) create private files too.
    """
    mask = current_umask()
    root = Path(path)
    paths = [root, *root.rglob("*")] if root.is_dir() else [root]
    for item in paths:
        if not item.is_symlink():
            os.chmod(item, (0o777 if item.is_dir() else 0o666) & ~mask)


def _temp_beside(target: Path, is_dir: bool) -> Path:
    if is_dir:
        return Path(tempfile.mkdtemp(dir=str(target.parent), prefix=f".{target.name}.", suffix=".tmp"))
    fd, name = tempfile.mkstemp(dir=str(target.parent), prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    return Path(name)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where that is not available."""
    global _RENAMEAT2
    if _RENAMEAT2 is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _RENAMEAT2 = libc.renameat2
        except (OSError, AttributeError):
            _RENAMEAT2 = False
    if _RENAMEAT2 is False:
        return False
    at_fdcwd, rename_exchange = -100, 2
    return _RENAMEAT2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


_RENAMEAT2: Any = None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _is_temp(name: str) -> bool:
    """A temp entry this module leaves behind when killed (`.NAME.*.tmp`, `.NAME.old`)."""
    return name.startswith(".") and name.endswith((".tmp", ".old"))


def check_output_dir(path: PathLike, owned: Sequence[str], *, command: str, force: bool = False,
                     replaces: bool = False) -> None:
    """Refuse an output directory that holds files this command did not write.

    Commands resume or redo their own runs, so a directory is the command's
    when it is missing or empty, or holds one of `owned` (names or glob
    patterns of what the command writes at its top level). A command that
    replaces the whole directory (`replaces`) also refuses one holding
    anything else, since the rename would delete it. Temp entries of a killed
    run do not count. `force` (the `--force` option) skips the check.
    """
    target = Path(path)
    if force or not target.exists():
        return
    if not target.is_dir():
        raise ValueError(Errors.E006.format(command=command, target=str(target)))
    names = sorted(p.name for p in target.iterdir() if not _is_temp(p.name))
    ours = [n for n in names if any(fnmatch.fnmatchcase(n, pattern) for pattern in owned)]
    foreign = [n for n in names if n not in ours]
    if not foreign or (ours and not replaces):
        return
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    why = (f"holds files {command} did not write ({shown}), which replacing the directory would delete"
           if ours else f"is not empty and holds nothing {command} wrote ({shown})")
    raise ValueError(Errors.E007.format(command=command, target=str(target), why=why,
                                        deleted=" (those files are deleted)" if replaces else ""))


def clean_stale_temps(directory: PathLike, target: Optional[str] = None) -> List[Path]:
    """Undo what a killed writer left under `directory`: temp entries are removed, and a
    `.NAME.old` (the previous NAME, mid-swap) is put back when NAME is missing, else removed.

    With `target`, only the temp entries of `directory/target` (beside it), else every
    one below `directory`. `atomic_path` cleans up after exceptions itself; only SIGKILL
    (or a power cut) leaves these. Call it only where no other process is writing.
    Returns what was removed or restored.
    """
    root = Path(directory)
    found = root.glob(f".{target}.*") if target is not None else root.rglob(".*")
    touched = []
    for path in sorted(found, key=lambda p: len(p.parts)):
        if not (path.exists() or path.is_symlink()) or not _is_temp(path.name):
            continue  # gone with a parent removed before it
        if path.name.endswith(".old") and not (path.parent / path.name[1:-len(".old")]).exists():
            os.replace(path, path.parent / path.name[1:-len(".old")])
        else:
            _remove(path)
        touched.append(path)
    return touched


@contextlib.contextmanager
def atomic_path(path: PathLike, is_dir: bool = False) -> Iterator[Path]:
    """Yield a temp path beside `path`; on success it replaces `path` in one rename."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(target, is_dir)
    try:
        yield tmp
        apply_umask(tmp)
        if is_dir and target.is_dir() and _exchange(tmp, target):
            pass  # the old directory is now at tmp, removed below: no moment without `target`
        elif is_dir and target.exists():
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
            _remove(tmp)


def write_file(path: PathLike, data: bytes) -> None:
    """Write bytes to a (temp) file: the one place where component and model bytes hit the disk."""
    with open(path, "wb") as file_:
        file_.write(data)


class StagedFiles:
    """Several files replaced together: all temp files are written first, then renamed.

    A failure while writing (disk full, a file-size limit, an exception in a
    serializer) renames nothing, so the previous files stay as they were. The
    renames happen in the order the files were staged: stage the file that
    vouches for the others (a manifest) last.
    """

    def __init__(self) -> None:
        self._staged: List[Tuple[Path, Path]] = []

    def stage(self, path: PathLike, data: bytes) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temp_beside(target, is_dir=False)
        self._staged.append((tmp, target))
        write_file(tmp, data)

    def commit(self) -> None:
        for tmp, _ in self._staged:
            apply_umask(tmp)
        for tmp, target in self._staged:
            os.replace(tmp, target)
        self._staged.clear()

    def discard(self) -> None:
        for tmp, _ in self._staged:
            if tmp.exists():
                tmp.unlink()
        self._staged.clear()


@contextlib.contextmanager
def staged_files() -> Iterator[StagedFiles]:
    """`with staged_files() as files: files.stage(path, data)`; committed only on success."""
    files = StagedFiles()
    try:
        yield files
        files.commit()
    finally:
        files.discard()


def write_json_atomic(path: PathLike, data: object, indent: Optional[int] = 2) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf8") as file_:
            json.dump(data, file_, ensure_ascii=False, indent=indent)


def write_bytes_atomic(path: PathLike, data: bytes) -> Path:
    """Write `data` to a temp file beside `path`, then rename it into place; returns the path."""
    with atomic_path(path) as tmp:
        write_file(tmp, data)
    return Path(path)
