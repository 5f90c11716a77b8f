"""The texts of a curve: each fold's training pool, dev set and test texts, read once.

Two tasks, one shape. `ner`: the folds `ner-folds` writes (fold-I/{train,dev,test}.spacy;
every text is tested once, in its fold). `textcat`: the split `split` writes, the
original texts only (train.jsonl, the clean dev.spacy, test_candidates.jsonl; no
augmentation, no rarification): one fold whose test texts every run shares.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence

import spacy
from spacy.tokens import Doc, DocBin

from ..errors import Errors
from ..ner.folds import FOLDS_FILE, fold_dir, read_folds
from ..outputs import SPLIT_RECORDS
from ..rarification.datasets import read_records
from ..rarification.records import make_docbin
from spacy_bertram.project_support import PathLike, write_bytes_atomic

TASKS = ("ner", "textcat")


@dataclass
class CurveFold:
    """One fold: the pool the subsets are drawn from, the dev set early stopping reads, the test texts."""

    fold: int
    pool: List[Doc]
    dev: Path
    test: List[Doc]
    test_ids: List[str]

    def pool_labels(self) -> Optional[List[str]]:
        """Each pool text's class (textcat), for stratified subsets; None for NER."""
        if not self.pool or not self.pool[0].cats:
            return None
        return [max(doc.cats, key=doc.cats.get) for doc in self.pool]


def check_task(task: str) -> str:
    if task not in TASKS:
        raise ValueError(Errors.E423.format(task=task))
    return task


def read_docbin(path: Path, vocab) -> List[Doc]:
    return list(DocBin().from_disk(path).get_docs(vocab))


def require(path: Path, command: str, files: Sequence[str]) -> Path:
    if not path.exists():
        raise ValueError(Errors.E426.format(path=path, command=command, files=", ".join(files)))
    return path


def load_folds(task: str, data_dir: PathLike) -> List[CurveFold]:
    """The folds of `task` read from `data_dir` (ner-folds' or split's output)."""
    vocab = spacy.blank("en").vocab
    root = Path(data_dir)
    if check_task(task) == "ner":
        require(root / FOLDS_FILE, "ner-folds", [FOLDS_FILE, "fold-I/{train,dev,test}.spacy"])
        info = read_folds(root)
        folds = []
        for fold, part in enumerate(info["parts"]):  # type: ignore[arg-type]
            where = fold_dir(root, fold)
            folds.append(
                CurveFold(
                    fold,
                    read_docbin(where / "train.spacy", vocab),
                    where / "dev.spacy",
                    read_docbin(where / "test.spacy", vocab),
                    [str(i) for i in part["test_ids"]],
                )
            )
        return folds
    for name in (*SPLIT_RECORDS, "dev.spacy", "splits.json"):
        require(root / name, "split", [*SPLIT_RECORDS, "dev.spacy", "splits.json"])
    labels = json.loads((root / "splits.json").read_text(encoding="utf8"))["labels"]
    nlp = spacy.blank("en")
    train = read_records(root / "train.jsonl")
    test = read_records(root / "test_candidates.jsonl")
    pool = list(make_docbin(train, labels, nlp).get_docs(nlp.vocab))
    test_docs = list(make_docbin(test, labels, nlp).get_docs(nlp.vocab))
    ids = [str(doc.user_data.get("id", i)) for i, doc in enumerate(test_docs)]
    return [CurveFold(0, pool, root / "dev.spacy", test_docs, ids)]


def write_subset(docs: Sequence[Doc], path: Path) -> Path:
    """The training subset as a DocBin (written atomically: a killed run never leaves half of one)."""
    return write_bytes_atomic(path, DocBin(docs=list(docs), store_user_data=True).to_bytes(), overwrite=True)


__all__ = ["CurveFold", "TASKS", "check_task", "load_folds", "write_subset"]
