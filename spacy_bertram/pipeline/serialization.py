"""Checked parts: a component's state saved as named parts of bytes, loaded back whole or not at all.

The component's `to_disk` / `to_bytes` go through spaCy's `util.to_disk` / `util.to_bytes` with its
parts, given as a dict of part name -> function returning the part's bytes (None: nothing to save),
and its cfg (a JSON object): `seal` computes every part's bytes first (a failing serializer writes
nothing) and adds a `cfg` part holding the cfg and the name and digest of every other part, last.
On disk, `staged_parts` writes each part to a temp file and renames them only once all are written
(cfg last), so a save that fails (full disk, a file-size limit, an exception) leaves the previous
save as it was; parts the new save does not write are then removed, so an old cache never lingers.

`from_disk` / `from_bytes` collect each part's bytes through `util.from_disk` (`read_file`) /
`util.from_bytes` (`unpack`, which names bytes that are no map of parts), and `read_parts` checks
them, then reads them with a dict of part name -> reader (bytes -> value); what to do with the values
is the component's business. Loading requires every part cfg lists (a missing model would otherwise
leave an untrained network serving), checks each against its digest before any reader runs, and
names the file of any problem. A part left out with `exclude` is not touched. Parts are bytes the
component's own objects write (safetensors, JSON, msgpack), never a pickle. Saving a whole pipeline
at once is `pipeline_save.py`'s.
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Collection, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import srsly
from spacy import util

from ..errors import Errors
from ..fileio import check_output_dir, remove_written, staged_files

CFG = "cfg"
#: The parts the `bertram` component's save writes besides cfg, in its order (the component's `_parts`).
SAVED_PARTS = ("model", "frequencies", "cache", "vector_table")
#: A part's bytes when saved (None: nothing to save).
Writer = Callable[[], Optional[bytes]]
#: A part's value from its bytes (ValueError, KeyError or TypeError: the bytes are bad).
Reader = Callable[[bytes], Any]
#: The loaded cfg (None when excluded) and each loaded part's value.
Loaded = Tuple[Optional[Dict[str, Any]], Dict[str, Any]]


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def seal(writers: Mapping[str, Writer], cfg: Mapping[str, Any], exclude: Collection[str]) -> Dict[str, bytes]:
    """Every part's bytes, then cfg (with the digests of the others) last."""
    parts: Dict[str, bytes] = {}
    for name, write in writers.items():
        data = write() if name not in exclude else None
        if data is not None:
            parts[name] = data
    if CFG not in exclude:
        sealed = {**cfg, "parts": {name: digest(data) for name, data in parts.items()}}
        parts[CFG] = srsly.json_dumps(sealed).encode("utf8")
    return parts


@contextmanager
def staged_parts(path: Path, names: Iterable[str], exclude: Collection[str]) -> Iterator[Callable[[Path, bytes], None]]:
    """A writer of part files into the directory `path` (`stage(file_path, data)`, for `util.to_disk`): each goes
    to a temp file, and all are renamed into place together, in the order written, once the block ends without an
    error (none otherwise); then each of `names` this save neither wrote nor excluded is removed."""
    path.mkdir(parents=True, exist_ok=True)
    written: List[str] = []
    with staged_files() as files:

        def stage(file_path: Path, data: bytes) -> None:
            files.stage(file_path, data)
            written.append(file_path.name)

        yield stage
    # parts this save left out on purpose: no stale copies
    remove_written(path, [name for name in names if name not in written and name not in exclude], keep_directory=True)


def read_file(found: Dict[str, bytes], file_path: Path) -> None:
    """A reader for `util.from_disk`: the part's bytes into `found`, where its file is (`read_parts` judges a
    missing one)."""
    if file_path.is_file():
        found[file_path.name] = file_path.read_bytes()


def unpack(data: bytes, setters: Dict[str, Callable[[Any], Any]], exclude: Iterable[str]) -> None:
    """`util.from_bytes`, with named errors for bytes that are not msgpack (E148) or not a map of parts (E149)."""
    try:
        msg = util.from_bytes(data, setters, exclude)
    except ValueError as err:
        raise ValueError(Errors.E148.format(err=err)) from err
    except TypeError:  # a number or a string, where the parts are looked up
        msg = None
    if not isinstance(msg, dict):
        raise ValueError(Errors.E149)


