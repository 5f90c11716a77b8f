"""A bounded LRU memo of BERTRAM vectors, saved with the pipeline.

Key policy: a BERTRAM vector is a pure function of the word form, the exact
contexts it is computed from, and the model. So the key is
(word form, context source, digest of the ordered context texts), and the
whole cache carries a fingerprint of the model (weights and config) and is
emptied when the model changes. A hit returns the vector computed when the
(word, contexts) pair was first seen; recomputing it can differ by float32
rounding only, because the encoder batches rows of other words with it
(another padding, another summation order): at most `RECOMPUTE_TOLERANCE`
per component. For every source:

- "store": a word's store contexts are fixed, so a repeated word always hits
  (only the store lookup is paid, never the encoder);
- "doc": the vector depends on the document's own sentences; it hits when the
  same word appears in the same contexts again (a re-processed or duplicated
  text, a repeated sentence), and never serves a vector computed from another
  document's contexts as if it were this one's;
- "dictionary": like "store" (a word's definitions are fixed), but the
  definitions write the word as the text does, so "Kumquats" and "kumquats"
  are two keys;
- a mix ("doc+dictionary", "store:6+dictionary:2", ...): the same, over the
  contexts of all its sources together.

The source is the canonical spelling of the `contexts` setting, limits
included (`context_sources.canonical`). Equal contexts give equal vectors
whatever their source; the source in the key keeps a saved cache honest
when the setting changes, and its statistics readable. Nothing is pickled:
keys go to msgpack, vectors to safetensors.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Dict, Optional, Sequence, Tuple

import numpy
import srsly
from safetensors import SafetensorError
from safetensors.numpy import load as load_arrays
from safetensors.numpy import save as save_arrays

from ..bounds import describe, is_count
from ..errors import Errors

CacheKey = Tuple[str, str, str]
FORMAT_NAME = "spacy-bertram-vector-cache"
#: Largest difference per vector component between a cache hit and recomputing
#: the same (word, contexts) in another batch (measured: below 3e-6).
RECOMPUTE_TOLERANCE = 1e-5
#: Vectors the cache keeps by default (the component's `cache_size`).
DEFAULT_CACHE_SIZE = 10_000


def contexts_digest(contexts: Sequence[str]) -> str:
    """A 128-bit digest of the ordered context list (json, so no separator collisions)."""
    data = json.dumps(list(contexts), ensure_ascii=False).encode("utf8")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def cache_key(word: str, source: str, contexts: Sequence[str]) -> CacheKey:
    return (word, source, contexts_digest(contexts))


class VectorCache:
    """LRU map from `CacheKey` to a read-only float32 vector, at most `max_size` entries.

    `max_size=0` disables caching (every lookup misses, nothing is stored).
    """

    def __init__(self, max_size: int = DEFAULT_CACHE_SIZE, fingerprint: str = "") -> None:
        if not is_count(max_size, "words", low=0):
            raise ValueError(Errors.E122.format(bounds=describe("words", low=0), max_size=max_size))
        self.max_size = int(max_size)
        self.fingerprint = fingerprint
        self._entries: "OrderedDict[CacheKey, numpy.ndarray]" = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: CacheKey) -> Optional[numpy.ndarray]:
        vector = self._entries.get(key)
        if vector is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return vector

    def put(self, key: CacheKey, vector: numpy.ndarray) -> numpy.ndarray:
        """Store a read-only float32 copy; returns it (callers share that one array)."""
        stored = numpy.array(vector, dtype="float32", copy=True).reshape(-1)
        stored.flags.writeable = False
        if self.max_size == 0:
            return stored
        assert not self._entries or stored.shape == next(iter(self._entries.values())).shape, "one width per cache"
        self._entries[key] = stored
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_size:
            self._entries.popitem(last=False)
        return stored

    def clear(self) -> None:
        self._entries.clear()
        self.hits = self.misses = 0

    def bind(self, fingerprint: str) -> bool:
        """Tie the cache to a model fingerprint; empties it if it held another model's vectors."""
        if fingerprint == self.fingerprint:
            return False
        stale = bool(self._entries)
        self.clear()
        self.fingerprint = fingerprint
        return stale

    def stats(self) -> Dict[str, int]:
        return {"size": len(self), "max_size": self.max_size, "hits": self.hits, "misses": self.misses}

    def to_bytes(self) -> bytes:
        keys = [list(key) for key in self._entries]
        if keys:
            matrix = numpy.stack(list(self._entries.values())).astype("float32")
            vectors = save_arrays({"vectors": matrix})
        else:
            vectors = b""
        return srsly.msgpack_dumps(
            {"format": FORMAT_NAME, "fingerprint": self.fingerprint, "keys": keys, "vectors": vectors}
        )

    def from_bytes(self, data: bytes) -> "VectorCache":
        """Restore entries (oldest first); keeps this cache's own `max_size`."""
        try:
            msg = srsly.msgpack_loads(data)
            if not isinstance(msg, dict) or msg.get("format") != FORMAT_NAME:
                raise ValueError(Errors.E124)
            keys = [tuple(str(part) for part in key) for key in msg["keys"]]
            matrix = load_arrays(msg["vectors"])["vectors"] if keys else numpy.zeros((0, 0), "float32")
        except (ValueError, KeyError, TypeError, SafetensorError) as err:
            raise ValueError(Errors.E125.format(err=err)) from err
        if len(keys) != len(matrix) or any(len(key) != 3 for key in keys):
            raise ValueError(Errors.E126)
        self.clear()
        self.fingerprint = str(msg["fingerprint"])
        for key, row in zip(keys, matrix):
            self.put(key, row)  # type: ignore[arg-type]
        return self
