"""pipeline/vector_cache.py: the LRU cache, its bytes, and hits within the recompute tolerance."""

from __future__ import annotations

from pathlib import Path

import numpy
import pytest

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram.model.layers import infer_vectors
from spacy_bertram.pipeline.vector_cache import VectorCache, cache_key

from tests.util import make_nlp


# -- cache -------------------------------------------------------------------------------


def test_vector_cache_lru_bound_and_serialization():
    cache = VectorCache(max_size=2, fingerprint="m1")
    keys = [cache_key(w, "doc", [f"{w} here"]) for w in ("a", "b", "c")]
    for n, key in enumerate(keys[:2]):
        cache.put(key, numpy.full(3, n))
    assert cache.get(keys[0]) is not None  # now most recent
    cache.put(keys[2], numpy.full(3, 2))
    assert keys[1] not in cache and keys[0] in cache and len(cache) == 2
    assert cache.get(keys[1]) is None and cache.stats()["hits"] == 1 and cache.stats()["misses"] == 1
    with pytest.raises(ValueError):
        cache.get(keys[0])[0] = 5.0  # shared, read-only vectors
    copy = VectorCache(max_size=5).from_bytes(cache.to_bytes())
    assert list(copy._entries) == list(cache._entries) and copy.fingerprint == "m1"
    assert not copy.bind("m1") and copy.bind("m2") and len(copy) == 0
    assert cache_key("w", "doc", ["a b", "c"]) != cache_key("w", "doc", ["a", "b c"])
    with pytest.raises(ValueError, match=r"\[E125\] Corrupt"):
        VectorCache().from_bytes(b"\x93garbage")
    disabled = VectorCache(max_size=0)
    disabled.put(keys[0], numpy.zeros(3))
    assert len(disabled) == 0


def test_a_cache_hit_equals_recomputing_within_the_documented_tolerance(bertram_dir, tiny_bert_path):  # noqa: F811
    from spacy_bertram.pipeline.vector_cache import RECOMPUTE_TOLERANCE

    pipe = make_nlp(bertram_dir, tiny_bert_path).get_pipe("bertram")
    item = ("kumquat", ["The farmer sold a kumquat at the market."])
    others = [(f"quokka{'s' * k}", [f"a quokka{'s' * k} " + "and the sea " * k]) for k in range(12)]
    alone = infer_vectors(pipe.model, [item])[0]
    batched = infer_vectors(pipe.model, [*others, item])[-1]  # what recomputing in another batch gives
    assert numpy.abs(alone - batched).max() <= RECOMPUTE_TOLERANCE
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf8")
    assert f"{RECOMPUTE_TOLERANCE:g}" in readme and "exactly what recomputing would" not in readme
