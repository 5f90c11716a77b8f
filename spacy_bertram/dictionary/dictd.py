"""A reader of dictd databases: the `.index` file and the `.dict.dz` (dictzip) or `.dict` file.

dictd(8) keeps a dictionary as a sorted, tab-separated index ("headword,
offset, length", the numbers in dictd's own base-64) and a data file of the
entries' texts. The data file is usually dictzip-compressed: a gzip file whose
header's "RA" extra field lists the compressed size of each fixed-size chunk,
each chunk a raw deflate stream that can be inflated on its own. So an entry
is read by inflating only the chunks that hold it, never the whole file.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import BinaryIO, Dict, Iterator, List, Optional, Tuple

from ..errors import Errors
from ..types import PathLike

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = {c: i for i, c in enumerate(B64)}
_GZIP_MAGIC = b"\x1f\x8b"
#: Inflated chunks kept (an entry rarely spans more than two).
RECENT_CHUNKS = 4
_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 2, 4, 8, 16

IndexEntry = Tuple[str, int, int]  # headword, offset, length (in the uncompressed text)


class DictdFormatError(ValueError):
    """A dictd file that cannot be read; the message names the file and the fix."""


def _corrupt(path: Path, why: str) -> DictdFormatError:
    return DictdFormatError(Errors.E503.format(path=path, why=why))


class NotADictdNumber(ValueError):
    """Not a dictd base-64 number; `read_index` names the file and line in [E503]."""

    def __str__(self) -> str:
        return f"{self.args[0]!r} is not a dictd base-64 number"


def decode_number(text: str) -> int:
    """dictd's base-64 number (most significant digit first), as in the index's offset and length."""
    if not text:
        raise NotADictdNumber(text)
    value = 0
    for char in text:
        digit = _B64_VALUE.get(char)
        if digit is None:
            raise NotADictdNumber(text)
        value = value * 64 + digit
    return value


def encode_number(value: int) -> str:
    """The inverse of `decode_number` (used to write test fixtures and small databases)."""
    assert value >= 0, value
    digits = B64[value % 64]
    while value >= 64:
        value //= 64
        digits = B64[value % 64] + digits
    return digits


def read_index(path: PathLike) -> Dict[str, List[Tuple[int, int]]]:
    """Lowercased headword -> [(offset, length), ...] in index order."""
    path = Path(path)
    entries: Dict[str, List[Tuple[int, int]]] = {}
    try:
        with open(path, encoding="utf8") as file_:
            for n, line in enumerate(file_, start=1):
                fields = line.rstrip("\n").split("\t")
                if len(fields) < 3:
                    raise _corrupt(path, f"line {n} has {len(fields)} tab-separated fields, not 3")
                try:
                    location = (decode_number(fields[1]), decode_number(fields[2]))
                except ValueError as err:
                    raise _corrupt(path, f"line {n}: {err}") from None
                entries.setdefault(fields[0].lower(), []).append(location)
    except UnicodeDecodeError as err:
        raise _corrupt(path, f"not UTF-8 text: {err.reason} at byte {err.start}") from None
    if not entries:
        raise _corrupt(path, "the index is empty")
    return entries


def decode_entry(raw: bytes) -> str:
    """UTF-8, as dictd databases are; a few GCIDE entries hold stray Windows-1252 bytes (0x92 for ')."""
    try:
        return raw.decode("utf8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


class DictzipFile:
    """Random access into a dictzip (`.dict.dz`) file by uncompressed offset."""

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        self._file: BinaryIO = open(self.path, "rb")
        self._recent: Dict[int, bytes] = {}
        try:
            self.chunk_length, self._starts, self._sizes = self._read_header()
        except struct.error:
            self._file.close()
            raise _corrupt(self.path, "the gzip header is cut short") from None
        except DictdFormatError:
            self._file.close()
            raise

    def _read_header(self) -> Tuple[int, List[int], Tuple[int, ...]]:
        file_ = self._file
        head = file_.read(10)
        if len(head) < 10 or head[:2] != _GZIP_MAGIC or head[2] != 8:
            raise _corrupt(self.path, "no gzip header")
        flags = head[3]
        if not flags & _FEXTRA:
            raise _corrupt(self.path, "a gzip file without dictzip's chunk table; compress it with dictzip")
        (extra_length,) = struct.unpack("<H", file_.read(2))
        extra = file_.read(extra_length)
        chunks = None
        position = 0
        while position + 4 <= len(extra):
            sub_id = extra[position : position + 2]
            sub_length = struct.unpack("<H", extra[position + 2 : position + 4])[0]
            body = extra[position + 4 : position + 4 + sub_length]
            if sub_id == b"RA":
                version, chunk_length, count = struct.unpack("<HHH", body[:6])
                if version != 1 or len(body) < 6 + 2 * count:
                    raise _corrupt(self.path, f"dictzip chunk table version {version} or size does not fit")
                chunks = (chunk_length, struct.unpack(f"<{count}H", body[6 : 6 + 2 * count]))
            position += 4 + sub_length
        if chunks is None:
            raise _corrupt(self.path, "no dictzip 'RA' field in the gzip header")
        for flag in (_FNAME, _FCOMMENT):
            if flags & flag:
                while file_.read(1) not in (b"\x00", b""):
                    pass
        if flags & _FHCRC:
            file_.read(2)
        chunk_length, sizes = chunks
        starts = [file_.tell()]
        for size in sizes:
            starts.append(starts[-1] + size)
        if starts[-1] > self.path.stat().st_size:
            raise _corrupt(
                self.path,
                f"truncated: the chunk table needs {starts[-1]} bytes, the file has {self.path.stat().st_size}",
            )
        return chunk_length, starts, sizes

    def _chunk(self, number: int) -> bytes:
        """One inflated chunk; the last few are kept, as neighbouring entries share chunks."""
        if number in self._recent:
            return self._recent[number]
        self._file.seek(self._starts[number])
        try:
            data = zlib.decompressobj(-zlib.MAX_WBITS).decompress(self._file.read(self._sizes[number]))
        except zlib.error as err:
            raise _corrupt(self.path, f"chunk {number} does not inflate: {err}") from None
        if len(data) != self.chunk_length and number != len(self._sizes) - 1:
            raise _corrupt(self.path, f"chunk {number} inflates to {len(data)} bytes, not {self.chunk_length}")
        if len(self._recent) >= RECENT_CHUNKS:
            del self._recent[next(iter(self._recent))]
        self._recent[number] = data
        return data

    def read(self, offset: int, length: int) -> bytes:
        """`length` bytes of the uncompressed text from `offset`."""
        first, skip = divmod(offset, self.chunk_length)
        last = (offset + length - 1) // self.chunk_length if length else first
        if last >= len(self._sizes):
            raise _corrupt(self.path, f"offset {offset}+{length} lies past the last chunk")
        data = b"".join(self._chunk(n) for n in range(first, last + 1))
        return data[skip : skip + length]

    def close(self) -> None:
        self._file.close()


class PlainDictFile:
    """An uncompressed `.dict` file behind the same `read` as `DictzipFile`."""

    def __init__(self, path: PathLike) -> None:
        self.path = Path(path)
        self._file: BinaryIO = open(self.path, "rb")

    def read(self, offset: int, length: int) -> bytes:
        self._file.seek(offset)
        data = self._file.read(length)
        if len(data) != length:
            raise _corrupt(self.path, f"offset {offset}+{length} lies past the end of the file")
        return data

    def close(self) -> None:
        self._file.close()


class DictdDatabase:
    """One dictd database: `entries(word)` gives the texts the index lists under `word`."""

    def __init__(self, index_path: PathLike, data_path: PathLike) -> None:
        self.index_path, self.data_path = Path(index_path), Path(data_path)
        for path in (self.index_path, self.data_path):
            if not path.is_file():
                raise FileNotFoundError(Errors.E507.format(path=path))
        self.index = read_index(self.index_path)
        self._data = (DictzipFile if self.data_path.suffix == ".dz" else PlainDictFile)(self.data_path)

    @classmethod
    def open(cls, index_path: PathLike, data_path: Optional[PathLike] = None) -> "DictdDatabase":
        """From NAME.index, with NAME.dict.dz (or NAME.dict) beside it unless `data_path` is given."""
        index_path = Path(index_path)
        if data_path is None:
            stem = index_path.with_suffix("")
            compressed, plain = stem.with_suffix(".dict.dz"), stem.with_suffix(".dict")
            data_path = compressed if compressed.is_file() or not plain.is_file() else plain
        return cls(index_path, data_path)

    def headwords(self) -> Iterator[str]:
        """Lowercased headwords (index keys), in index order."""
        return iter(self.index)

    def entries(self, word: str) -> List[str]:
        """The texts listed under `word` (case-insensitive); [] for a word not in the index."""
        texts = []
        for offset, length in dict.fromkeys(self.index.get(word.lower(), [])):  # listed twice: read once
            texts.append(decode_entry(self._data.read(offset, length)))
        return texts

    def close(self) -> None:
        self._data.close()

    def __enter__(self) -> "DictdDatabase":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
