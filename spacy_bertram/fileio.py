"""Crash-safe file writing: nothing is ever left half-written.

Every writer creates a temp file (or directory) beside the target and renames
it into place, so a killed process leaves either the old file or the new one.
Temp files are created private (0600/0700, so nobody reads a half-written
file); at the rename they get the permissions the process umask gives a newly
created file or directory, as `open` and `mkdir` would.

Nothing is overwritten or removed that the writer did not write. The rule has
one owner, `check_output_dir` (`check_output_file` for a one-file output), and
every writer, command or public save function, calls it before it imports its
step or loads a model: a directory is the writer's when it is missing or empty,
or holds something the writer wrote (by name, and where the writer keeps a
record, by that record: a JSON key, a first line, an SQLite store's format
(`output_mark`), a digest list); a file at a name the writer writes that the
writer did not write is refused, and so is a directory holding only others'
files, unless `--force` (`force=True`). Even then a writer replaces only what it
writes: `atomic_directory` carries every other entry of the directory it
replaces into the new one, and `remove_written` removes only the writer's own
entries. What a writer writes is a list of names or glob patterns (`owned`); a
pattern may reach inside a directory: `"bertram/cache"` is the writer's entry
inside `bertram/`, and `"bertram/"` says that the writer writes into `bertram/`
without owning the rest of it (its other files, at any depth, stay), as
`nlp.to_disk` writes each component's directory. The public writers
(`atomic_path`, `write_json_atomic`, `write_bytes_atomic`, `atomic_directory`)
call the rule themselves: an existing file is replaced only when it carries the
mark of what is written (`mark`), or with `overwrite=True`, which a writer that
has checked its output with the rule first passes. The output must also be
writable (`check_writable`), so a read-only one fails at once.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob
import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Collection, ContextManager, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

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


def output_entries(directory: PathLike) -> List[str]:
    """The names in an output directory, sorted, without the temp entries of a killed writer."""
    return sorted(p.name for p in Path(directory).iterdir() if not _is_temp(p.name))


#: The key of a JSON output, and what the first line of a text output says, naming the command that wrote it.
WRITTEN_BY = "written_by"
_TEXT_MARK = "<!-- written by spacy-bertram {command} -->"
_SQLITE_MAGIC = b"SQLite format 3\x00"
#: JSON outputs larger than this are not parsed for their mark (ours are small): they count as unmarked.
_MAX_MARKED_JSON = 64 << 20


def mark_json(data: Mapping[str, Any], command: str) -> Dict[str, Any]:
    """`data` with the key that says `command` wrote it, first: how its output check knows its own file."""
    return {WRITTEN_BY: command, **data}


def text_mark(command: str) -> str:
    """The first line of a text output `command` writes (a markdown comment: it does not show)."""
    return _TEXT_MARK.format(command=command)


def output_mark(path: PathLike) -> Optional[str]:
    """Who wrote the file at `path`, by its own record; None for an unmarked or unreadable file.

    A JSON object's `written_by` (else its `format`: a vector table's `table.json`), the command named
    by a text file's first line (`text_mark`), an SQLite file's `format` in its `meta` table (the
    stores record their format there), or a safetensors file's `format` in its header's metadata.
    """
    path = Path(path)
    try:
        with open(path, "rb") as file_:
            head = file_.read(len(_SQLITE_MAGIC))
            if head == _SQLITE_MAGIC:
                return _sqlite_format(path)
            header = _safetensors_header(file_, head, path.stat().st_size)
            if header is not None:
                return _json_mark(header.get("__metadata__"))
            file_.seek(len(head))
            first = (head + file_.readline(4096)).decode("utf8", errors="replace").split("\n", 1)[0]
        mark = _text_mark_of(first)
        if mark is not None:
            return mark
        if path.stat().st_size > _MAX_MARKED_JSON:
            return None
        data = json.loads(path.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    return _json_mark(data)


def _text_mark_of(first_line: str) -> Optional[str]:
    """The command a text's first line names (`text_mark`), or None."""
    first = first_line.strip()
    prefix, _, suffix = _TEXT_MARK.partition("{command}")
    if first.startswith(prefix) and first.endswith(suffix) and len(first) > len(prefix) + len(suffix):
        return first[len(prefix) : -len(suffix)]
    return None


def _json_mark(data: object) -> Optional[str]:
    if not isinstance(data, dict):
        return None
    mark = data.get(WRITTEN_BY, data.get("format"))
    return mark if isinstance(mark, str) else None


