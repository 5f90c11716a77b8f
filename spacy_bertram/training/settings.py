"""The settings and defaults the training commands share, with no torch import.

`training/commands.py` reads its options' defaults from here, so `--help`
needs neither torch nor transformers; `stages.py`, `ota.py`, `targets.py`
and `store_builder.py` import them from here.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional, Tuple

from ..config import BertramConfig
from ..pipeline.contexts import STORE_FILE

#: Training words occur at least this often (prepare and targets).
DEFAULT_MIN_COUNT = 100
#: Share of the training words held out for validation.
DEFAULT_HELD_OUT = 0.05
#: Contexts kept per training word / per rarer word in the context store.
DEFAULT_MAX_CONTEXTS = 64
DEFAULT_RARE_MAX_CONTEXTS = 16

#: What `train` writes into its output directory (and `--restart` removes); anything else is left alone.
TARGETS_DIR = "targets"
MODEL_DIR = "model"
METRICS_FILE = "metrics.json"
RUN_FILES = ("progress.json", METRICS_FILE, "checkpoints", "cache", TARGETS_DIR, MODEL_DIR)
#: ... and the finished stages' directories.
TRAIN_OUTPUTS = (*RUN_FILES, "stage*", "ablation-*")
#: What `targets` writes (it replaces the directory as a whole) and what `prepare` writes.
TARGET_FILES = ("targets.json", "targets.safetensors")
PREPARE_FILES = (STORE_FILE, "counts.tsv", "prepare.json")


def check_workers(workers: Optional[int]) -> None:
    """A negative worker count would start a Dask cluster of no workers that waits forever: refuse it."""
    if workers is not None and workers < 0:
        raise ValueError(f"--workers must be 0 or more (0: no Dask cluster, in this process), got {workers}")


@dataclass
class OTASettings:
    """steps: Adam steps per word (keep modest on CPU); neighbours: random tokens per side."""

    steps: int = 60
    batch_words: int = 256
    neighbours: int = 3
    lr: float = 1e-3
    seed: int = 0
    eval_draws: int = 4


@dataclass
class TrainSettings:
    """Hyper-parameters of the three stages (index 0, 1, 2 of the tuples).

    The paper's lr 5e-5 (stages 1 and 3) suits BERT-base on a huge corpus; with
    a few thousand training words and cached encoder states we take many
    cheap epochs at a larger lr instead. On the embedded corpus and MiniLM,
    stage 1 at 1e-3 / 3e-3 / 1e-2 / 3e-2 (50 epochs) gave held-out cosine
    0.18 / 0.24 / 0.29 / 0.15, and stage 3 (ADD) at 1e-2 / 3e-3 gave 0.15 / 0.30.
    The inplace stage is still improving at 50 epochs: 20 / 50 / 100 / 200 gave held-out
    cosine 0.273 / 0.279 / 0.296 / 0.302, and 100 scored best on real rare words (the
    README's Results), so it trains 100 (about 70 s on 2 CPU cores with cached states).
    """

    mode: str = "inplace"
    use_subword_mean: bool = True
    read_layer: int = -2
    subword_share: float = 0.5
    own_embedding_for_one_piece: bool = True
    inplace_mask_fraction: float = 0.5
    epochs: Tuple[int, int, int] = (100, 20, 30)
    lr: Tuple[float, float, float] = (1e-2, 1e-2, 3e-3)
    batch_words: Tuple[int, int, int] = (64, 64, 64)
    warmup: float = 0.1
    min_contexts: int = 4
    max_contexts: int = 32
    pool_contexts: int = 32
    max_seq_length: int = 96
    ngram_min_count: int = 3
    ngram_dropout: float = 0.1
    seed: int = 0
    reuse_states: bool = True
    token_budget: int = 4096
    cache_memory_mb: float = 2048.0

    def __post_init__(self) -> None:
        self.epochs, self.lr, self.batch_words = tuple(self.epochs), tuple(self.lr), tuple(self.batch_words)
        BertramConfig(
            mode=self.mode, ngram_dropout=self.ngram_dropout, max_seq_length=self.max_seq_length,
            read_layer=self.read_layer, subword_share=self.subword_share,
        )
        if len(self.epochs) != 3 or len(self.lr) != 3 or len(self.batch_words) != 3:
            raise ValueError("epochs, lr and batch_words need one value per stage (3)")
        if min(self.epochs) < 0 or min(self.batch_words) < 1 or min(self.lr) <= 0:
            raise ValueError("epochs must be >= 0, batch_words >= 1 and lr > 0")
        if not 1 <= self.min_contexts <= self.max_contexts <= self.pool_contexts:
            raise ValueError("Need 1 <= min_contexts <= max_contexts <= pool_contexts")
        if not 0.0 <= self.inplace_mask_fraction < 1.0:
            raise ValueError(f"inplace_mask_fraction must be in [0, 1), got {self.inplace_mask_fraction}")
        if not 0.0 <= self.warmup < 1.0:
            raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {self.warmup}")

    def to_dict(self) -> Dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


__all__ = ["METRICS_FILE", "MODEL_DIR", "PREPARE_FILES", "RUN_FILES", "TARGETS_DIR", "TARGET_FILES",
           "TRAIN_OUTPUTS", "check_workers", "DEFAULT_HELD_OUT", "DEFAULT_MAX_CONTEXTS", "DEFAULT_MIN_COUNT", "DEFAULT_RARE_MAX_CONTEXTS",
           "OTASettings", "TrainSettings"]
