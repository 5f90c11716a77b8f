"""Reading a plain-text corpus as a stream of lines and words.

BERTRAM's training data and its context store come from corpora that can be far
larger than memory, so everything here streams: files are read text by text,
never whole. A text is the unit (one paragraph or sentence); contexts never
cross one. `file_texts` is the one reader of a file's texts, by its kind, for
`prepare` (one process or Dask) and `texts-store` alike: a .jsonl file's "text"
fields, a .spacy DocBin's docs, and any other file's lines (overlong lines in
bounded chunks), compressed files (.gz, .bz2, .xz) by the suffix before.

Bad input is reported before any work is done: `corpus_files` checks every
file (binary, not UTF-8) and raises a ValueError naming it (errors="raise",
the default, because training silently on part of a corpus is worse than
stopping), or skips it with a warning (errors="skip").

The tokenizer is a single regex, fast and predictable: a word is a run of
letters/digits, joined by inner hyphens or apostrophes ("e-mail", "don't",
"O'Neill", "12-year-old"); a trailing possessive/clitic "'s" is split off
("Hornby's" -> "Hornby", "'s") so that it does not create spurious rare types.
Punctuation is not a word; contexts keep it because they are cut from the raw
line, not rebuilt from tokens.
"""

from __future__ import annotations

import bz2
import codecs
import fnmatch
import gzip
import io
import json
import lzma
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, List, Optional, Sequence, Tuple, Union
from ..errors import Errors, Warnings
from ..types import PathLike


WORD_PATTERN = r"[^\W_]+(?:(?:['\u2019](?![sS]\b)|-)[^\W_]+)*|['\u2019][sS]\b"
WORD_RE = re.compile(WORD_PATTERN)

#: Lines longer than this are cut (at a space) into several lines, so that a
#: file without newlines is still read in bounded memory.
MAX_LINE_CHARS = 1_000_000
#: Bytes read at a time when checking a file.
CHUNK_BYTES = 1 << 20

_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: The kinds of text file read by their records rather than as lines, by suffix (.jsonl also compressed).
TEXT_SUFFIXES = (".txt", ".jsonl")
DOCBIN_SUFFIX = ".spacy"

Span = Tuple[str, int, int]


def tokenize(text: str, lowercase: bool = False) -> List[str]:
    """The words of `text` (see module docstring for what a word is)."""
    words = WORD_RE.findall(text)
    return [w.lower() for w in words] if lowercase else words


def tokenize_spans(text: str, lowercase: bool = False) -> List[Span]:
    """(word, start, end) for each word; offsets index into `text` itself."""
    if lowercase:
        return [(m.group().lower(), m.start(), m.end()) for m in WORD_RE.finditer(text)]
    return [(m.group(), m.start(), m.end()) for m in WORD_RE.finditer(text)]


def hyphen_parts(span: Span) -> List[Span]:
    """The parts of a hyphen-joined word as (part, start, end), [] for another word: "twinkly-eyed" is one word
    here, and spaCy's tokenizer cuts it into "twinkly", "-", "eyed", so the component meets the parts as tokens
    of their own. A store of a user's texts counts and samples them too (`text_store.py`)."""
    word, start, _ = span
    if "-" not in word:
        return []
    parts: List[Span] = []
    for piece in word.split("-"):
        parts.append((piece, start, start + len(piece)))
        start += len(piece) + 1
    return parts


def _open_binary(path: Path) -> IO[bytes]:
    """Open a file for reading bytes, decompressing .gz/.bz2/.xz transparently."""
    opener = _OPENERS.get(path.suffix.lower())
    return opener(path, "rb") if opener else open(path, "rb")


def check_corpus_paths(paths: Union[PathLike, Iterable[PathLike]]) -> List[Path]:
    """The corpus paths, each a file or a directory, else a ValueError naming it: `prepare` checks
    them before it imports its step (torch), without walking the directories."""
    paths = [Path(raw) for raw in ([paths] if isinstance(paths, (str, Path)) else paths)]
    for path in paths:
        if not (path.is_dir() or path.is_file()):
            raise ValueError(Errors.E209.format(path=path))
    return paths