def parse_cfg(data: bytes, where: str, names: Collection[str], strings: Iterable[str] = ()) -> Dict[str, Any]:
    """The cfg part, checked: a JSON object whose `parts` maps part `names` to digests, whose `strings` keys
    are strings or null."""
    try:
        cfg = srsly.json_loads(data.decode("utf8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ValueError(Errors.E139.format(where=where, err=err)) from err
    if not isinstance(cfg, dict):
        raise ValueError(Errors.E140.format(where=where, cfg_type=type(cfg).__name__))
    for key in strings:
        if not isinstance(cfg.get(key), (str, type(None))):
            raise ValueError(Errors.E141.format(where=where, key=key, value=cfg[key]))
    parts = cfg.get("parts")  # every save lists its parts: without the list nothing vouches for them
    if not isinstance(parts, dict) or not all(k in names and isinstance(v, str) for k, v in parts.items()):
        raise ValueError(Errors.E142.format(where=where, names=sorted(names), parts=parts))
    return cfg


def read_parts(
    fetch: Callable[[str], Any],
    readers: Mapping[str, Reader],
    exclude: Iterable[str],
    where: Callable[[str], str],
    *,
    strings: Iterable[str] = (),
) -> Loaded:
    """Check, then read, the parts that `fetch(name)` returns (None: absent); errors name `where(name)`.
    strings: cfg keys whose values must be strings or null."""
    exclude = set(exclude)

    def fetch_bytes(name: str) -> Optional[bytes]:
        data = fetch(name)
        if data is not None and not isinstance(data, bytes):
            raise ValueError(Errors.E143.format(where=where(name), data_type=type(data).__name__))
        return data

    cfg: Optional[Dict[str, Any]] = None
    if CFG not in exclude:
        data = fetch_bytes(CFG)
        if data is None:
            raise ValueError(Errors.E144.format(where=where(CFG)))
        cfg = parse_cfg(data, where(CFG), readers, strings)
    listed = cfg.get("parts") if cfg is not None else None
    checked: Dict[str, bytes] = {}  # every part is checked before any is read
    for name in readers:
        if name in exclude:
            continue
        data = fetch_bytes(name)
        if listed is not None and name not in listed:
            data = None  # not saved with this cfg: a leftover it does not vouch for
        if data is None:
            if listed is not None and name in listed:
                raise ValueError(Errors.E145.format(where=where(name), needed=f"{where(CFG)} lists it"))
            continue
        if listed is not None and digest(data) != listed[name]:
            raise ValueError(Errors.E146.format(where=where(name), cfg_where=where(CFG)))
        checked[name] = data
    values: Dict[str, Any] = {}
    for name, data in checked.items():
        try:
            values[name] = readers[name](data)
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(Errors.E147.format(where=where(name), err=err)) from err
    return cfg, values


def check_parts_target(path: Path, names: Collection[str], command: str, overwrite: bool = False) -> None:
    """The output rule (`fileio.check_output_dir`) for a component's own `to_disk`: a file at `path` is refused
    (a directory never replaces it); a file at one of the part `names` that the saved cfg does not list is
    refused unless `overwrite`, since the save would replace it. Other files in the directory stay."""
    if path.exists() and not path.is_dir():
        raise ValueError(Errors.E006.format(command=command, target=str(path)))
    check_output_dir(
        path,
        list(names),
        command=command,
        force=overwrite,
        written=listed_parts(path, names),
        own_directory=True,
        force_hint="pass overwrite=True",
    )


def listed_parts(path: Path, names: Collection[str]) -> List[str]:
    """The part files in `path` that a save wrote: cfg and the parts it lists (a cfg from before the list of
    parts vouches for every part name); none where cfg is missing or not a save's cfg."""
    try:
        cfg = srsly.json_loads((path / CFG).read_text(encoding="utf8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return []
    parts = cfg.get("parts") if isinstance(cfg, dict) else None
    if isinstance(cfg, dict) and parts is None:
        return list(names)
    return [CFG, *(name for name in parts if name in names)] if isinstance(parts, dict) else []
