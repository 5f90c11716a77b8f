"""k folds by text with a fixed seed, written once so that every system sees the same folds.

Fold i's test set is the i-th part of a seeded shuffle of the texts; its dev set
(for `spacy train`'s evaluations and model-best) is a seeded share of the other
parts, and its training set is the rest. Every text is in exactly one test set,
so the systems' predictions pooled over the folds cover the whole data once.

Layout: OUT/fold-I/{train,dev,test}.spacy and OUT/folds.json (settings, sizes and
the source index of every test text). The whole directory is written beside its
place and renamed in, so a killed run leaves no partial folds.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Dict, List, Sequence

from spacy.tokens import Doc, DocBin

from ..errors import Errors
from spacy_bertram.project_support import PathLike, atomic_directory, check_output_dir, write_json_atomic
from ..outputs import FOLD_PARTS, FOLDS_FILE, NER_FOLDS_OUTPUTS

PARTS = FOLD_PARTS


def assign_folds(n_texts: int, k: int, seed: int) -> List[int]:
    """The fold of each text: a seeded shuffle dealt round-robin, so fold sizes differ by at most one."""
    if k < 2:
        raise ValueError(Errors.E408.format(k=k))
    if n_texts < k:
        raise ValueError(Errors.E409.format(n_texts=n_texts, k=k))
    order = list(range(n_texts))
    random.Random(seed).shuffle(order)
    fold = [0] * n_texts
    for position, index in enumerate(order):
        fold[index] = position % k
    return fold


def fold_parts(fold_of: Sequence[int], fold: int, dev_share: float, seed: int) -> Dict[str, List[int]]:
    """Indices of fold `fold`'s train, dev and test texts (dev: a seeded share of the non-test texts)."""
    if not 0 <= dev_share < 1:
        raise ValueError(Errors.E410.format(dev_share=dev_share))
    test = [i for i, f in enumerate(fold_of) if f == fold]
    rest = [i for i, f in enumerate(fold_of) if f != fold]
    shuffled = rest[:]
    random.Random(seed * 1000 + fold).shuffle(shuffled)
    dev = set(shuffled[: max(1, round(dev_share * len(rest)))])
    return {"train": [i for i in rest if i not in dev], "dev": sorted(dev), "test": test}


def write_folds(
    docs: Sequence[Doc],
    output_dir: PathLike,
    k: int = 2,
    seed: int = 0,
    dev_share: float = 0.1,
    source: str = "",
    force: bool = False,
) -> Dict[str, object]:
    """Write the k folds' DocBins and folds.json (replacing the directory); returns the summary."""
    check_output_dir(output_dir, NER_FOLDS_OUTPUTS, command="ner-folds", force=force, replaces=True)
    fold_of = assign_folds(len(docs), k, seed)
    summary: Dict[str, object] = {
        "source": source,
        "texts": len(docs),
        "folds": k,
        "seed": seed,
        "dev_share": dev_share,
        "entities": sum(len(d.ents) for d in docs),
        "tokens": sum(len(d) for d in docs),
        "parts": [],
    }
    with atomic_directory(output_dir, NER_FOLDS_OUTPUTS, overwrite=True) as tmp:
        for fold in range(k):
            parts = fold_parts(fold_of, fold, dev_share, seed)
            (Path(tmp) / f"fold-{fold}").mkdir()
            for name in PARTS:
                DocBin(docs=[docs[i] for i in parts[name]], store_user_data=False).to_disk(
                    Path(tmp) / f"fold-{fold}" / f"{name}.spacy"
                )
            summary["parts"].append({"train": len(parts["train"]), "dev": len(parts["dev"]), "test_ids": parts["test"]})
        write_json_atomic(Path(tmp) / FOLDS_FILE, summary, indent=None)
    return summary


def read_folds(folds_dir: PathLike) -> Dict[str, object]:
    """folds.json of a folds directory (an error naming the fix if it is missing)."""
    path = Path(folds_dir) / FOLDS_FILE
    if not path.is_file():
        raise ValueError(Errors.E411.format(FOLDS_FILE=FOLDS_FILE, folds_dir=str(folds_dir)))
    return json.loads(path.read_text(encoding="utf8"))


def fold_dir(folds_dir: PathLike, fold: int) -> Path:
    return Path(folds_dir) / f"fold-{fold}"


__all__ = ["FOLDS_FILE", "assign_folds", "fold_dir", "fold_parts", "read_folds", "write_folds"]
