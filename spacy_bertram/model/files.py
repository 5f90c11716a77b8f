"""The files of a BERTRAM model directory and the digest list that vouches for them.

`digests.json`, written last by `storage.save_bertram`, holds the SHA-256 of
each file the save wrote: loading refuses a damaged or edited file by name, and
a writer knows which files of a directory are a save's (`written_files`), so it
never overwrites a file someone else put there (`check_model_dir`). Light (no
torch): the commands check a model directory before they import their step.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Dict, Set

from ..errors import Errors, Warnings
from ..fileio import check_output_dir
from ..rarity.frequencies import COUNTS_FILE
from ..types import MODEL_FILES, PathLike
from .reference import REFERENCE_FILES, is_reference_checkpoint

#: The files a save writes and vouches for in DIGESTS_FILE (counts.tsv where it was given).
DIGESTED_FILES = (*MODEL_FILES, COUNTS_FILE)
DIGESTS_FILE = "digests.json"
DIGEST_ALGORITHM = "sha256"
#: Everything a save writes in a model directory: any other entry is someone else's, and stays.
MODEL_DIR_ENTRIES = (*DIGESTED_FILES, DIGESTS_FILE)


def hash_file(path: PathLike, digest: Any) -> str:
    """Feed the file to `digest` (a hashlib object) block by block; returns its hex digest so far."""
    with open(path, "rb") as file_:
        for block in iter(lambda: file_.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_fingerprint(path: PathLike) -> str:
    """Content hash of a BERTRAM model directory: cache entries are valid for this model only.

    The three model files only, not digests.json or counts.tsv: adding them keeps the fingerprint (and
    the caches bound to it), and saving the same files again gives the same one.
    A checkpoint of the reference implementation's: its five files.
    """
    digest = hashlib.blake2b(digest_size=16)
    reference = is_reference_checkpoint(path) and not (Path(path) / MODEL_FILES[1]).exists()
    for name in REFERENCE_FILES if reference else MODEL_FILES:
        hash_file(Path(path) / name, digest)
    return digest.hexdigest()


def sha256_of(path: PathLike) -> str:
    return hash_file(path, hashlib.sha256())


def read_digests(path: PathLike) -> Dict[str, str]:
    """digests.json: file name -> SHA-256, for the files a save writes only."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf8"))
        files = data.get("files") if isinstance(data, dict) else None
        if not (
            isinstance(files, dict)
            and data.get("algorithm") == DIGEST_ALGORITHM
            and all(name in DIGESTED_FILES and isinstance(value, str) for name, value in files.items())
        ):
            raise ValueError(
                Errors.E204.format(
                    fields=f"'algorithm': {DIGEST_ALGORITHM!r} and 'files' (names of {', '.join(DIGESTED_FILES)} "
                    "to hex digests)"
                )
            )
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ValueError(Errors.E064.format(path=str(path), err=err)) from err
    return files


#: Model directories already warned about (W005) in this process: one warning per directory, however often
#: it is loaded (a command may read a model, then build the component that loads it again).
_WARNED_WITHOUT_DIGESTS: Set[str] = set()


def verify_digests(directory: PathLike) -> None:
    """Check every file of a model directory against digests.json, naming the first that differs.

    A directory whose digests.json was removed loads, with a warning (once per process).
    """
    directory = Path(directory)
    manifest = directory / DIGESTS_FILE
    if not manifest.is_file():
        if str(directory.resolve()) not in _WARNED_WITHOUT_DIGESTS:
            _WARNED_WITHOUT_DIGESTS.add(str(directory.resolve()))
            warnings.warn(Warnings.W005.format(directory=str(directory), digests=DIGESTS_FILE), stacklevel=3)
        return
    digests = read_digests(manifest)
    for name in DIGESTED_FILES:
        path = directory / name
        if name not in digests:
            if path.exists():
                raise ValueError(Errors.E063.format(path=str(path), manifest=str(manifest)))
        elif not path.is_file():
            raise ValueError(Errors.E062.format(path=str(path), manifest=str(manifest)))
        elif sha256_of(path) != digests[name]:
            raise ValueError(Errors.E061.format(path=str(path), manifest=str(manifest)))


def written_files(directory: PathLike) -> Set[str]:
    """The entries of a model directory a save wrote: digests.json, if it reads as one, and each file it
    lists whose content still matches. Nothing without a readable digest list (a directory without
    digests.json counts as not a save's: `force` replaces it)."""
    directory = Path(directory)
    manifest = directory / DIGESTS_FILE
    if not manifest.is_file():
        return set()
    try:
        digests = read_digests(manifest)
    except ValueError:
        return set()
    return {
        DIGESTS_FILE,
        *(
            name
            for name, value in digests.items()
            if (directory / name).is_file() and sha256_of(directory / name) == value
        ),
    }


def check_model_dir(
    path: PathLike,
    *,
    command: str = "save_bertram",
    force: bool = False,
    own_directory: bool = False,
    force_hint: str = "force=True",
) -> None:
    """The output rule (`fileio.check_output_dir`) for a model directory: its files must be a save's, by
    their digests, or be missing; files of others beside them stay where they are. `own_directory`: one a
    command names inside its own output (train's model/), which a user's notes alone do not make theirs."""
    target = Path(path)
    written = written_files(target) if target.is_dir() else set()
    check_output_dir(
        target,
        MODEL_DIR_ENTRIES,
        command=command,
        force=force,
        replaces=True,
        written=written,
        own_directory=own_directory,
        force_hint=force_hint,
    )
