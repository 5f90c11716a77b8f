"""The rarification baseline: a spaCy transformer textcat trained as the paper says.

Schick & Schütze (2020, section 4) train the classifier that guides rarification
(and that BERTRAM is later injected into) so that masks and "w / w" are in
distribution: 5% of the training words are masked, 10% are written as "w / w"
with each copy masked with p = 0.25, and the embedding layer stays frozen so
that BERTRAM vectors, which live in the pretrained input-embedding space, still
fit the fine-tuned encoder.

- `make_splits` turns a dataset into train / dev / test-candidate JSONL files
  (texts truncated to their first words: BBC titles and leads) plus the
  baseline's training DocBin with the augmentation applied and a clean dev DocBin.
- the training config freezes the embedding layer with the registered
  `[initialize.after_init]` callback `spacy-bertram.freeze_embeddings.v1`
  (`injection/frozen_embeddings.py`).
- `train_baseline` builds the training config from a pipeline config (by
  default configs/textcat_minilm.cfg) with bounded steps and the callback, runs
  `spacy train` in-process (`gpu_id` is spaCy's `--gpu-id`), writes into a temp
  directory that is renamed into place, and checks that the saved pipelines'
  embeddings equal the pretrained encoder's.
- `augment_tokens` / `augment_examples`: that augmentation, on tokens and on records.
"""

from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Union

import spacy
from thinc.api import Config

from ..errors import Errors
from spacy_bertram.project_support import (
    CHECKPOINTS_DIR,
    CHECKPOINT_LOGGER,
    FREEZE_CALLBACK,
    PathLike,
    atomic_directory,
    check_checkpoint_steps,
    check_output_dir,
    embedding_drift,
    use_device,
    write_json_atomic,
)
from spacy_bertram.project_support import Bertram_v1  # noqa: F401  (its module registers spacy-bertram.encoder_path.v1 for the configs)
from .datasets import (
    labels_of,
    load_dataset,
    split_records,
    stratified_sample,
    truncate_words,
    write_records,
)
from ..outputs import BASELINE_OUTPUTS, BASELINE_WRITES, INFO_FILE
from .rarify import DEFAULT_MASK_TOKEN
from .records import Record, RecordLike, as_records, check_labels, write_docbin

logger = logging.getLogger("spacy_bertram")

SPLIT_FILES = ("train.jsonl", "dev.jsonl", "test_candidates.jsonl")
#: What `train_baseline` writes into its output directory (which it replaces as a whole).


# ---------------------------------------------------------------------------
# Baseline augmentation


def _is_word(token: str) -> bool:
    return any(c.isalnum() for c in token)


def augment_tokens(
    tokens: Sequence[str],
    rng: Union[int, random.Random] = 0,
    mask_rate: float = 0.05,
    duplicate_rate: float = 0.10,
    duplicate_mask_rate: float = 0.25,
    mask_token: str = DEFAULT_MASK_TOKEN,
) -> List[str]:
    """Mask 5% of the words; write 10% as "w / w" with each copy masked w.p. 0.25.

    Masking and duplication are exclusive per word (one uniform draw decides),
    so the rates hold over words; punctuation-only tokens are never touched.
    Pure given an int seed; pass a `random.Random` to continue one stream.
    """
    r = random.Random(rng) if isinstance(rng, int) else rng
    out: List[str] = []
    for tok in tokens:
        if not _is_word(tok):
            out.append(tok)
            continue
        u = r.random()
        if u < mask_rate:
            out.append(mask_token)
        elif u < mask_rate + duplicate_rate:
            left = mask_token if r.random() < duplicate_mask_rate else tok
            right = mask_token if r.random() < duplicate_mask_rate else tok
            out.extend([left, "/", right])
        else:
            out.append(tok)
    return out


def augment_examples(
    examples: Iterable[RecordLike],
    seed: int = 0,
    tokenize: Callable[[str], List[str]] = str.split,
    copies: int = 1,
    keep_original: bool = False,
    **kwargs,
) -> List[Record]:
    """Augmented training examples (tokens re-joined with single spaces)."""
    rng = random.Random(seed)
    out: List[Record] = []
    for ex in as_records(examples):
        if keep_original:
            out.append(ex)
        for k in range(copies):
            text = " ".join(augment_tokens(tokenize(ex.text), rng, **kwargs))
            out.append(Record(text, ex.label, f"{ex.id}-aug{k}"))
    return out


# ---------------------------------------------------------------------------
# Splits and the augmented training data


#: Where `make_splits` takes test candidates from: the dataset's test split, or the training
#: part's texts that neither train nor dev drew (unseen by the classifier; for BBC and Rotten
#: Tomatoes they are in the BERTRAM corpus in their original wording, which holds the word a
#: substitute replaces, not the substitute).
CANDIDATE_SOURCES = ("test", "unused-train")


