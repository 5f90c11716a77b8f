"""The files of a vector table's directory, and the output rule for it.

Light (no torch): `vectors` checks its output before it imports its step, and
`VectorTable.to_disk` calls the same check (`check_table_output`).
"""

from __future__ import annotations

from ..fileio import check_output_dir
from ..types import PathLike

FORMAT_NAME = "spacy-bertram-vector-table"
META_FILE = "table.json"
VECTORS_FILE = "vectors.safetensors"
SHARDS_DIR = "shards"
PLAN_FILE = "plan.json"
#: What a run writes in SHARDS_DIR (`training/shards.py`): its plan and one file per finished shard.
SHARD_FILES = (PLAN_FILE, "shard-*.safetensors")
#: What a table owns in its directory (`fileio` patterns): its two files and an unfinished run's shards;
#: any other file, in the directory or in `shards/`, is someone else's and stays.
TABLE_ENTRIES = (META_FILE, VECTORS_FILE, *(f"{SHARDS_DIR}/{name}" for name in SHARD_FILES))


def check_table_output(path: PathLike, *, command: str, force: bool = False, force_hint: str = "pass --force") -> None:
    """The output rule (`fileio.check_output_dir`) for a table's directory: a `table.json` or
    `vectors.safetensors` there must carry the table's format (`output_mark`: a file of another's would be
    replaced), and a directory that is not empty must hold something of a table's."""
    check_output_dir(
        path,
        TABLE_ENTRIES,
        command=command,
        force=force,
        replaces=True,
        marked=(META_FILE, VECTORS_FILE),
        mark=FORMAT_NAME,
        force_hint=force_hint,
    )


__all__ = [
    "FORMAT_NAME",
    "META_FILE",
    "PLAN_FILE",
    "SHARDS_DIR",
    "SHARD_FILES",
    "TABLE_ENTRIES",
    "VECTORS_FILE",
    "check_table_output",
]
