"""Each system's entities on its fold's test texts, and the tokens the component calls rare.

One row per test text (JSON lines, fold-I.jsonl, each written atomically):
{"id": source index, "fold": I, "words": [...], "gold": [[start, end, type], ...],
 "rare": [token indices the `bertram` component calls rare], "pred": {system: [[start, end, type], ...]}}

Rarity is asked of the trained-with-bertram pipeline's own component
(`BertramComponent.rare_tokens`), so the metrics follow whatever rule the
pipeline runs with. Every system reads a fresh Doc of the gold tokens, so
tokenisation never differs from the gold spans.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from ..errors import Errors
from spacy_bertram import VectorCache
from spacy_bertram.project_support import PathLike, atomic_path
from .folds import fold_dir, read_folds
from .systems import BERTRAM, SYSTEMS, Checkpoint, load_systems

logger = logging.getLogger("spacy_bertram")

Row = Dict[str, object]


def spans_of(doc: Doc) -> List[List[object]]:
    return [[e.start, e.end, e.label_] for e in doc.ents]


def bare_copy(nlp, doc: Doc) -> Doc:
    """The doc's tokens and spaces in `nlp`'s vocab, no annotation."""
    return Doc(nlp.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])


def predict_fold(
    systems: Dict[str, object], gold: Sequence[Doc], ids: Sequence[int], fold: int, batch_size: int = 64
) -> List[Row]:
    """Rows of one fold: gold spans, rare tokens, every system's spans."""
    component = systems[BERTRAM].get_pipe("bertram")
    rows: List[Row] = [
        {
            "id": int(i),
            "fold": fold,
            "words": [t.text for t in doc],
            "gold": spans_of(doc),
            "rare": component.rare_tokens(doc),
            "pred": {},
        }
        for i, doc in zip(ids, gold)
    ]
    for name, nlp in systems.items():
        start = time.time()
        docs = nlp.pipe((bare_copy(nlp, doc) for doc in gold), batch_size=batch_size)
        for row, doc in zip(rows, docs):
            row["pred"][name] = spans_of(doc)  # type: ignore[index]
        logger.info("fold %d %s: %d texts in %.1f s", fold, name, len(rows), time.time() - start)
    return rows


def share_vector_caches(pipelines: Iterable[Language], caches: Dict[str, VectorCache]) -> None:
    """Give every `bertram` component of the same BERTRAM model one vector cache.

    NER training leaves the component's weights as they were loaded (it has no
    weight update), so the pipelines of every seed and checkpoint infer the same
    vectors: one cache per model fingerprint spares inferring them again.
    """
    for nlp in pipelines:
        if "bertram" in nlp.pipe_names:
            component = nlp.get_pipe("bertram")
            model_id = component.cfg.get("model_id")
            if model_id is not None:
                component.cache = caches.setdefault(model_id, component.cache)


def predict_folds(
    folds_dir: PathLike,
    training_dir: PathLike,
    output_dir: PathLike,
    checkpoint: Checkpoint = None,
    systems: Sequence[str] = SYSTEMS,
    caches: Optional[Dict[str, VectorCache]] = None,
) -> List[Path]:
    """fold-I.jsonl for every fold (always predicted again: the models may have changed); returns their paths.

    `checkpoint`: which saved pipelines (model-best by default, see `systems.model_dir`); `caches`: vector
    caches shared by model fingerprint across calls (`share_vector_caches`)."""
    info = read_folds(folds_dir)
    paths = []
    for fold, part in enumerate(info["parts"]):  # type: ignore[arg-type]
        path = Path(output_dir) / f"fold-{fold}.jsonl"
        paths.append(path)
        loaded = load_systems(training_dir, fold, checkpoint, systems)
        if caches is not None:
            share_vector_caches(loaded.values(), caches)
        vocab = spacy.blank("en").vocab
        gold = list(DocBin().from_disk(fold_dir(folds_dir, fold) / "test.spacy").get_docs(vocab))
        ids = part["test_ids"]
        if len(ids) != len(gold):
            raise ValueError(Errors.E412.format(fold=fold, n_ids=len(ids), n_gold=len(gold)))
        rows = predict_fold(loaded, gold, ids, fold)
        with atomic_path(path, overwrite=True) as tmp:
            with open(tmp, "w", encoding="utf8") as file_:
                file_.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return paths


def read_rows(paths: Sequence[PathLike]) -> List[Row]:
    rows: List[Row] = []
    for path in paths:
        with open(path, encoding="utf8") as file_:
            rows.extend(json.loads(line) for line in file_ if line.strip())
    return rows


__all__ = ["bare_copy", "predict_fold", "predict_folds", "read_rows", "share_vector_caches", "spans_of"]
