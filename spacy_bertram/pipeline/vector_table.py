"""A vector table: BERTRAM vectors of a whole vocabulary, computed once, looked up at run time.

A table is a directory with two files, both written atomically:
- `vectors.safetensors`: one float32 matrix [words, width] (never pickled);
- `table.json`: the format, the words (row order), the fingerprint of the
  BERTRAM model that computed the rows, the identity of its encoder, and how
  the rows were made (contexts per word, the store). Written last: its
  presence means the table is complete.

A row is only valid for the model and encoder that made it, so both are
recorded and `check_model` refuses a table from another model: a silently
wrong vector is worse than none. The words are stored in the form the
component groups tokens by (lowercased for an uncased network).

While a table is being computed the same directory holds `shards/`: a plan
(`plan.json`, the words and settings) and one safetensors file per finished
shard, so a killed run resumes with the shards it has (`training/shards.py`:
only `vectors` writes them). The finished table replaces the directory in one
rename, shards and all.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy
import srsly
import torch
from safetensors import SafetensorError
from safetensors.numpy import load as load_arrays
from safetensors.numpy import load_file, save, save_file

from ..errors import Errors, Warnings
from ..fileio import atomic_directory, write_json_atomic
from ..types import PathLike
from .table_files import FORMAT_NAME, META_FILE, SHARDS_DIR, TABLE_ENTRIES, VECTORS_FILE, check_table_output


FORMAT_VERSION = 1
#: Encoder fields that must agree (the name or path may differ between machines).
ENCODER_KEYS = ("vocab_size", "width", "embedding_digest")


def encoder_identity(network: Any) -> Dict[str, Any]:
    """What identifies BERTRAM's encoder: its shape and a digest of sampled embedding rows."""
    table = network.embedding_matrix().detach()
    n_rows, width = int(table.shape[0]), int(table.shape[1])
    rows = torch.linspace(0, n_rows - 1, steps=min(64, n_rows)).long().to(table.device)
    sample = table[rows].float().cpu().contiguous().numpy()
    digest = hashlib.blake2b(sample.tobytes(), digest_size=16).hexdigest()
    return {
        "base_model": str(network.config.base_model),
        "vocab_size": n_rows,
        "width": width,
        "embedding_digest": digest,
    }