def make_splits(
    dataset: str,
    output_dir: PathLike,
    assets: Optional[PathLike] = None,
    max_words: int = 120,
    max_train: Optional[int] = None,
    max_dev: Optional[int] = None,
    max_test: Optional[int] = None,
    dev_fraction: float = 0.1,
    seed: int = 0,
    candidates_from: str = "test",
    augment_copies: int = 1,
    mask_rate: float = 0.05,
    duplicate_rate: float = 0.10,
    duplicate_mask_rate: float = 0.25,
) -> Dict[str, object]:
    """Write train/dev/test_candidates.jsonl, train.spacy (augmented) and dev.spacy.

    A test candidate whose label never occurs in training raises UnknownLabelError.
    `candidates_from="unused-train"` takes the test candidates from the training part's texts
    that train and dev did not draw instead of the test split: the same train and dev (so the
    same classifier), several times the candidates where `max_train` leaves most texts unused.
    """
    if candidates_from not in CANDIDATE_SOURCES:
        raise ValueError(Errors.E381.format(known=" or ".join(map(repr, CANDIDATE_SOURCES)), value=candidates_from))
    start = time.time()
    records, n_empty = load_dataset(dataset, assets)
    records = [Record(truncate_words(r.text, max_words), r.label, r.id, r.split) for r in records]
    train_part, dev_part, test = split_records(records, dev_fraction=dev_fraction, seed=seed)
    train = stratified_sample(train_part, max_train, seed)
    dev = stratified_sample(dev_part, max_dev, seed + 1)
    if candidates_from == "unused-train":
        drawn = {id(r) for r in train + dev}
        test = [r for r in train_part + dev_part if id(r) not in drawn]
    test = stratified_sample(test, max_test, seed + 2)
    labels = labels_of(train)
    check_labels(dev, labels)
    check_labels(test, labels)

    out = Path(output_dir)
    for name, part in zip(SPLIT_FILES, (train, dev, test)):
        write_records(out / name, part)
    nlp = spacy.blank("en")

    def tokenize(text: str) -> List[str]:
        # spaCy tokens joined by single spaces give the same wordpieces as the
        # original text for BERT-style tokenizers (punctuation is split anyway).
        return [t.text for t in nlp.make_doc(text) if not t.is_space]

    augmented = augment_examples(
        train,
        seed=seed,
        tokenize=tokenize,
        copies=augment_copies,
        mask_rate=mask_rate,
        duplicate_rate=duplicate_rate,
        duplicate_mask_rate=duplicate_mask_rate,
    )
    write_docbin(out / "train.spacy", augmented, labels, nlp)
    write_docbin(out / "dev.spacy", dev, labels, nlp)
    n_words = [len(r.text.split()) for r in records]
    info = {
        "dataset": dataset,
        "labels": labels,
        "seed": seed,
        "max_words": max_words,
        "train": len(train),
        "dev": len(dev),
        "test_candidates": len(test),
        "candidates_from": candidates_from,
        "augmented_train": len(augmented),
        "skipped_empty": n_empty,
        "mean_words": round(sum(n_words) / max(1, len(n_words)), 1),
        "augmentation": {
            "mask_rate": mask_rate,
            "duplicate_rate": duplicate_rate,
            "duplicate_mask_rate": duplicate_mask_rate,
            "copies": augment_copies,
        },
        "seconds": round(time.time() - start, 2),
    }
    _write_json(out / "splits.json", info)
    return info


# ---------------------------------------------------------------------------
# Training


