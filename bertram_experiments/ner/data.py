"""NER data as Docs with entities: IOB text files and a user's `.spacy` files.

The IOB format is WNUT's: one `token<TAB>tag` per line, tags `O`, `B-type` or
`I-type`, and a blank line (or a line holding only whitespace, as WNUT-16 writes
it) between texts. A line of any other shape raises `NerFormatError`, which names
the file, the line number and the line, so a damaged file is never read halfway.

"wnut16" names the WNUT-16 Twitter NER training split at
assets/ner/wnut16_train.txt, which the project writes (`scripts/fetch_wnut16.py`,
the `ner-data` step); a missing file is an error that names that command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Sequence, Tuple

from spacy.tokens import Doc, DocBin, Span
from spacy.vocab import Vocab

from ..errors import Errors
from spacy_bertram.project_support import PathLike
from ..assets import WNUT16_COMMAND, WNUT16_FILE

WNUT16_NAME = "wnut16"
IOB_SUFFIXES = (".txt", ".tsv", ".iob", ".conll")

Entity = Tuple[int, int, str]


class NerFormatError(ValueError):
    """A malformed line of an IOB file."""


@dataclass(frozen=True)
class Tagged:
    """One text of an IOB file: its tokens, their tags and the line it starts on."""

    words: Tuple[str, ...]
    tags: Tuple[str, ...]
    line: int


def check_tag(tag: str) -> bool:
    """`O`, or `B-type` / `I-type` with a non-empty type."""
    return tag == "O" or (len(tag) > 2 and tag[:2] in ("B-", "I-"))


def parse_iob(lines: Iterable[str], source: str = "<lines>") -> List[Tagged]:
    """Texts of `token<TAB>tag` lines; raises NerFormatError naming the line number."""
    texts: List[Tagged] = []
    words: List[str] = []
    tags: List[str] = []
    start = 0
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            if words:
                texts.append(Tagged(tuple(words), tuple(tags), start))
            words, tags = [], []
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not check_tag(fields[1]):
            raise NerFormatError(Errors.E403.format(source=source, number=number, line=line[:80]))
        if not words:
            start = number
        words.append(fields[0])
        tags.append(fields[1])
    if words:
        texts.append(Tagged(tuple(words), tuple(tags), start))
    return texts


def read_iob(path: PathLike) -> List[Tagged]:
    """The texts of an IOB file (UTF-8)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(Errors.E404.format(path=str(path)))
    with open(path, encoding="utf8") as file_:
        return parse_iob(file_, str(path))


def iob_entities(tags: Sequence[str]) -> List[Entity]:
    """(start, end, type) spans; an `I-` tag after `O` or after another type starts an entity (conlleval's rule)."""
    spans: List[Entity] = []
    for i, tag in enumerate(tags):
        if tag == "O":
            continue
        kind = tag[2:]
        if tag.startswith("I-") and spans and spans[-1][1] == i and spans[-1][2] == kind:
            spans[-1] = (spans[-1][0], i + 1, kind)
        else:
            spans.append((i, i + 1, kind))
    return spans


def tagged_doc(vocab: Vocab, text: Tagged) -> Doc:
    """A Doc of the text's tokens (one space between them) with its entities."""
    doc = Doc(vocab, words=list(text.words))
    doc.ents = [Span(doc, s, e, label=kind) for s, e, kind in iob_entities(text.tags)]
    return doc


def wnut16_path(assets: PathLike) -> Path:
    """assets/ner/wnut16_train.txt, or an error naming the command that writes it."""
    path = Path(assets) / WNUT16_FILE
    if not path.is_file():
        raise ValueError(Errors.E417.format(path=str(path), command=WNUT16_COMMAND.format(assets=assets)))
    return path


def load_ner_docs(source: str, vocab: Vocab, assets: PathLike = "assets") -> List[Doc]:
    """Docs with entities from "wnut16", an IOB file, a `.spacy` file or a directory of them."""
    if source == WNUT16_NAME:
        return [tagged_doc(vocab, t) for t in read_iob(wnut16_path(assets))]
    path = Path(source)
    if path.is_file() and path.suffix in IOB_SUFFIXES:
        return [tagged_doc(vocab, t) for t in read_iob(path)]
    files = sorted(path.rglob("*.spacy")) if path.is_dir() else [path] if path.suffix == ".spacy" else []
    if not files or not all(f.is_file() for f in files):
        raise ValueError(Errors.E406.format(source=source, WNUT16_NAME=WNUT16_NAME, suffixes=", ".join(IOB_SUFFIXES)))
    docs = [doc for f in files for doc in DocBin().from_disk(f).get_docs(vocab)]
    if not any(doc.ents for doc in docs):
        raise ValueError(Errors.E407.format(source=source))
    return docs


__all__ = [
    "NerFormatError",
    "Tagged",
    "WNUT16_NAME",
    "iob_entities",
    "load_ner_docs",
    "parse_iob",
    "read_iob",
    "tagged_doc",
    "wnut16_path",
]