def expand_paths(paths: Union[PathLike, Iterable[PathLike]]) -> List[Path]:
    """Files named by `paths`: files as given, directories recursively (sorted,
    hidden entries skipped). Raises ValueError for a path that does not exist."""
    files: List[Path] = []
    for path in check_corpus_paths(paths):
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path).parts
                if child.is_file() and not any(part.startswith(".") for part in rel):
                    files.append(child)
        else:
            files.append(path)
    return files


def exclude_files(paths: Union[PathLike, Iterable[PathLike]], patterns: Sequence[str]) -> List[Path]:
    """The files of `paths` whose name matches none of the glob `patterns` (a store for evaluation can leave
    out a dictionary whose entries name the evaluated words). A pattern that matches nothing is an error:
    a misspelt name would otherwise leave the file in silently."""
    given = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files = expand_paths(given)
    for pattern in patterns:
        if not any(fnmatch.fnmatch(path.name, pattern) for path in files):
            raise ValueError(Errors.E291.format(pattern=pattern, paths=[str(p) for p in given]))
    return [path for path in files if not any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns)]


def check_file(path: Path) -> None:
    """Raise ValueError if `path` cannot be read as texts: a text file that looks binary (NUL byte) or is not
    valid UTF-8, a .jsonl line that is no JSON object with a "text" string, a .spacy file that is no DocBin.

    Streams the file in chunks with an incremental decoder, so it is cheap
    next to tokenizing and never holds the file in memory.
    """
    kind = text_kind(path)
    if kind == DOCBIN_SUFFIX:
        _docbin_docs(path)
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    try:
        with _open_binary(path) as file_:
            while True:
                chunk = file_.read(CHUNK_BYTES)
                if b"\x00" in chunk:
                    pos = offset + chunk.index(b"\x00")
                    raise ValueError(Errors.E210.format(pos=pos, path=path))
                try:
                    decoder.decode(chunk, final=not chunk)
                except UnicodeDecodeError as err:
                    raise ValueError(Errors.E211.format(where=f" (byte {offset + err.start})", path=path)) from None
                if not chunk:
                    break
                offset += len(chunk)
    except (OSError, EOFError, lzma.LZMAError) as err:
        raise ValueError(Errors.E212.format(err=err, path=path)) from None
    if kind == ".jsonl":  # every record, before any work: a bad line found in pass 2 would cost pass 1
        for _ in _jsonl_texts(path):
            pass


def corpus_files(paths: Union[PathLike, Iterable[PathLike]], errors: str = "raise") -> List[Path]:
    """Expand and check the corpus files; errors="skip" warns and drops bad ones.

    Raises ValueError if no usable file is left.
    """
    if errors not in ("raise", "skip"):
        raise ValueError(Errors.E213.format(errors=errors))
    files = expand_paths(paths)
    good: List[Path] = []
    for path in files:
        try:
            check_file(path)
        except ValueError as err:
            if errors == "raise":
                raise
            warnings.warn(Warnings.W006.format(reason=err))
            continue
        good.append(path)
    if not good:
        raise ValueError(Errors.E214.format(what="no readable text files", paths=[str(p) for p in files] or paths))
    return good


def _bounded_lines(file_: IO[str], limit: int) -> Iterator[str]:
    """Lines of `file_`, with lines longer than `limit` cut at the last space."""
    carry = ""
    while True:
        piece = file_.readline(limit)
        if not piece:
            if carry:
                yield carry
            return
        line = carry + piece
        carry = ""
        if not line.endswith("\n") and len(piece) == limit:
            cut = line.rfind(" ")
            if cut > 0:
                line, carry = line[:cut], line[cut + 1 :]
        yield line.rstrip("\r\n")


def text_kind(path: Path) -> Optional[str]:
    """The kind of text file `path` is, by its suffix (a compressed one by the suffix before): ".txt", ".jsonl"
    or ".spacy"; None for another kind (`prepare` reads it as lines, `texts-store` refuses it)."""
    suffixes = [suffix.lower() for suffix in path.suffixes]
    if suffixes and suffixes[-1] == DOCBIN_SUFFIX:
        return DOCBIN_SUFFIX
    if suffixes and suffixes[-1] in _OPENERS:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes and suffixes[-1] in TEXT_SUFFIXES else None


