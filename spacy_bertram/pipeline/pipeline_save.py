"""Saving a whole pipeline at once: `save_pipeline`.

`nlp.to_disk` writes each component in place, and spacy-transformers'
`transformer/model` is not written through a temp file: a save killed there
leaves a pipeline that does not load. `save_pipeline` saves the whole
pipeline beside its target and swaps it in with one rename, replacing only
what a pipeline save writes there (the output rule, `fileio.check_output_dir`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, List, Optional, Union

import srsly

from ..fileio import atomic_directory, check_output_dir, clean_stale_temps
from ..types import FACTORY
from .serialization import CFG, SAVED_PARTS

#: What `nlp.to_disk` writes besides one entry per component (NAME, or NAME.json as the sentencizer writes).
PIPELINE_FILES = ("config.cfg", "meta.json", "tokenizer", "vocab")
COMPONENT_SUFFIXES = (".json", ".jsonl")


def saved_components(path: Path) -> Optional[List[str]]:
    """The component names a pipeline save at `path` lists (meta.json), or None where it is no save
    (config.cfg or meta.json missing, meta.json unreadable)."""
    try:
        meta = srsly.read_json(path / "meta.json") if (path / "config.cfg").is_file() else None
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict):
        return None
    names = meta.get("components") or [*meta.get("pipeline", []), *meta.get("disabled", [])]
    return [name for name in names if isinstance(name, str) and name]


def _component_entries(name: str) -> List[str]:
    try:
        return [name, *(Path(name).with_suffix(suffix).name for suffix in COMPONENT_SUFFIXES)]
    except ValueError:  # a name with no stem ("."): only the name itself
        return [name]


def pipeline_entries(components: Iterable[str], target: Path) -> List[str]:
    """What a pipeline save writes at `target`: spaCy's files, an entry per component, and the entries of the
    components a previous save there listed (stale once the pipeline has dropped them)."""
    names = [*components, *(saved_components(target) or [])] if target.is_dir() else list(components)
    return [*PIPELINE_FILES, *(entry for name in names for entry in _component_entries(name))]


def pipeline_owned(nlp: Any, target: Path) -> List[str]:
    """What a save of `nlp` owns at `target`, as `fileio` patterns: its entries (`pipeline_entries`); each
    directory among them is one the save writes into (`"vocab/"`, `"NAME/"`), as `nlp.to_disk` writes in place,
    so a file it does not write there stays; and the parts a `bertram` component's save may write, which go
    when the save no longer writes them (as its own `to_disk` removes them)."""
    entries = pipeline_entries(nlp.component_names, target)
    parts = [
        f"{name}/{part}"
        for name in nlp.component_names
        if nlp.get_pipe_meta(name).factory == FACTORY
        for part in (*SAVED_PARTS, CFG)
    ]
    return [*entries, *(f"{entry}/" for entry in entries), *parts]


def check_pipeline_target(target: Path, nlp: Any, overwrite: bool = False) -> List[str]:
    """The output rule (`fileio.check_output_dir`) for `save_pipeline`: a directory that is not a previous
    pipeline save (config.cfg and meta.json) and holds something, or a file, is refused unless
    `overwrite`; files beside a save's own entries, and inside its directories, stay where they are. The
    target must be writable anyway. Returns what the save owns at `target` (`pipeline_owned`)."""
    owned = pipeline_owned(nlp, target)
    written = pipeline_entries(nlp.component_names, target) if saved_components(target) is not None else []
    check_output_dir(
        target,
        owned,
        command="save_pipeline",
        force=overwrite,
        replaces=True,
        written=written,
        force_hint="overwrite=True",
    )
    return owned


def save_pipeline(
    nlp: Any, path: Union[str, Path], *, exclude: Iterable[str] = tuple(), overwrite: bool = False
) -> Path:
    """`nlp.to_disk` into a temp directory beside `path`, then one rename over it.

    A save that fails or is killed leaves the previous pipeline at `path`
    whole (`nlp.to_disk(path)` writes into it file by file); temp directories
    a killed save left beside it are removed by the next save. Only what the
    save writes is replaced: other files in `path`, and inside its component
    directories, stay, as `nlp.to_disk` keeps them. A `path` that holds
    something but no previous pipeline save, or is a file, is refused before
    anything is written unless `overwrite`.
    """
    target = Path(path)
    owned = check_pipeline_target(target, nlp, overwrite)
    if target.parent.is_dir():
        clean_stale_temps(target.parent, target=target.name)
    with atomic_directory(target, owned, overwrite=True) as tmp:
        nlp.to_disk(tmp, exclude=exclude)
    return target