class VectorTable:
    """Words and their float32 vectors, with the model and encoder they belong to."""

    def __init__(self, words: Sequence[str], vectors: numpy.ndarray, meta: Mapping[str, Any]) -> None:
        vectors = numpy.ascontiguousarray(vectors, dtype="float32")
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise ValueError(Errors.E127.format(n_words=len(words), shape=vectors.shape))
        if not numpy.isfinite(vectors).all():
            raise ValueError(Errors.E128)
        self.words: List[str] = [str(w) for w in words]
        self._index: Dict[str, int] = {w: i for i, w in enumerate(self.words)}
        if len(self._index) != len(self.words):
            raise ValueError(Errors.E129)
        vectors.flags.writeable = False
        self.vectors = vectors
        self.meta: Dict[str, Any] = dict(meta)
        self.meta["width"] = int(vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._index

    @property
    def width(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def model_id(self) -> Optional[str]:
        return self.meta.get("model_id")

    def get(self, word: str) -> Optional[numpy.ndarray]:
        """The word's (read-only) row, or None."""
        i = self._index.get(word)
        return None if i is None else self.vectors[i]

    def check_model(self, model_id: Optional[str], encoder: Mapping[str, Any], where: str = "") -> None:
        """Raise ValueError unless the table was made by this BERTRAM model on this encoder."""
        source = f" {where}" if where else ""
        if self.model_id != model_id:
            raise ValueError(Errors.E130.format(source=source, table_id=self.model_id, model_id=model_id))
        ours = self.meta.get("encoder", {})
        bad = [key for key in ENCODER_KEYS if ours.get(key) != encoder.get(key)]
        if bad:
            raise ValueError(
                Errors.E131.format(
                    source=source,
                    table_encoder=ours.get("base_model"),
                    differences=", ".join(bad),
                    model_encoder=encoder.get("base_model"),
                )
            )

    def check_network(self, model_id: Optional[str], network: Any, share: Optional[float], name: str) -> None:
        """Refuse a table of another model or encoder than component `name`'s (E130, E131); say so where the
        component mixes the vectors it infers at another subword_share than the rows' (W018)."""
        self.check_model(model_id, encoder_identity(network), f"of '{name}'")
        model_share = network.config.subword_share
        if share is not None and share != model_share:
            warnings.warn(Warnings.W018.format(name=name, share=share, model_share=model_share), stacklevel=2)

    # -- serialization ---------------------------------------------------------------

    def _header(self) -> Dict[str, Any]:
        return {"format": FORMAT_NAME, "version": FORMAT_VERSION, **self.meta, "n_words": len(self)}

    def to_disk(self, path: PathLike, *, overwrite: bool = False) -> None:
        """Write the table directory in one rename: its files and an unfinished run's shards are replaced,
        anything else in the directory (and in `shards/`) stays. A `table.json` or `vectors.safetensors` there
        that is not a vector table's, or a directory of others' files alone, is refused unless `overwrite`."""
        check_table_output(path, command="VectorTable.to_disk", force=overwrite, force_hint="pass overwrite=True")
        with atomic_directory(path, TABLE_ENTRIES, overwrite=True) as tmp:
            save_file({"vectors": self.vectors}, str(tmp / VECTORS_FILE), metadata={"format": FORMAT_NAME})
            write_json_atomic(tmp / META_FILE, {**self._header(), "words": self.words}, indent=None)

    @classmethod
    def from_disk(cls, path: PathLike) -> "VectorTable":
        path = Path(path)
        if not (path / META_FILE).is_file():
            unfinished = (path / SHARDS_DIR).is_dir()
            hint = " (an unfinished run: re-run the same `vectors` command to resume)" if unfinished else ""
            raise ValueError(Errors.E132.format(path=str(path), META_FILE=META_FILE, hint=hint))
        try:
            header = json.loads((path / META_FILE).read_text(encoding="utf8"))
            vectors = load_file(str(path / VECTORS_FILE))["vectors"]
        except (OSError, ValueError, KeyError, SafetensorError) as err:
            raise ValueError(Errors.E133.format(path=str(path), err=err)) from err
        return cls._from_header(header, vectors, str(path))

    def to_bytes(self) -> bytes:
        return srsly.msgpack_dumps(
            {"header": self._header(), "words": self.words, "vectors": save({"vectors": self.vectors})}
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> "VectorTable":
        try:
            msg = srsly.msgpack_loads(data)
            header = {**msg["header"], "words": msg["words"]}
            vectors = load_arrays(msg["vectors"])["vectors"]
        except (ValueError, KeyError, TypeError, SafetensorError) as err:
            raise ValueError(Errors.E134.format(err=err)) from err
        return cls._from_header(header, vectors, "serialized bytes")

    @classmethod
    def _from_header(cls, header: Mapping[str, Any], vectors: numpy.ndarray, source: str) -> "VectorTable":
        if header.get("format") != FORMAT_NAME or header.get("version") != FORMAT_VERSION:
            raise ValueError(
                Errors.E135.format(
                    FORMAT_NAME=FORMAT_NAME,
                    FORMAT_VERSION=FORMAT_VERSION,
                    source=source,
                    found_format=header.get("format"),
                    found_version=header.get("version"),
                )
            )
        words = header.get("words")
        if not isinstance(words, list) or len(words) != header.get("n_words"):
            raise ValueError(Errors.E136.format(source=source))
        meta = {k: v for k, v in header.items() if k not in ("format", "version", "words", "n_words")}
        return cls(words, vectors, meta)
