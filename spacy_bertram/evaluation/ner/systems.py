"""The three NER systems of each fold, and training the two that are trained.

- `stock`: configs/ner_minilm.cfg trained on the fold (spacy-transformers' own
  architecture, no `bertram`);
- `bertram`: configs/ner_minilm_bertram.cfg trained on the fold, so the NER and
  the encoder learn on the injected inputs;
- `bertram_test_time`: the stock-trained NER with the trained-with-bertram
  pipeline's `bertram` component sourced in front of its transformer (same rule,
  contexts and injection), added after training: what the paper's protocol measures.

Both trainings go through `train_baseline` (bounded steps, the embedding layer
frozen by the registered callback, output renamed into place). A run whose
`fold-I/SYSTEM.ner_run.json` (settings, config and data checksums, the BERTRAM model's
hash and the component's default rare-word rule) equals the current one was
trained to the end with them and is skipped, so a killed `ner-train` resumes and
a changed setting retrains.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Optional

import spacy
from spacy.util import registry

from ...errors import Errors
from ...fileio import check_output_dir, write_json_atomic
from ...pipeline.component import DEFAULT_CONFIG
from ...storage import model_fingerprint
from ...types import PathLike
from ..rarification.baseline import train_baseline
from ..outputs import INFO_FILE, NER_TRAIN_OUTPUTS, TRAIN_SUMMARY
from ..downstream.pipelines import load_injecting
from .folds import fold_dir, read_folds

logger = logging.getLogger("spacy_bertram")

STOCK, BERTRAM, TEST_TIME = "stock", "bertram", "bertram_test_time"
SYSTEMS = (STOCK, BERTRAM, TEST_TIME)
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


def read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf8")) if path.is_file() else None


def run_settings(settings: NerTraining, config: str, paths: Dict[str, str], folds_dir: PathLike,
                 fold: int) -> Dict[str, object]:
    """What one training depends on: a rerun with anything else retrains instead of skipping."""
    data = fold_dir(folds_dir, fold)
    wanted: Dict[str, object] = {
        "settings": asdict(settings), "config": config, "config_md5": md5_of(Path(config)), "paths": paths,
        "data_md5": [md5_of(data / f"{part}.spacy") for part in ("train", "dev")]}
    if "bertram" in paths:
        wanted["bertram"] = component_identity(paths["bertram"])
    return wanted


def component_identity(bertram: PathLike) -> Dict[str, str]:
    """The BERTRAM model's content hash and the component's default rare-word rule (the NER
    config leaves the rule to the default, so a changed default must retrain)."""
    rule = registry.resolve({"rule": DEFAULT_CONFIG["bertram"]["rare_words"]})["rule"]
    return {"model": model_fingerprint(bertram), "default_rare_word_rule": repr(rule)}


def md5_of(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def model_dir(training_dir: PathLike, fold: int, system: str) -> Path:
    """Where fold `fold`'s trained `system` is (its model-best)."""
    return Path(training_dir) / f"fold-{fold}" / system / "model-best"


def train_folds(folds_dir: PathLike, training_dir: PathLike, bertram: PathLike,
                context_store: Optional[PathLike], settings: NerTraining, force: bool = False) -> Dict[str, object]:
    """Train stock and bertram NER on every fold (finished folds are skipped); writes train.json."""
    check_output_dir(training_dir, NER_TRAIN_OUTPUTS, command="ner-train", force=force)
    if not Path(bertram).is_dir():
        raise ValueError(Errors.E413.format(bertram=str(bertram)))
    if context_store is not None and not Path(context_store).is_file():
        raise ValueError(Errors.E414.format(context_store=str(context_store)))
    k = int(read_folds(folds_dir)["folds"])
    paths = {"bertram": str(bertram)}
    if context_store is not None:
        paths["context_store"] = str(context_store)
    runs = []
    for fold in range(k):
        data = fold_dir(folds_dir, fold)
        for system in TRAINED:
            out = Path(training_dir) / f"fold-{fold}" / system
            config = settings.stock_config if system == STOCK else settings.bertram_config
            run_paths = paths if system == BERTRAM else {}
            wanted = run_settings(settings, config, run_paths, folds_dir, fold)
            marker = out.parent / f"{system}.{RUN_FILE}"
            if (out / INFO_FILE).is_file() and read_json(marker) == wanted:
                info = read_json(out / INFO_FILE)
                logger.info("fold %d %s: trained already with these settings, skipped", fold, system)
            else:
                logger.info("fold %d: training %s", fold, system)
                info = train_baseline(
                    data / "train.spacy", data / "dev.spacy", out, base_config=config,
                    base_model=settings.base_model, gpu_id=settings.gpu_id, seed=settings.seed,
                    max_steps=settings.max_steps, eval_frequency=settings.eval_frequency,
                    batch_size=settings.batch_size, learn_rate=settings.learn_rate, paths=run_paths or None,
                    force=True,  # fold-I/SYSTEM is this command's own output
                )
                write_json_atomic(marker, wanted)
            dev = info.get("dev", {})
            runs.append({"fold": fold, "system": system, "seconds": info.get("seconds"),
                         "dev_ents_f": dev.get("ents_f") if isinstance(dev, dict) else None})
    summary = {"settings": asdict(settings), "bertram": str(bertram), "context_store": context_store and str(context_store),
               "folds": k, "runs": runs, "seconds": round(sum(r["seconds"] or 0 for r in runs), 1)}
    write_json_atomic(Path(training_dir) / TRAIN_SUMMARY, summary)
    return summary


def load_systems(training_dir: PathLike, fold: int):
    """{system: nlp} of fold `fold`: the two trained pipelines and the stock one with bertram added."""
    trained = {}
    for system in TRAINED:
        path = model_dir(training_dir, fold, system)
        if not (path / "config.cfg").is_file():
            raise ValueError(Errors.E415.format(system=system, path=path))
        trained[system] = spacy.load(path)
    with_bertram = trained[BERTRAM]
    if "bertram" not in with_bertram.pipe_names:
        raise ValueError(Errors.E416.format(model=model_dir(training_dir, fold, BERTRAM)))
    injection = with_bertram.config["components"]["transformer"]["model"].get("injection", "slash")
    test_time = load_injecting(model_dir(training_dir, fold, STOCK), injection, needs="ner")
    test_time.add_pipe("bertram", source=with_bertram, before="transformer")
    return {STOCK: trained[STOCK], BERTRAM: with_bertram, TEST_TIME: test_time}


__all__ = ["BERTRAM", "NerTraining", "STOCK", "SYSTEMS", "TEST_TIME", "load_systems", "model_dir", "train_folds"]
