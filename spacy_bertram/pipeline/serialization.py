"""How the `bertram` component is saved in a pipeline: one table of parts, checked on load.

Parts (files of the component's directory, or keys of its bytes):
- model: the BERTRAM layer (config, n-grams, weights);
- frequencies: the trained model's corpus counts (if it ships them);
- vector_table: precomputed vectors (`python -m spacy_bertram vectors`), if the component has one;
- cache: the vector cache (only with save_cache = true);
- cfg: which trained model this is, and the name and digest of every other
  part written with it. It is written last and read first.

Saving writes every part to a temp file and renames them only once all are
written (cfg last), so a save that fails (full disk, a file-size limit, an
exception) leaves the previous pipeline as it was; parts the new save does not
write are then removed, so an old cache never lingers. Loading requires every
part cfg lists (a missing `model` would otherwise leave the untrained network
serving vectors), checks each against its digest, and names the file of any
problem. A part left out with `exclude` is not touched: an excluded model
keeps the network (and model identity) the component already had.

A context store is not a part: cfg records its path relative to the pipeline
directory, and loading uses that when the configured path is gone (the
pipeline and its store moved together).

`nlp.to_disk` itself writes each component in place, and spacy-transformers'
`transformer/model` is not written through a temp file: a save killed there
leaves a pipeline that does not load. `save_pipeline` saves the whole
pipeline beside its target and swaps it in with one rename.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Optional, Tuple, Union

import srsly
from spacy import util

from ..fileio import atomic_path, clean_stale_temps, staged_files
from ..frequencies import CountTable

if TYPE_CHECKING:
    from .component import BertramComponent

CFG = "cfg"
#: cfg key: the context store's path relative to the pipeline directory, as saved.
STORE_KEY = "context_store_relative"
Dump = Callable[["BertramComponent"], Optional[bytes]]
Load = Callable[["BertramComponent", bytes], None]


def _load_model(component: "BertramComponent", data: bytes) -> None:
    component.model.from_bytes(data)


def _load_frequencies(component: "BertramComponent", data: bytes) -> None:
    component.table = CountTable.from_bytes(data)


def _load_cache(component: "BertramComponent", data: bytes) -> None:
    component.cache.from_bytes(data)


def _load_vector_table(component: "BertramComponent", data: bytes) -> None:
    from .vector_table import VectorTable

    component.vectors = VectorTable.from_bytes(data)
    component.table_changed()


def _dump_vector_table(component: "BertramComponent") -> Optional[bytes]:
    table = component.table_to_save()
    return table.to_bytes() if table is not None else None


#: name -> (dump: bytes, or None when the component has nothing for it; load).
PARTS: Dict[str, Tuple[Dump, Load]] = {
    "model": (lambda c: c.model.to_bytes(), _load_model),
    "frequencies": (lambda c: c.table.to_bytes() if c.table is not None else None, _load_frequencies),
    "cache": (lambda c: c.cache.to_bytes() if c.save_cache else None, _load_cache),
    "vector_table": (_dump_vector_table, _load_vector_table),
}


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def dump_parts(component: "BertramComponent", exclude: Iterable[str],
               extra_cfg: Optional[Dict[str, Any]] = None) -> Dict[str, bytes]:
    """Every part's bytes, cfg last with the digests of the others (and `extra_cfg`)."""
    component.ensure_weights()  # the pipeline must carry the trained weights
    exclude = set(exclude)
    parts: Dict[str, bytes] = {}
    for name, (dump, _) in PARTS.items():
        data = dump(component) if name not in exclude else None
        if data is not None:
            parts[name] = data
    if CFG not in exclude:
        cfg = {**component.cfg, **(extra_cfg or {}), "parts": {name: digest(data) for name, data in parts.items()}}
        parts[CFG] = srsly.json_dumps(cfg).encode("utf8")
    return parts


