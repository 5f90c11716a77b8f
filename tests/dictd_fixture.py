"""A tiny dictd dictionary (NAME.index + NAME.dict.dz, as dictd and dictzip write them) for the
dictionary tests: the entries, the writer, and the `tiny_gcide` fixture (conftest.py loads this
module as a plugin)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Dict

import pytest

from spacy_bertram.dictionary.dictd import encode_number


#: GCIDE-style entries: a multi-line etymology, an obsolete sense, a phrase, a WordNet-derived
#: sense, and an entry that only mentions "run".
TINY_GCIDE = {
    "kumquat": 'Kumquat \\Kum"quat\\, n. [Chin. kin keu.] (Bot.)\n'
    "   A small oval citrus fruit with thin sweet rind and acid pulp.\n   [1913 Webster]\n",
    "goose": "Goose \\Goose\\ (g[=oo]s), n.; pl. {Geese} (g[=e]s). [AS. g[=o]s, pl.\n"
    "   g[=e]s; akin to D. gans.]\n"
    "   1. (Zool.) Any large web-footed bird of the subfamily\n      {Anserinae}. --Shak.\n"
    "      [1913 Webster]\n\n"
    "   2. A tailor's smoothing iron. [Obs.]\n      [1913 Webster]\n\n"
    "   3. a silly person; a simpleton.\n      [WordNet 1.5]\n\n"
    "   {To cook one's goose}, to ruin one.\n      [1913 Webster]\n",
    "run": "All fours \\All fours\\\n   All four legs of a quadruped.\n   [1913 Webster]\n",
}


def write_dictd(directory: Path, entries: Dict[str, str], name: str = "tiny", chunk_length: int = 64) -> Path:
    """NAME.index and NAME.dict.dz as dictd/dictzip write them (chunks of `chunk_length` bytes); the index path."""
    text, lines = b"", []
    for word, entry in entries.items():
        data = entry.encode("utf8")
        lines.append(f"{word}\t{encode_number(len(text))}\t{encode_number(len(data))}\n")
        text += data
    chunks = [text[i : i + chunk_length] for i in range(0, len(text), chunk_length)]
    compressed = []
    for n, chunk in enumerate(chunks):
        deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
        end = zlib.Z_FINISH if n == len(chunks) - 1 else zlib.Z_FULL_FLUSH
        compressed.append(deflate.compress(chunk) + deflate.flush(end))
    table = struct.pack("<HHH", 1, chunk_length, len(chunks)) + struct.pack(f"<{len(chunks)}H", *map(len, compressed))
    extra = b"RA" + struct.pack("<H", len(table)) + table
    header = b"\x1f\x8b\x08" + bytes([4 | 8]) + b"\x00" * 4 + b"\x02\x03" + struct.pack("<H", len(extra)) + extra
    trailer = struct.pack("<II", zlib.crc32(text), len(text) & 0xFFFFFFFF)
    (directory / f"{name}.dict.dz").write_bytes(header + name.encode() + b"\x00" + b"".join(compressed) + trailer)
    index = directory / f"{name}.index"
    index.write_text("".join(lines), encoding="utf8")
    return index


@pytest.fixture(scope="session")
def tiny_gcide(tmp_path_factory) -> Path:
    return write_dictd(tmp_path_factory.mktemp("gcide"), TINY_GCIDE, name="gcide")