def baseline_config(
    base_config: PathLike,
    base_model: str = "default",
    seed: int = 0,
    max_steps: int = 300,
    eval_frequency: int = 100,
    batch_size: int = 1000,
    learn_rate: float = 1e-4,
    warmup_steps: Optional[int] = None,
    freeze: bool = True,
    checkpoints: Sequence[int] = (),
    checkpoint_dir: Optional[PathLike] = None,
    patience: int = 0,
):
    """The training config: `base_config` with bounded steps (and early stopping after
    `patience` steps without a better dev score, 0: none), the freezing callback
    (or none: `freeze=False` fine-tunes the embeddings too, spaCy's default), the
    encoder and the seed set; with `checkpoints`, the pipeline is also saved at
    those steps into `checkpoint_dir`. Paths are left for overrides."""
    config = Config().from_disk(base_config, interpolate=False)
    training = config["training"]
    training["max_steps"] = int(max_steps)
    training["eval_frequency"] = int(eval_frequency)
    training["patience"] = int(patience)
    training["max_epochs"] = 0
    training["batcher"]["size"] = int(batch_size)
    lr = training["optimizer"]["learn_rate"]
    if isinstance(lr, dict) and "initial_rate" in lr:
        lr["initial_rate"] = float(learn_rate)
        if "warmup_steps" in lr:
            lr["warmup_steps"] = int(warmup_steps if warmup_steps is not None else max(1, max_steps // 10))
    else:
        training["optimizer"]["learn_rate"] = float(learn_rate)
    config["system"]["seed"] = int(seed)
    name = config["components"]["transformer"]["model"].get("name")
    if isinstance(name, dict):
        name["name"] = base_model
    else:
        config["components"]["transformer"]["model"]["name"] = base_model
    bertram = config["components"].get("bertram", {}).get("model")
    if isinstance(bertram, dict) and "base_model" in bertram:  # the BERTRAM model is for the same encoder
        bertram["base_model"] = base_model
    if freeze:
        config["initialize"]["after_init"] = {"@callbacks": FREEZE_CALLBACK}
    elif config["initialize"].get("after_init", {}) == {"@callbacks": FREEZE_CALLBACK}:
        config["initialize"]["after_init"] = None
    if checkpoints:
        steps = check_checkpoint_steps(checkpoints, int(eval_frequency), int(max_steps))
        assert checkpoint_dir is not None, "checkpoints need a directory"
        training["logger"] = {
            "@loggers": CHECKPOINT_LOGGER,
            "steps": list(steps),
            "directory": str(checkpoint_dir),
            "progress_bar": False,
        }
    return config


def train_baseline(
    train_path: PathLike,
    dev_path: PathLike,
    output_dir: PathLike,
    base_config: PathLike = "configs/textcat_minilm.cfg",
    base_model: str = "default",
    gpu_id: int = -1,
    seed: int = 0,
    max_steps: int = 300,
    eval_frequency: int = 100,
    batch_size: int = 1000,
    learn_rate: float = 1e-4,
    freeze: bool = True,
    check_frozen: bool = True,
    paths: Optional[Dict[str, str]] = None,
    force: bool = False,
    checkpoints: Sequence[int] = (),
    patience: int = 0,
    bertram_contexts: Optional[str] = None,
) -> Dict[str, object]:
    """`spacy train` on the augmented split; output_dir/model-best and model-last
    (and output_dir/checkpoints/step-N for each of `checkpoints`).

    `paths` fills the config's other [paths] (a bertram config's `bertram` and
    `context_store`); `bertram_contexts` replaces its [components.bertram] `contexts`
    (the shorthand: "doc", "store", "both"...). Trains into a temp directory beside `output_dir` and renames
    it into place at the end, so a killed run never leaves a half-written model
    that looks finished. Only what it writes is replaced (other files in
    `output_dir` stay); a directory holding only others' files is refused unless `force`.
    """
    from spacy.cli.train import train as spacy_train  # spaCy's command line: only this step needs it

    check_output_dir(output_dir, BASELINE_OUTPUTS, command="train-baseline", force=force, replaces=True)

    for path in (train_path, dev_path, base_config):
        if not Path(path).exists():
            raise ValueError(Errors.E303.format(path=path))
    use_device(gpu_id)  # a named error for a bad id or a missing CuPy, before spaCy's own
    start = time.time()
    with atomic_directory(output_dir, BASELINE_WRITES, overwrite=True) as tmp:
        config = baseline_config(
            base_config,
            base_model,
            seed,
            max_steps,
            eval_frequency,
            batch_size,
            learn_rate,
            freeze=freeze,
            checkpoints=checkpoints,
            checkpoint_dir=tmp / CHECKPOINTS_DIR,
            patience=patience,
        )
        config["paths"]["train"] = str(train_path)
        config["paths"]["dev"] = str(dev_path)
        for key, value in (paths or {}).items():
            if key not in config["paths"]:
                raise ValueError(Errors.E304.format(base_config=base_config, key=key, config=sorted(config["paths"])))
            config["paths"][key] = str(value)
        if bertram_contexts is not None:
            if "bertram" not in config.get("components", {}):
                raise ValueError(Errors.E300.format(base_config=base_config))
            config["components"]["bertram"]["contexts"] = str(bertram_contexts)
        config_path = tmp / "config.cfg"
        config.to_disk(config_path)
        spacy_train(config_path, tmp, use_gpu=gpu_id)
        info: Dict[str, object] = {
            "base_config": str(base_config),
            "base_model": base_model,
            "gpu_id": gpu_id,
            "seed": seed,
            "max_steps": max_steps,
            "batch_size": batch_size,
            "learn_rate": learn_rate,
            "frozen_embeddings": freeze,
            "checkpoints": list(checkpoints),
            "patience": patience,
        }
        best = tmp / "model-best"
        meta = json.loads((best / "meta.json").read_text(encoding="utf8"))
        info["dev"] = meta.get("performance", {})
        if check_frozen:  # fine-tuned: how far the embeddings moved (what the BERTRAM vectors do not follow)
            info["embedding_drift"] = embedding_drift(spacy.load(best), base_model)
            if freeze and info["embedding_drift"] != 0.0:
                raise RuntimeError(Errors.E305.format(drift=info["embedding_drift"]))
        info["seconds"] = round(time.time() - start, 2)
        _write_json(tmp / INFO_FILE, info)
    return info


def _write_json(path: PathLike, data: object) -> None:
    write_json_atomic(path, data, overwrite=True)


__all__ = ["baseline_config", "make_splits", "train_baseline"]
