"""The bounds of every count setting: the command lines' whole-number options and the component's config counts.

A count with no upper bound is a request for memory: `texts-store --max-contexts 100000000` reserved room for a
hundred million contexts per word and ran the machine out of memory, a larger one raised a raw OverflowError from
an array, and a seed beyond 2**32 - 1 fails in numpy's seeding after the work began. Each count belongs to a kind
(`COUNT_BOUNDS`), whose upper bound is far above any useful value and well below what breaks; the commands declare
the kind's range on the option (`count_range`, typer's `min=`/`max=`: refused while parsing, shown by `--help`),
and the Python entry points and the component's settings call `check_count` (E052 names the setting). The bounds
are listed in docs/configuration.md#bounds, which a test keeps in step with this table.

A leaf: the error catalogue alone, so the command lines read it before any heavy import.
"""

from __future__ import annotations

from dataclasses import dataclass
import numbers
from typing import Any, Dict, Optional

from .errors import Errors


@dataclass(frozen=True)
class CountBound:
    """A kind of count: its least and largest value, and what it counts (in the docs' table)."""

    low: int
    high: int
    counts: str


#: kind -> its bound. An option or setting may take a higher `low` (`--folds` at least 2) or 0 where 0 means
#: "none" or "off" (`--max-rare-words 0`, `cache_size = 0`), never a higher `high`.
COUNT_BOUNDS: Dict[str, CountBound] = {
    "contexts": CountBound(1, 10_000, "contexts per word: kept in a store, gathered, read by the network"),
    "window": CountBound(1, 1_000, "words or tokens on each side of an occurrence"),
    "words": CountBound(1, 1_000_000_000, "words: selected, kept, remembered, cached or per shard"),
    "items": CountBound(1, 1_000_000_000, "items of a data set: texts, pairs, candidates"),
    "occurrences": CountBound(1, 1_000_000_000_000, "occurrences of a word or an n-gram in a corpus"),
    "tokens": CountBound(1, 10_000_000, "encoder tokens per call, per context or per word (and a word's length)"),
    "steps": CountBound(1, 10_000_000, "training or optimiser steps, epochs"),
    "batch": CountBound(1, 1_000_000, "items per batch: words, or spaCy's words per batch"),
    "resamples": CountBound(1, 1_000_000, "bootstrap resamples"),
    "runs": CountBound(1, 1_000, "folds, draws, patience and other repeats of a run"),
    "workers": CountBound(0, 1_024, "worker processes of a local Dask cluster"),
    "seed": CountBound(0, 2**32 - 1, "a random seed (numpy's and spaCy's seeding take no larger one)"),
}


def _bound(kind: str) -> CountBound:
    return COUNT_BOUNDS[kind]


def count_range(kind: str, low: Optional[int] = None) -> Dict[str, int]:
    """typer's `min=` and `max=` of a whole-number option of `kind` (`typer.Option(8, **count_range("contexts"))`):
    a value out of range is typer's usage error naming the option, before any work, and `--help` shows the range."""
    bound = _bound(kind)
    return {"min": bound.low if low is None else low, "max": bound.high}


def describe(kind: str, low: Optional[int] = None) -> str:
    """The range in words, as E052 says it: "a whole number from 1 to 10,000"."""
    bound = _bound(kind)
    return f"a whole number from {bound.low if low is None else low:,} to {bound.high:,}"


def is_count(value: Any, kind: str, low: Optional[int] = None) -> bool:
    """Whether `value` is a whole number within the bounds of `kind` (a bool or a float is no count)."""
    bound = _bound(kind)
    least = bound.low if low is None else low
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    return whole and least <= value <= bound.high


def check_count(value: Any, setting: str, kind: str, low: Optional[int] = None) -> int:
    """`value` as a count of `kind` (E052 names `setting`), for the settings no command line parses first: the
    component's config, the Python entry points."""
    if not is_count(value, kind, low):
        raise ValueError(Errors.E052.format(setting=setting, bounds=describe(kind, low), value=repr(value)))
    return int(value)


__all__ = ["COUNT_BOUNDS", "CountBound", "check_count", "count_range", "describe", "is_count"]
