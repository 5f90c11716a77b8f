"""Training and predicting every run of a curve, one unit at a time, resumably.

A unit is (fold, draw, size, seed): the stock and with-bertram pipelines trained on
the same nested subset with the same seed and schedule (`schedule.py`), then both
run on the fold's test texts. Its directory keeps the subset (train.spacy), the
predictions (one row per test text, both systems) and run.json (what it was
trained with, seconds to train and to predict); run.json is written last, so a unit
that has it finished, and one whose recorded settings equal the current ones is
skipped: a killed curve resumes and a changed setting retrains. The trained
pipelines (about 100 MB each) are deleted once predicted unless `keep_models`.

Training leaves the `bertram` component's weights as loaded, so every run infers
the same vector for a test word: the runs of one process share one vector cache
(`ner.predict.share_vector_caches`), and only the first run over a fold's test
texts infers them (its prediction is recorded as cold, the others as warm).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from ..outputs import BASELINE_OUTPUTS
from ..ner.predict import bare_copy, share_vector_caches, spans_of
from ..ner.systems import component_identity, md5_of
from ..rarification.baseline import train_baseline
from .data import CurveFold, write_subset
from .schedule import CurveSchedule
from .subsets import check_sizes, nested_order, nested_subsets
from spacy_bertram import VectorCache
from spacy_bertram.project_support import PathLike, atomic_path, remove_written, write_json_atomic

logger = logging.getLogger("spacy_bertram")

STOCK, BERTRAM = "stock", "bertram"
SYSTEMS = (STOCK, BERTRAM)
RUN_FILE = "run.json"
PREDICTIONS_FILE = "predictions.jsonl"
Row = Dict[str, object]


@dataclass(frozen=True)
class CurveSettings:
    """What every unit of a curve shares."""

    task: str
    stock_config: str
    bertram_config: str
    bertram: str
    context_store: Optional[str] = None
    base_model: str = "default"
    gpu_id: int = -1
    sizes: Tuple[int, ...] = (50, 150, 450)
    seeds: Tuple[int, ...] = (0, 1)
    draws: int = 1
    schedule: CurveSchedule = field(default_factory=CurveSchedule)
    #: the with-bertram arm's [components.bertram] contexts instead of its config's (None: the config's)
    contexts: Optional[str] = None

    def config_of(self, system: str) -> str:
        return self.stock_config if system == STOCK else self.bertram_config

    def paths_of(self, system: str) -> Dict[str, str]:
        if system == STOCK:
            return {}
        paths = {"bertram": self.bertram}
        if self.context_store:
            paths["context_store"] = self.context_store
        return paths


@dataclass(frozen=True)
class Unit:
    fold: int
    draw: int
    size: int
    seed: int

    def directory(self, training_dir: PathLike) -> Path:
        return Path(training_dir) / f"fold-{self.fold}" / f"draw-{self.draw}" / f"n-{self.size}" / f"seed-{self.seed}"


def draw_seed(fold: int, draw: int) -> int:
    """The order of draw `draw` of fold `fold`: fixed by the two, the same for every system and seed."""
    return 1000 * fold + draw


def subsets_of(fold: CurveFold, draws: int, sizes: Sequence[int]) -> Dict[int, Dict[int, List[int]]]:
    """{draw: {size: pool indices}}: nested subsets of the fold's pool, one order per draw."""
    labels = fold.pool_labels()
    return {
        draw: nested_subsets(nested_order(len(fold.pool), draw_seed(fold.fold, draw), labels), sizes)
        for draw in range(draws)
    }


def units(settings: CurveSettings, folds: Sequence[CurveFold]) -> Iterator[Unit]:
    """Every unit, the smallest subsets first (the first points of the curve are done first)."""
    for size in check_sizes(settings.sizes, min(len(fold.pool) for fold in folds)):
        for fold in folds:
            for draw in range(settings.draws):
                for seed in settings.seeds:
                    yield Unit(fold.fold, draw, size, seed)


def unit_identity(
    settings: CurveSettings, unit: Unit, subset: Sequence[Doc], fold: CurveFold, bertram: Dict[str, str]
) -> Dict[str, object]:
    """What a unit's result depends on (not the other sizes or seeds of the curve); `bertram` is the
    model's `component_identity`, hashed once per curve."""
    texts = "\n".join(doc.text for doc in subset)
    wanted = {
        "task": settings.task,
        "unit": asdict(unit),
        "schedule": asdict(settings.schedule),
        "base_model": settings.base_model,
        "subset_md5": hashlib.md5(texts.encode("utf8")).hexdigest(),
        "dev_md5": md5_of(fold.dev),
        "test_texts": len(fold.test),
        "configs": {system: md5_of(Path(settings.config_of(system))) for system in SYSTEMS},
        "bertram": bertram,
        "context_store": settings.context_store,
    }
    if settings.contexts is not None:  # only when set: a run made before the option keeps its identity
        wanted["contexts"] = settings.contexts
    return json.loads(json.dumps(wanted))


def read_run(directory: Path) -> Optional[dict]:
    path = directory / RUN_FILE
    return json.loads(path.read_text(encoding="utf8")) if path.is_file() else None