def _safetensors_header(file_: Any, head: bytes, size: int) -> Optional[Dict[str, Any]]:
    """A safetensors file's JSON header (it begins with its 8-byte little-endian length), else None."""
    length = int.from_bytes(head[:8], "little")
    if len(head) < 10 or head[8:9] != b"{" or not 2 <= length <= min(size - 8, _MAX_MARKED_JSON):
        return None
    file_.seek(8)
    try:
        header = json.loads(file_.read(length).decode("utf8"))
    except ValueError:
        return None
    return header if isinstance(header, dict) else None


def _sqlite_format(path: Path) -> Optional[str]:
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return row[0] if row and isinstance(row[0], str) else None


def _nearest_existing(path: Path) -> Path:
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable(path: PathLike, *, command: str, replaces: bool = False) -> None:
    """Refuse an output that cannot be written, before any work: a read-only directory or file system
    would otherwise fail with a raw OSError after the work, or leave part of the output behind.

    Probed where the writes go: inside an existing output directory (and beside it too where the
    command `replaces` it, through a temp directory beside it), else in its nearest existing parent.
    The probe creates and removes a temp file, so it also holds for root, whom permission bits do
    not stop (an immutable directory, a read-only mount); a killed probe is a temp entry
    `clean_stale_temps` removes.
    """
    target = Path(path)
    if target.is_dir():
        directories = [target, _nearest_existing(target.parent)] if replaces else [target]
    else:
        directories = [_nearest_existing(target.parent)]
    for directory in directories:
        try:
            fd, probe = tempfile.mkstemp(dir=str(directory), prefix=".spacy-bertram-probe.", suffix=".tmp")
        except OSError as err:
            raise ValueError(
                Errors.E070.format(
                    command=command, target=str(target), directory=str(directory), err=err.strerror or err
                )
            ) from err
        os.close(fd)
        os.unlink(probe)


def check_output_dir(
    path: PathLike,
    owned: Sequence[str],
    *,
    command: str,
    force: bool = False,
    replaces: bool = False,
    marked: Collection[str] = (),
    written: Optional[Collection[str]] = None,
    own_directory: bool = False,
    force_hint: str = "pass --force",
    mark: Optional[str] = None,
) -> None:
    """Refuse an output directory where the writer would overwrite what it did not write, or that cannot
    be written: the one rule of every writer.

    Writers resume or redo their own runs, so a directory is the writer's when
    it is missing or empty, or holds one of `owned` (names or glob patterns of
    what it writes at its top level); anything else in it stays where it is,
    since writers replace only their own entries. A file at one of those names
    that the writer did not write would be overwritten, so the directory is
    refused: files named in `marked` say who wrote them (`mark_json`), and
    `written`, where the writer keeps a record of its files (a digest list),
    lists the names that record vouches for (a file in `marked` is the writer's
    when its mark is `mark`, by default the command's name). A pattern of `owned`
    that reaches inside a directory (`"bertram/cache"`, `"bertram/"`) makes that
    directory one of the writer's names. A directory that is not empty and
    holds nothing of the writer's is refused too: it is someone else's (unless
    it is the writer's `own_directory`, one it names inside its own output).
    Temp entries of a killed run do not count. `force` (`--force`, named by
    `force_hint` in the message) skips these checks; the output must be
    writable anyway (beside it too where the writer `replaces` the directory
    through a temp directory).
    """
    target = Path(path)
    if not force and target.exists():
        if not target.is_dir():
            raise ValueError(Errors.E006.format(command=command, target=str(target)))
        _check_owned(target, _heads(owned), command, marked, written, own_directory, force_hint, mark or command)
    check_writable(target, command=command, replaces=replaces)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _heads(owned: Sequence[str]) -> List[str]:
    """The top-level names of `owned` (a pattern inside a directory names that directory)."""
    return [pattern.split("/", 1)[0] for pattern in owned]


def _inside(name: str, owned: Sequence[str]) -> Optional[List[str]]:
    """The patterns of `owned` inside the directory `name` (`"name/"` gives `""`: the writer writes into it,
    owning nothing else there); None where no pattern reaches inside it."""
    inner = [
        rest
        for head, slash, rest in (pattern.partition("/") for pattern in owned)
        if slash and fnmatch.fnmatchcase(name, head)
    ]
    return inner or None


