"""The one record type for a labelled text, and the checks and writers every step shares.

`Record` is what datasets load, what splits and the baseline's augmentation
produce, and what rarification takes and writes (as spaCy `DocBin`s with
`doc.cats` one-hot over the labels).
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from ..errors import Errors, Warnings
from spacy_bertram.project_support import PathLike, write_bytes_atomic


@dataclass(frozen=True)
class Record:
    """One labelled text; `split` is "train", "test" or None (not fixed)."""

    text: str
    label: str
    id: Optional[str] = None
    split: Optional[str] = None

    def to_dict(self) -> dict:
        return asdict(self)


RecordLike = Union[Record, Tuple[str, str]]


class UnknownLabelError(ValueError):
    """An example's label is not among the labels the classifier was trained on."""


def as_records(examples: Iterable[RecordLike]) -> List[Record]:
    out = []
    for i, ex in enumerate(examples):
        if not isinstance(ex, Record):
            text, label = ex
            ex = Record(text, label)
        out.append(ex if ex.id is not None else Record(ex.text, ex.label, str(i)))
    return out


def check_labels(examples: Sequence[Record], labels: Sequence[str]) -> None:
    """Raise UnknownLabelError naming the first label that is not in `labels`."""
    known = set(labels)
    for ex in examples:
        if ex.label not in known:
            raise UnknownLabelError(Errors.E370.format(label=ex.label, id=ex.id, known=sorted(known)))


def drop_empty(examples: Sequence[Record], what: str = "examples") -> Tuple[List[Record], int]:
    """Remove examples whose text is empty or whitespace, with a warning."""
    kept = [ex for ex in examples if ex.text and ex.text.strip()]
    n_empty = len(examples) - len(kept)
    if n_empty:
        ids = [ex.id for ex in examples if not (ex.text and ex.text.strip())][:5]
        warnings.warn(Warnings.W007.format(what=what, n=n_empty, ids=ids))
    return kept, n_empty


def make_docbin(examples: Iterable[RecordLike], labels: Sequence[str], nlp=None):
    """A DocBin with `doc.cats` one-hot over `labels` and the id in user_data."""
    import spacy
    from spacy.tokens import DocBin

    items = as_records(examples)
    check_labels(items, labels)
    items, _ = drop_empty(items)
    nlp = nlp if nlp is not None else spacy.blank("en")
    docbin = DocBin(store_user_data=True)
    for ex in items:
        doc = nlp.make_doc(ex.text)
        doc.cats = {label: float(label == ex.label) for label in labels}
        doc.user_data["id"] = ex.id
        docbin.add(doc)
    return docbin


def write_docbin(path: PathLike, examples: Iterable[RecordLike], labels: Sequence[str], nlp=None) -> Path:
    return write_bytes_atomic(path, make_docbin(examples, labels, nlp).to_bytes(), overwrite=True)
