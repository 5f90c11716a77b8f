"""The dictd reader: base-64 numbers, dictzip random access, and named errors for damaged files."""

from __future__ import annotations

import gzip
import shutil
import subprocess

import pytest
from tests.dictd_fixture import TINY_GCIDE, write_dictd

from spacy_bertram.dictionary.dictd import (
    DictdDatabase,
    DictdFormatError,
    DictzipFile,
    decode_entry,
    decode_number,
    encode_number,
    read_index,
)


def test_numbers_are_dictd_base64():
    assert decode_number("A") == 0 and decode_number("BA") == 64 and decode_number("Hi") == 482
    assert all(decode_number(encode_number(n)) == n for n in (0, 1, 63, 64, 4095, 19757343))
    with pytest.raises(ValueError, match=r"'A\*' is not a dictd base-64 number"):
        decode_number("A*")


def test_entries_read_by_offset_match_the_whole_decompressed_file(tiny_gcide):
    whole = gzip.open(tiny_gcide.with_suffix(".dict.dz")).read().decode("utf8")  # the fixture is valid gzip
    assert whole == "".join(TINY_GCIDE.values())
    with DictdDatabase.open(tiny_gcide) as database:
        assert database.entries("Goose") == [TINY_GCIDE["goose"]]  # spans several 64-byte chunks
        assert database.entries("kumquat") == [TINY_GCIDE["kumquat"]]
        assert database.entries("zyzzyva") == []
        assert list(database.headwords()) == list(TINY_GCIDE)


def test_an_uncompressed_dict_file_reads_the_same(tmp_path, tiny_gcide):
    index = tmp_path / "plain.index"
    index.write_text(tiny_gcide.read_text())
    (tmp_path / "plain.dict").write_bytes("".join(TINY_GCIDE.values()).encode())
    with DictdDatabase.open(index) as database:
        assert database.entries("goose") == [TINY_GCIDE["goose"]]


def test_a_stray_windows_1252_byte_does_not_stop_the_reader():
    assert decode_entry(b"market\x92s drop") == "market\u2019s drop"


@pytest.mark.parametrize("damage", ["truncate", "garbage", "plain_gzip", "header_only"])
def test_a_damaged_dict_dz_is_a_named_error(tmp_path, damage):
    index = write_dictd(tmp_path, TINY_GCIDE)
    data_path = tmp_path / "tiny.dict.dz"
    data = data_path.read_bytes()
    if damage == "truncate":
        data_path.write_bytes(data[: len(data) // 2])
    elif damage == "header_only":
        data_path.write_bytes(data[:11])  # cut inside the header
    elif damage == "garbage":
        data_path.write_bytes(b"this is not a dictzip file" * 4)
    else:
        data_path.write_bytes(gzip.compress("".join(TINY_GCIDE.values()).encode()))
    with pytest.raises(DictdFormatError, match=r"\[E503\]") as err:
        DictdDatabase.open(index).entries("goose")
    assert str(data_path) in str(err.value) and "Reinstall" in str(err.value)


def test_a_chunk_that_does_not_inflate_is_a_named_error(tmp_path):
    index = write_dictd(tmp_path, TINY_GCIDE)
    data_path = tmp_path / "tiny.dict.dz"
    data = bytearray(data_path.read_bytes())
    data[-60:-40] = b"\xff" * 20  # inside the last chunks
    data_path.write_bytes(bytes(data))
    with pytest.raises(DictdFormatError, match=r"\[E503\].*tiny.dict.dz"):
        with DictdDatabase.open(index) as database:
            for word in TINY_GCIDE:
                database.entries(word)


def test_a_bad_index_line_names_the_file_and_line(tmp_path):
    index = tmp_path / "bad.index"
    index.write_text("kumquat\tA\tHi\nbroken line\n")
    with pytest.raises(DictdFormatError, match=r"\[E503\].*bad.index.*line 2"):
        read_index(index)


def test_a_missing_data_file_is_file_not_found(tmp_path, tiny_gcide):
    index = tmp_path / "alone.index"
    index.write_text(tiny_gcide.read_text())
    with pytest.raises(FileNotFoundError, match=r"\[E507\].*alone.dict"):
        DictdDatabase.open(index)


@pytest.mark.skipif(shutil.which("dictzip") is None, reason="dictzip (Debian package dictzip) not installed")
def test_a_file_compressed_by_the_real_dictzip_reads_the_same(tmp_path, tiny_gcide):
    index = tmp_path / "real.index"
    index.write_text(tiny_gcide.read_text())
    text = "".join(TINY_GCIDE.values()) * 400  # several of dictzip's 58 KB chunks
    (tmp_path / "real.dict").write_text(text, encoding="utf8")
    subprocess.run(["dictzip", str(tmp_path / "real.dict")], check=True)
    assert (tmp_path / "real.dict.dz").is_file() and not (tmp_path / "real.dict").exists()
    data = DictzipFile(tmp_path / "real.dict.dz")
    assert data.chunk_length > 0 and len(data._sizes) > 1
    offset = len(text.encode()) - 1000  # in the last chunk
    assert data.read(offset, 1000) == text.encode()[offset:]
    assert data.read(0, 20000).decode() == text[:20000]
    with DictdDatabase.open(index) as database:
        assert database.entries("goose") == [TINY_GCIDE["goose"]]