def _check_owned(
    target: Path,
    owned: Sequence[str],
    command: str,
    marked: Collection[str],
    written: Optional[Collection[str]],
    own_directory: bool,
    force_hint: str,
    mark: str,
) -> None:
    names = output_entries(target)
    marks = {n: output_mark(target / n) for n in names if n in marked}
    clashes = [
        f"{n} (written by {m})" if m else f"{n} (not marked as written by {command})"
        for n, m in marks.items()
        if m != mark
    ]
    if written is not None:
        clashes += [
            f"{n} (not written by {command}, or changed since)"
            for n in names
            if _matches(n, owned) and n not in marked and n not in written
        ]
    why = None
    if clashes:  # a name it writes, but another's file: it would be overwritten
        why = f"holds {', '.join(clashes)}, which {command} would overwrite"
    elif names and not own_directory and not any(_matches(n, owned) for n in names):
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        why = f"is not empty and holds nothing {command} wrote ({shown})"
    if why is not None:
        raise ValueError(Errors.E007.format(command=command, target=str(target), force=force_hint, why=why))


def check_output_file(
    path: PathLike, *, command: str, force: bool = False, mark: Optional[str] = None, force_hint: str = "--force"
) -> None:
    """Refuse a one-file output that exists and was not written by `command`, or cannot be written.

    The file says who wrote it (`output_mark`): `mark` (default: the command's name) means it is a
    previous output of the command, which it replaces. `force` (the `--force` option, named by
    `force_hint` in the message) replaces any file; a directory is never replaced.
    """
    _check_own_file(Path(path), command, force, mark, force_hint)
    check_writable(path, command=command)


def _check_own_file(target: Path, command: str, force: bool, mark: Optional[str], force_hint: str) -> None:
    if target.is_dir():
        raise ValueError(Errors.E072.format(command=command, target=str(target)))
    if not force and (target.exists() or target.is_symlink()):
        found, expected = output_mark(target), mark or command
        if found != expected:
            what = f"is marked {found!r}, not {expected!r}" if found else "carries no mark of a spacy-bertram command"
            raise ValueError(Errors.E071.format(command=command, target=str(target), found=what, force=force_hint))


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
        if path.name.endswith(".old") and not (path.parent / path.name[1 : -len(".old")]).exists():
            os.replace(path, path.parent / path.name[1 : -len(".old")])
        else:
            _remove(path)
        touched.append(path)
    return touched


