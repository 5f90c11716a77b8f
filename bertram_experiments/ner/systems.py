"""The NER systems of each fold, and training the two that are trained.

- `stock`: configs/ner_minilm.cfg trained on the fold (spacy-transformers' own
  architecture, no `bertram`);
- `bertram`: configs/ner_minilm_bertram.cfg trained on the fold, so the NER and
  the encoder learn on the injected inputs;
- `bertram_test_time`: the stock-trained NER with the trained-with-bertram
  pipeline's `bertram` component sourced in front of its transformer (same rule,
  contexts and injection), added after training: what the protocol the paper describes measures;
- `bertram_without`: the trained-with-bertram pipeline run without its `bertram`
  component, so its transformer reads the plain wordpieces: what the model learned
  apart from the vectors (the vectors "zeroed" at test time).

Both trainings go through `train_baseline` (bounded steps, output renamed into
place), with the embedding layer frozen by the registered callback (`freeze`, the
quick workflow) or fine-tuned with the rest of the encoder as spaCy does by
default; `checkpoints` also saves each pipeline at those steps (the learning
curve, `spacy_bertram/checkpoint_logger.py`). A run whose
`fold-I/SYSTEM.ner_run.json` (settings, config and data checksums, the BERTRAM model's
hash and the component's default rare-word rule) equals the current one was
trained to the end with them and is skipped, so a killed `ner-train` resumes and
a changed setting retrains.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import spacy
import torch
from spacy.util import registry

from ..errors import Errors
from spacy_bertram import DEFAULT_CONFIG
from spacy_bertram.project_support import (
    CHECKPOINTS_DIR,
    DEFAULT_INJECTION,
    PathLike,
    check_output_dir,
    describe_client,
    model_fingerprint,
    run_tasks,
    step_dir,
    write_json_atomic,
)
from ..rarification.baseline import train_baseline
from ..outputs import INFO_FILE, NER_TRAIN_OUTPUTS, TRAIN_SUMMARY
from ..pipelines import load_injecting
from .folds import fold_dir, read_folds

logger = logging.getLogger("spacy_bertram")

STOCK, BERTRAM, TEST_TIME, WITHOUT = "stock", "bertram", "bertram_test_time", "bertram_without"
SYSTEMS = (STOCK, BERTRAM, TEST_TIME, WITHOUT)
TRAINED = (STOCK, BERTRAM)
#: fold-I/SYSTEM.ner_run.json: the settings fold I's SYSTEM was trained with
RUN_FILE = "ner_run.json"


@dataclass(frozen=True)
class NerTraining:
    """What every fold's two trainings share."""

    stock_config: str = "configs/ner_minilm.cfg"
    bertram_config: str = "configs/ner_minilm_bertram.cfg"
    base_model: str = "default"
    gpu_id: int = -1
    seed: int = 0
    max_steps: int = 100
    eval_frequency: int = 50
    batch_size: int = 500
    learn_rate: float = 2e-4
    freeze: bool = True
    checkpoints: Tuple[int, ...] = ()


def read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf8")) if path.is_file() else None


def run_settings(
    settings: NerTraining, config: str, paths: Dict[str, str], folds_dir: PathLike, fold: int
) -> Dict[str, object]:
    """What one training depends on: a rerun with anything else retrains instead of skipping."""
    data = fold_dir(folds_dir, fold)
    wanted: Dict[str, object] = {
        "settings": asdict(settings),
        "config": config,
        "config_md5": md5_of(Path(config)),
        "paths": paths,
        "data_md5": [md5_of(data / f"{part}.spacy") for part in ("train", "dev")],
    }
    if "bertram" in paths:
        wanted["bertram"] = component_identity(paths["bertram"])
    return json.loads(json.dumps(wanted))  # as the marker file reads back (tuples as lists)