def parse_cfg(data: bytes, where: str) -> Dict[str, Any]:
    """The cfg part, checked: a JSON object whose `parts` maps part names to digests."""
    try:
        cfg = srsly.json_loads(data.decode("utf8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ValueError(f"bertram: {where} is not the component's cfg (JSON): {err}") from err
    if not isinstance(cfg, dict):
        raise ValueError(f"bertram: {where} must hold a JSON object, got {type(cfg).__name__}")
    for key in ("model_id", "model_source"):
        if not isinstance(cfg.get(key), (str, type(None))):
            raise ValueError(f"bertram: {where}: {key!r} must be a string or null, got {cfg[key]!r}")
    parts = cfg.get("parts")
    if parts is not None and (
        not isinstance(parts, dict)
        or not all(k in PARTS and isinstance(v, str) for k, v in parts.items())
    ):
        raise ValueError(f"bertram: {where}: 'parts' must map {sorted(PARTS)} to digests, got {parts!r}")
    return cfg


def load_parts(
    component: "BertramComponent",
    fetch: Callable[[str], Optional[bytes]],
    exclude: Iterable[str],
    where: Callable[[str], str],
) -> None:
    """Check and load the parts that `fetch(name)` returns (None: absent); errors name `where(name)`."""
    exclude = set(exclude)

    def fetch_bytes(name: str) -> Optional[bytes]:
        data = fetch(name)
        if data is not None and not isinstance(data, bytes):
            raise ValueError(f"bertram: {where(name)} holds {type(data).__name__}, not bytes")
        return data

    cfg: Optional[Dict[str, Any]] = None
    if CFG not in exclude:
        data = fetch_bytes(CFG)
        if data is None:
            raise ValueError(f"bertram: {where(CFG)} is missing: the component cannot be loaded without it")
        cfg = parse_cfg(data, where(CFG))
    # A cfg from before the list of parts: the model is required, the rest optional.
    listed = cfg.get("parts") if cfg is not None else None
    checked: Dict[str, bytes] = {}  # every part is checked before any is loaded
    for name in PARTS:
        if name in exclude:
            continue
        data = fetch_bytes(name)
        if listed is not None and name not in listed:
            data = None  # not saved with this cfg: a leftover it does not vouch for
        required = name in listed if listed is not None else name == "model"
        if data is None:
            if required:
                why = f"{where(CFG)} lists it" if listed is not None else "it holds the trained weights"
                raise ValueError(
                    f"bertram: {where(name)} is missing, but the saved component needs it ({why}). "
                    "Save the pipeline again, or restore the file."
                )
            continue
        if listed is not None and digest(data) != listed[name]:
            raise ValueError(
                f"bertram: {where(name)} does not match {where(CFG)} (digest differs): the "
                "pipeline was saved incompletely or edited. Save it again."
            )
        checked[name] = data
    if "frequencies" not in exclude and "frequencies" not in checked:
        component.table = None  # the saved model shipped no counts
    for name, data in checked.items():
        try:
            PARTS[name][1](component, data)
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"bertram: cannot load {where(name)}: {err}") from err
    loaded = set(checked)
    if cfg is not None:
        identity = {"model_id", "model_source"}
        component.cfg.update({k: v for k, v in cfg.items()
                              if k not in ("parts", STORE_KEY) and (k not in identity or "model" in loaded)})
    component.parts_loaded()


def to_bytes(component: "BertramComponent", exclude: Iterable[str]) -> bytes:
    return srsly.msgpack_dumps(dump_parts(component, exclude))


def from_bytes(component: "BertramComponent", data: bytes, exclude: Iterable[str]) -> None:
    try:
        parts = srsly.msgpack_loads(data)
    except ValueError as err:
        raise ValueError(f"bertram: the serialized component is not msgpack: {err}") from err
    if not isinstance(parts, dict):
        raise ValueError("bertram: the serialized component must be a map of parts")
    load_parts(component, parts.get, exclude, lambda name: f"the serialized component's {name!r}")


def to_disk(component: "BertramComponent", path: Union[str, Path], exclude: Iterable[str]) -> None:
    path = util.ensure_path(path)
    path.mkdir(parents=True, exist_ok=True)
    exclude = set(exclude)
    extra = {}
    if component.context_store:  # where the store is as seen from the pipeline directory
        extra[STORE_KEY] = os.path.relpath(Path(component.context_store).resolve(), path.resolve().parent)
    parts = dump_parts(component, exclude, extra)  # all bytes first: a failing serializer writes nothing
    with staged_files() as files:
        writers = {name: (lambda p, data=data: files.stage(p, data)) for name, data in parts.items()}
        util.to_disk(path, writers, exclude)
    for name in [*PARTS, CFG]:  # parts this save left out on purpose: no stale copies
        if name not in parts and name not in exclude and (path / name).is_file():
            (path / name).unlink()


def from_disk(component: "BertramComponent", path: Union[str, Path], exclude: Iterable[str]) -> None:
    path = util.ensure_path(path)
    found: Dict[str, bytes] = {}

    def reader(name: str) -> Callable[[Path], None]:
        def read(file_path: Path) -> None:
            if file_path.is_file():
                found[name] = file_path.read_bytes()

        return read

    util.from_disk(path, {name: reader(name) for name in [CFG, *PARTS]}, exclude)
    locate_store(component, path.parent, found.get(CFG))
    load_parts(component, found.get, exclude, lambda name: repr(str(path / name)))


def locate_store(component: "BertramComponent", pipeline_dir: Path, cfg_data: Optional[bytes]) -> None:
    """A configured store path that is gone: the one saved relative to the pipeline, if it is there."""
    configured = component.context_store
    if not configured or Path(configured).exists() or cfg_data is None:
        return
    try:
        relative = srsly.json_loads(cfg_data.decode("utf8")).get(STORE_KEY)
    except (UnicodeDecodeError, ValueError, AttributeError):
        return  # a bad cfg is named by load_parts
    if isinstance(relative, str):
        candidate = pipeline_dir / relative
        component.store_hint = f"saved at {relative!r} relative to the pipeline, {str(candidate)!r} here"
        if candidate.exists():
            component.context_store = str(candidate.resolve())


def save_pipeline(nlp: Any, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> Path:
    """`nlp.to_disk` into a temp directory beside `path`, then one rename over it.

    A save that fails or is killed leaves the previous pipeline at `path`
    whole (`nlp.to_disk(path)` writes into it file by file); temp directories
    a killed save left beside it are removed by the next save.
    """
    target = Path(path)
    if target.parent.is_dir():
        clean_stale_temps(target.parent, target=target.name)
    with atomic_path(target, is_dir=True) as tmp:
        nlp.to_disk(tmp, exclude=exclude)
    return target