@contextlib.contextmanager
def _temp_file_beside(target: Path) -> Iterator[Path]:
    """A fresh temp file name beside `target` (its folder made); on the way out, whatever is still under that
    name is removed, with the files named after it (SQLite's `-wal`, `-shm`): the writers below put the temp
    into place first, and nothing of it is left either way."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(target, is_dir=False)
    try:
        yield tmp
    finally:
        for leftover in (tmp, *tmp.parent.glob(glob.escape(tmp.name) + "-*")):
            _remove(leftover)


#: How the public writers' refusals name the way to replace a file anyway.
OVERWRITE_HINT = "pass overwrite=True"


def atomic_path(path: PathLike, *, overwrite: bool = False, mark: Optional[str] = None) -> ContextManager[Path]:
    """Yield a temp file path beside `path`; on success it replaces `path` in one rename.

    An existing file at `path` is replaced only where it carries `mark` (`output_mark`: what the caller
    writes is marked so, and the file is a previous output of its own), or with `overwrite=True` (what
    a writer passes once the rule, `check_output_dir` or `check_output_file`, has let it write there);
    else E071 before anything is written. A directory at `path` is never replaced (E072).
    """
    return _atomic_file(Path(path), overwrite, mark, "atomic_path")


@contextlib.contextmanager
def _atomic_file(target: Path, overwrite: bool, mark: Optional[str], writer: str) -> Iterator[Path]:
    _check_own_file(target, writer, overwrite, mark, OVERWRITE_HINT)
    with _temp_file_beside(target) as tmp:
        yield tmp
        apply_umask(tmp)
        os.replace(tmp, target)


@contextlib.contextmanager
def new_file(path: PathLike) -> Iterator[Path]:
    """Yield a temp file beside `path`; on success it is linked into place where `path` is still free, never
    over a file (one that another process made meanwhile is kept, and is the file). The temp, and the files
    named after it, are removed in every case: nothing but `path` is left."""
    target = Path(path)
    with _temp_file_beside(target) as tmp:
        yield tmp
        apply_umask(tmp)
        try:
            os.link(tmp, target)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not target.exists():
                os.replace(tmp, target)


@contextlib.contextmanager
def atomic_directory(path: PathLike, owned: Sequence[str], *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temp directory beside `path`; on success it replaces `path` in one rename.

    Only the writer's entries are replaced: every entry of the old directory that matches none of
    `owned` (names or glob patterns of what the writer writes there) is carried into the new one
    first, as a hard link (a copy where the file system has none), so it survives the swap unchanged;
    the old entries that match `owned` go with the old directory (a stale part never lingers). A
    pattern inside a directory (`"bertram/cache"`, `"bertram/"`) makes the writer's directory one it
    writes into: there (and in every directory below a `"NAME/"`) the old entries the new directory
    lacks are carried too, but for those the patterns inside it name. `path` is checked first
    (`check_output_dir`: not a file, not a directory of others' files alone) unless `overwrite`, which
    a writer that checked it with its own record passes.
    """
    target = Path(path)
    if not overwrite:
        check_output_dir(target, owned, command="atomic_directory", replaces=True, force_hint=OVERWRITE_HINT)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_beside(target, is_dir=True)
    try:
        yield tmp
        apply_umask(tmp)  # before the carried entries join: the user's files keep their own modes
        if target.is_dir():
            _carry_foreign_entries(target, tmp, owned)
        if target.is_dir() and _exchange(tmp, target):
            pass  # the old directory is now at tmp, removed below: no moment without `target`
        elif target.exists():
            backup = target.parent / f".{target.name}.old"
            _remove(backup)
            os.replace(target, backup)
            os.replace(tmp, target)
            _remove(backup)  # the previous directory, or a file that was in the way
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            _remove(tmp)


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, destination, follow_symlinks=False)


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _carry_foreign_entries(old: Path, new: Path, owned: Sequence[str], into: bool = False) -> None:
    """Carry the entries of `old` that are not the writer's into `new`. `into`: `old` is a directory the writer
    writes into (`"NAME/"`), where what the new directory holds is the writer's and the rest is not."""
    for name in output_entries(old):
        source, destination = old / name, new / name
        inner = _inside(name, owned)
        if _is_real_dir(source) and (inner is not None or into):
            if destination.exists() and not _is_real_dir(destination):
                continue  # the writer wrote a file there now
            made = not destination.exists()
            if made:
                destination.mkdir()
                shutil.copystat(source, destination)
            _carry_foreign_entries(source, destination, [p for p in inner or () if p], into or "" in (inner or ()))
            if made and not any(destination.iterdir()):
                destination.rmdir()
        elif _matches(name, [p for p in owned if "/" not in p]) or destination.exists() or destination.is_symlink():
            continue
        elif _is_real_dir(source):
            shutil.copytree(source, destination, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(str(source), str(destination))


def remove_written(path: PathLike, owned: Sequence[str], keep_directory: bool = False) -> None:
    """Remove the entries of directory `path` that match `owned` (what a writer wrote there), and the
    directory itself once nothing else is in it (unless `keep_directory`: a writer's output directory that
    it goes on writing): a file someone else put there stays, with its directory. In a directory that a
    pattern reaches inside (`"shards/shard-*"`), only what those patterns name is removed."""
    directory = Path(path)
    if not directory.is_dir() or directory.is_symlink():
        return
    for name in output_entries(directory):
        inner = _inside(name, owned)
        if inner is not None and _is_real_dir(directory / name):
            if any(inner):
                remove_written(directory / name, [p for p in inner if p])
        elif _matches(name, [p for p in owned if "/" not in p]):
            _remove(directory / name)
    for name in [p.name for p in directory.iterdir() if _is_temp(p.name)]:
        _remove(directory / name)
    if not keep_directory and not any(directory.iterdir()):
        directory.rmdir()


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
            _remove(tmp)
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


def write_json_atomic(path: PathLike, data: object, indent: Optional[int] = 2, *, overwrite: bool = False) -> None:
    """`data` as JSON, through a temp file and a rename. An existing file is replaced where it carries the mark
    `data` carries (`mark_json`'s `written_by`, else a `format`), or with `overwrite=True` (`atomic_path`)."""
    with _atomic_file(Path(path), overwrite, _json_mark(data), "write_json_atomic") as tmp:
        with open(tmp, "w", encoding="utf8") as file_:
            json.dump(data, file_, ensure_ascii=False, indent=indent)


def write_bytes_atomic(path: PathLike, data: bytes, *, overwrite: bool = False) -> Path:
    """Write `data` to a temp file beside `path`, then rename it into place; returns the path. An existing file is
    replaced where it carries the mark `data` begins with (`text_mark`), or with `overwrite=True` (`atomic_path`)."""
    mark = _text_mark_of(data[:4096].split(b"\n", 1)[0].decode("utf8", errors="replace"))
    with _atomic_file(Path(path), overwrite, mark, "write_bytes_atomic") as tmp:
        write_file(tmp, data)
    return Path(path)