def file_texts(path: Path, max_line_chars: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The non-blank texts of one file, by its kind (`text_kind`): each line's "text" field of a .jsonl file,
    each doc's text of a .spacy DocBin, else each line. The one reader of a texts file: `prepare` and
    `texts-store` read a file the same way. A bad line or file raises a ValueError naming it."""
    kind = text_kind(path)
    if kind == DOCBIN_SUFFIX:
        yield from (doc.text for doc in _docbin_docs(path) if doc.text.strip())
    elif kind == ".jsonl":
        yield from _jsonl_texts(path)
    else:
        yield from _file_lines(path, max_line_chars)


def iter_lines(files: Sequence[Path], max_line_chars: int = MAX_LINE_CHARS) -> Iterator[str]:
    """Stream the non-blank texts of `files` (already checked by `corpus_files`), each read by `file_texts`."""
    for path in files:
        yield from file_texts(path, max_line_chars)


def decoded(line: Union[bytes, str], path: Union[Path, str], number: int) -> str:
    """A line read as bytes, as UTF-8 text (E211 names the file and the line)."""
    if isinstance(line, str):
        return line
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(Errors.E211.format(where=f" (line {number})", path=path)) from None


def _file_lines(path: Path, max_line_chars: int) -> Iterator[str]:
    try:
        with _open_binary(path) as raw, io.TextIOWrapper(raw, encoding="utf-8") as text:
            try:
                for line in _bounded_lines(text, max_line_chars):
                    if line.strip():
                        yield line
            except UnicodeDecodeError:
                raise ValueError(Errors.E211.format(where="", path=path)) from None
    except (OSError, EOFError, lzma.LZMAError) as err:  # a damaged .gz/.bz2/.xz
        raise ValueError(Errors.E212.format(err=err, path=path)) from None


def _jsonl_texts(path: Path) -> Iterator[str]:
    try:
        with _open_binary(path) as raw:
            for number, line in enumerate(raw, 1):
                text = decoded(line, path, number)
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except ValueError as err:
                    raise ValueError(Errors.E081.format(path=path, line=number, err=err)) from None
                if not isinstance(record, dict):
                    raise ValueError(Errors.E081.format(path=path, line=number, err=f"a {type(record).__name__}"))
                text = record.get("text")
                if not isinstance(text, str):
                    found = 'no "text" field' if "text" not in record else f'"text": {json.dumps(text)[:60]}'
                    raise ValueError(Errors.E080.format(path=path, line=number, found=found))
                if text.strip():
                    yield text
    except (OSError, EOFError, lzma.LZMAError) as err:
        raise ValueError(Errors.E212.format(err=err, path=path)) from None


def _docbin_docs(path: Path) -> list:
    from spacy.tokens import DocBin  # spaCy only where a DocBin is read
    from spacy.vocab import Vocab

    try:
        return list(DocBin().from_disk(path).get_docs(Vocab()))
    except Exception as err:  # zlib, msgpack and spaCy each raise their own on a file that is no DocBin
        raise ValueError(Errors.E083.format(path=path, err=err)) from None


@dataclass
class Corpus:
    """A re-iterable corpus: iterate it as many times as needed (two-pass builds).

    `Corpus.from_paths` expands and checks the files once; iterating yields
    lines (`lines()`) or lists of words (`__iter__`).
    """

    files: List[Path]
    lowercase: bool = False

    @classmethod
    def from_paths(
        cls, paths: Union[PathLike, Iterable[PathLike]], lowercase: bool = False, errors: str = "raise"
    ) -> "Corpus":
        return cls(corpus_files(paths, errors=errors), lowercase=lowercase)

    def lines(self) -> Iterator[str]:
        return iter_lines(self.files)

    def __iter__(self) -> Iterator[List[str]]:
        for line in self.lines():
            words = tokenize(line, self.lowercase)
            if words:
                yield words

    @property
    def size_bytes(self) -> int:
        """Total size on disk (compressed size for compressed files): for progress bars."""
        return sum(path.stat().st_size for path in self.files)


def iter_sentences(
    paths: Union[PathLike, Iterable[PathLike]], lowercase: bool = False, errors: str = "raise"
) -> Iterator[List[str]]:
    """Word lists, one per non-empty line, from one or many files or a directory."""
    return iter(Corpus.from_paths(paths, lowercase=lowercase, errors=errors))