def component_identity(bertram: PathLike) -> Dict[str, str]:
    """The BERTRAM model's content hash and the component's default rare-word rule (the NER
    config leaves the rule to the default, so a changed default must retrain)."""
    rule = registry.resolve({"rule": DEFAULT_CONFIG["bertram"]["rare_words"]})["rule"]
    return {"model": model_fingerprint(bertram), "default_rare_word_rule": repr(rule)}


def md5_of(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


#: Which saved pipeline of a run: "model-best", "model-last" or a checkpoint's step.
Checkpoint = Union[str, int, None]


def model_dir(training_dir: PathLike, fold: int, system: str, checkpoint: Checkpoint = None) -> Path:
    """Where fold `fold`'s trained `system` is: its model-best (None), model-last, or its checkpoint at a step."""
    run = Path(training_dir) / f"fold-{fold}" / system
    if checkpoint is None or isinstance(checkpoint, str):
        return run / (checkpoint or "model-best")
    return step_dir(run / CHECKPOINTS_DIR, checkpoint)


@dataclass(frozen=True)
class FoldRun:
    """One training: fold `fold`'s `system`, from `config`, into `out` (paths absolute on a cluster)."""

    fold: int
    system: str
    data: str
    out: str
    config: str
    paths: Dict[str, str]


def train_run(run: FoldRun, settings: NerTraining, torch_threads: int = 0) -> Dict[str, object]:
    """Train one run (a Dask task on a cluster: `torch_threads` shares a machine's cores among its workers)."""
    if torch_threads:
        torch.set_num_threads(torch_threads)
    data = Path(run.data)
    return train_baseline(
        data / "train.spacy",
        data / "dev.spacy",
        run.out,
        base_config=run.config,
        base_model=settings.base_model,
        gpu_id=settings.gpu_id,
        seed=settings.seed,
        max_steps=settings.max_steps,
        eval_frequency=settings.eval_frequency,
        batch_size=settings.batch_size,
        learn_rate=settings.learn_rate,
        paths=run.paths or None,
        freeze=settings.freeze,
        checkpoints=settings.checkpoints,
        force=True,  # fold-I/SYSTEM is this command's own output
    )


def on_cluster(run: FoldRun) -> FoldRun:
    """The run with absolute paths, so a worker started elsewhere finds the same files (a shared filesystem)."""
    absolute = {key: str(Path(value).resolve()) for key, value in run.paths.items()}
    return FoldRun(
        run.fold,
        run.system,
        str(Path(run.data).resolve()),
        str(Path(run.out).resolve()),
        str(Path(run.config).resolve()),
        absolute,
    )


def train_folds(
    folds_dir: PathLike,
    training_dir: PathLike,
    bertram: PathLike,
    context_store: Optional[PathLike],
    settings: NerTraining,
    force: bool = False,
    client: Any = None,
    torch_threads: int = 0,
) -> Dict[str, object]:
    """Train stock and bertram NER on every fold (finished folds are skipped); writes train.json.

    With a Dask `client` the runs train at once on its workers, each marked done as it
    finishes (a run that fails cancels the others; the finished ones are kept).
    """
    check_output_dir(training_dir, NER_TRAIN_OUTPUTS, command="ner-train", force=force)
    if not Path(bertram).is_dir():
        raise ValueError(Errors.E413.format(bertram=str(bertram)))
    if context_store is not None and not Path(context_store).is_file():
        raise ValueError(Errors.E414.format(context_store=str(context_store)))
    k = int(read_folds(folds_dir)["folds"])
    paths = {"bertram": str(bertram)}
    if context_store is not None:
        paths["context_store"] = str(context_store)
    infos: Dict[Tuple[int, str], Dict[str, object]] = {}
    todo: List[Tuple[FoldRun, Dict[str, object]]] = []
    for fold in range(k):
        for system in TRAINED:
            out = Path(training_dir) / f"fold-{fold}" / system
            config = settings.stock_config if system == STOCK else settings.bertram_config
            run_paths = paths if system == BERTRAM else {}
            wanted = run_settings(settings, config, run_paths, folds_dir, fold)
            if (out / INFO_FILE).is_file() and read_json(run_marker(out)) == wanted:
                infos[fold, system] = read_json(out / INFO_FILE)
                logger.info("fold %d %s: trained already with these settings, skipped", fold, system)
            else:
                run = FoldRun(fold, system, str(fold_dir(folds_dir, fold)), str(out), config, run_paths)
                todo.append((run, wanted))

    def finished(position: int, info: Dict[str, object]) -> None:
        run, wanted = todo[position]
        write_json_atomic(run_marker(Path(run.out)), wanted, overwrite=True)
        infos[run.fold, run.system] = info
        logger.info("fold %d %s: trained in %.0f s", run.fold, run.system, info.get("seconds") or 0)

    if client is None:
        for position, (run, _) in enumerate(todo):
            logger.info("fold %d: training %s", run.fold, run.system)
            finished(position, train_run(run, settings, torch_threads))
    elif todo:
        logger.info("training %d runs on the %s", len(todo), describe_client(client))
        run_tasks(
            client,
            train_run,
            [(on_cluster(run), settings, torch_threads) for run, _ in todo],
            [f"ner-train-fold-{run.fold}-{run.system}-{uuid.uuid4().hex[:8]}" for run, _ in todo],
            finished,
            progress=False,
        )
    runs = []
    for fold in range(k):
        for system in TRAINED:
            info = infos[fold, system]
            dev = info.get("dev", {})
            runs.append(
                {
                    "fold": fold,
                    "system": system,
                    "seconds": info.get("seconds"),
                    "dev_ents_f": dev.get("ents_f") if isinstance(dev, dict) else None,
                    "embedding_drift": info.get("embedding_drift"),
                }
            )
    summary = {
        "settings": asdict(settings),
        "bertram": str(bertram),
        "context_store": context_store and str(context_store),
        "folds": k,
        "runs": runs,
        "seconds": round(sum(r["seconds"] or 0 for r in runs), 1),
    }
    write_json_atomic(Path(training_dir) / TRAIN_SUMMARY, summary, overwrite=True)
    return summary


def run_marker(out: Path) -> Path:
    """fold-I/SYSTEM.ner_run.json beside the run's output: the settings it finished with."""
    return out.parent / f"{out.name}.{RUN_FILE}"


def load_systems(training_dir: PathLike, fold: int, checkpoint: Checkpoint = None, systems: Sequence[str] = SYSTEMS):
    """{system: nlp} of fold `fold` (model-best, or `checkpoint`) for each of `systems`: the two
    trained pipelines, the stock one with bertram added, and the bertram one without it."""
    trained = {}
    for system in TRAINED:
        path = model_dir(training_dir, fold, system, checkpoint)
        if not (path / "config.cfg").is_file():
            raise ValueError(Errors.E415.format(system=system, path=path))
        trained[system] = spacy.load(path)
    with_bertram = trained[BERTRAM]
    if "bertram" not in with_bertram.pipe_names:
        raise ValueError(Errors.E416.format(model=model_dir(training_dir, fold, BERTRAM)))
    loaded = {STOCK: trained[STOCK], BERTRAM: with_bertram}
    if TEST_TIME in systems:
        injection = with_bertram.config["components"]["transformer"]["model"].get("injection", DEFAULT_INJECTION)
        loaded[TEST_TIME] = load_injecting(model_dir(training_dir, fold, STOCK, checkpoint), injection, needs="ner")
        loaded[TEST_TIME].add_pipe("bertram", source=with_bertram, before="transformer")
    if WITHOUT in systems:
        loaded[WITHOUT] = spacy.load(model_dir(training_dir, fold, BERTRAM, checkpoint), exclude=["bertram"])
    return {name: loaded[name] for name in systems}


__all__ = [
    "BERTRAM",
    "FoldRun",
    "NerTraining",
    "STOCK",
    "SYSTEMS",
    "TEST_TIME",
    "WITHOUT",
    "load_systems",
    "model_dir",
    "train_folds",
    "train_run",
]