def train_unit(
    settings: CurveSettings, unit: Unit, subset: Sequence[Doc], fold: CurveFold, directory: Path
) -> Dict[str, dict]:
    """Both systems trained on the subset; {system: train_baseline's info, with the steps}."""
    train_path = write_subset(subset, directory / "train.spacy")
    steps = settings.schedule.for_subset(subset)
    infos = {}
    for system in SYSTEMS:
        info = train_baseline(
            train_path,
            fold.dev,
            directory / system,
            base_config=settings.config_of(system),
            base_model=settings.base_model,
            gpu_id=settings.gpu_id,
            seed=unit.seed,
            max_steps=steps.max_steps,
            eval_frequency=steps.eval_frequency,
            patience=steps.patience,
            batch_size=settings.schedule.batch_size,
            learn_rate=settings.schedule.learn_rate,
            freeze=False,
            check_frozen=False,
            paths=settings.paths_of(system) or None,
            force=True,
            bertram_contexts=settings.contexts if system == BERTRAM else None,
        )
        infos[system] = {**info, **asdict(steps)}
    return infos


def label_of(doc: Doc) -> str:
    return max(doc.cats, key=doc.cats.get)


def predict_unit(pipelines: Dict[str, Language], fold: CurveFold, task: str) -> Tuple[List[Row], Dict[str, float]]:
    """One row per test text (gold, the tokens the component calls rare, each system's output) and
    each system's seconds for the test texts."""
    component = pipelines[BERTRAM].get_pipe("bertram")
    read: Callable[[Doc], object] = spans_of if task == "ner" else label_of
    rows: List[Row] = [
        {"id": text_id, "fold": fold.fold, "gold": read(doc), "rare": component.rare_tokens(doc), "pred": {}}
        for text_id, doc in zip(fold.test_ids, fold.test)
    ]
    seconds = {}
    for system, nlp in pipelines.items():
        start = time.perf_counter()
        docs = list(nlp.pipe((bare_copy(nlp, doc) for doc in fold.test), batch_size=64))
        seconds[system] = round(time.perf_counter() - start, 3)
        for row, doc in zip(rows, docs):
            row["pred"][system] = read(doc)  # type: ignore[index]
    return rows, seconds


def write_rows(path: Path, rows: Sequence[Row]) -> None:
    with atomic_path(path, overwrite=True) as tmp:
        with open(tmp, "w", encoding="utf8") as file_:
            file_.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def run_curve(
    settings: CurveSettings, folds: Sequence[CurveFold], training_dir: PathLike, keep_models: bool = False
) -> List[dict]:
    """Train and predict every unit not finished with these settings; returns every unit's run.json."""
    subsets = {fold.fold: subsets_of(fold, settings.draws, settings.sizes) for fold in folds}
    by_fold = {fold.fold: fold for fold in folds}
    records = []
    caches: Dict[str, VectorCache] = {}
    warmed: Set[int] = set()  # folds whose test texts' vectors are in the shared cache
    todo = list(units(settings, folds))
    bertram = component_identity(settings.bertram)
    for position, unit in enumerate(todo, start=1):
        fold = by_fold[unit.fold]
        subset = [fold.pool[i] for i in subsets[unit.fold][unit.draw][unit.size]]
        directory = unit.directory(training_dir)
        wanted = unit_identity(settings, unit, subset, fold, bertram)
        done = read_run(directory)
        if done is not None and done.get("identity") == wanted and (directory / PREDICTIONS_FILE).is_file():
            logger.info("%s: finished already with these settings, skipped", directory)
            records.append(done)
            continue
        logger.info(
            "unit %d/%d: fold %d, draw %d, %d texts, seed %d",
            position,
            len(todo),
            unit.fold,
            unit.draw,
            unit.size,
            unit.seed,
        )
        remove_written(directory, [RUN_FILE], keep_directory=True)
        infos = train_unit(settings, unit, subset, fold, directory)
        pipelines = {system: spacy.load(directory / system / "model-best") for system in SYSTEMS}
        share_vector_caches(pipelines.values(), caches)
        cold = unit.fold not in warmed
        warmed.add(unit.fold)
        rows, predict_seconds = predict_unit(pipelines, fold, settings.task)
        write_rows(directory / PREDICTIONS_FILE, rows)
        record = {
            "identity": wanted,
            **asdict(unit),
            "train_seconds": {s: infos[s]["seconds"] for s in SYSTEMS},
            "predict_seconds": predict_seconds,
            "cold_cache": cold,
            "test_words": sum(len(doc) for doc in fold.test),
            "steps": {s: {k: infos[s][k] for k in ("max_steps", "eval_frequency", "patience")} for s in SYSTEMS},
            "dev": {s: infos[s].get("dev") for s in SYSTEMS},
        }
        if not keep_models:
            for system in SYSTEMS:
                remove_written(directory / system, BASELINE_OUTPUTS)
        write_json_atomic(directory / RUN_FILE, record, overwrite=True)
        records.append(record)
    return records


__all__ = [
    "BERTRAM",
    "CurveSettings",
    "PREDICTIONS_FILE",
    "RUN_FILE",
    "STOCK",
    "SYSTEMS",
    "Unit",
    "predict_unit",
    "run_curve",
    "subsets_of",
    "units",
]
