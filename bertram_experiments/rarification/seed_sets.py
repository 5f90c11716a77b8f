"""Where the sets of further rarification seeds live, so rarify, evaluate and pool agree.

`rarify --seed 0,1,2 OUT` writes the first seed's set to OUT (the path every step
used before seeds existed) and each further seed's set to OUT/seed-N; OUT's
rarify.json lists them under "seed_sets". `evaluate` mirrors the layout
(METRICS, METRICS/seed-N) and lists them in METRICS/metrics.json, which is what
`pool` reads. Listing, not globbing: a directory left over from an earlier run
with other seeds is never picked up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Sequence, Union
from ..errors import Errors
from spacy_bertram.project_support import PathLike, check_count, remove_written

PREFIX = "seed-"


def parse_seeds(value: Union[int, str, Sequence[int]]) -> List[int]:
    """ "0,1,2" / 3 / [0, 1] -> a list of distinct ints, in order."""
    if isinstance(value, int):
        seeds = [value]
    elif isinstance(value, str):
        try:
            seeds = [int(v) for v in value.replace(" ", "").split(",") if v]
        except ValueError as err:
            raise ValueError(Errors.E372.format(value=value)) from err
    else:
        seeds = [int(v) for v in value]
    if not seeds:
        raise ValueError(Errors.E373)
    if len(set(seeds)) != len(seeds):
        raise ValueError(Errors.E374.format(seeds=seeds))
    return [check_count(seed, "--seed", "seed") for seed in seeds]


def seed_set_name(seed: int) -> str:
    return f"{PREFIX}{seed}"


def listed_sets(directory: PathLike, info_file: str) -> Dict[str, Path]:
    """{"": directory, "seed-N": directory/seed-N, ...} as listed in `info_file`."""
    root = Path(directory)
    info = root / info_file
    names = json.loads(info.read_text(encoding="utf8")).get("seed_sets", []) if info.is_file() else []
    return {"": root, **{name: root / name for name in names}}


def remove_unlisted(directory: PathLike, keep: Sequence[str], owned: Sequence[str]) -> None:
    """Remove what an earlier run wrote in the seed-N subdirectories the current run did not write (`owned`:
    the step's outputs); a file someone else put there stays, with its directory."""
    root = Path(directory)
    if not root.is_dir():
        return
    for path in root.glob(f"{PREFIX}*"):
        if path.is_dir() and path.name not in keep:
            remove_written(path, owned)


__all__ = ["listed_sets", "parse_seeds", "remove_unlisted", "seed_set_name"]
