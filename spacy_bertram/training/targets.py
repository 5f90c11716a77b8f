"""Training words and their mimicking targets.

Training words are frequent (count >= min_count) alphabetic words with at
least one context. A word that is one wordpiece mimics its embedding row; a
multi-wordpiece word mimics its one-token approximation (ota.py). A seeded
random 5% of the words is held out for validation and never trained on (nor
used for the n-gram vocabulary). Each word also carries its rare-like
segmentation (segmentation.py), the subword-mean input used in training.

On disk a target set is a directory: `targets.safetensors` (the vectors) and
`targets.json` (words, counts, kinds, held-out flags, rare-like pieces, the
base model), written together atomically.
"""
from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from ..errors import Errors
from ..fileio import atomic_path, write_json_atomic
from .ota import OTASettings, one_token_approximation
from .segmentation import RareLikeSegmenter
from .settings import DEFAULT_HELD_OUT, DEFAULT_MIN_COUNT, MIN_TRAINING_WORDS, TARGET_FILES, check_word_limits
from .sources import ContextSource
from ..types import PathLike

logger = logging.getLogger("spacy_bertram")

INDEX_FILE, VECTORS_FILE = TARGET_FILES


@dataclass
class TargetSet:
    """Words, their target vectors and what training needs to know about them."""

    words: List[str]
    counts: List[int]
    vectors: Tensor  # [n_words, width] float32
    kinds: List[str]  # "row" (one wordpiece) or "ota"
    pieces: List[List[int]]  # the tokenizer's ordinary segmentation
    rare_like: List[List[int]]
    held_out: List[bool]
    base_model: str
    info: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.words)
        sizes = {len(self.counts), len(self.kinds), len(self.pieces), len(self.rare_like), len(self.held_out), int(self.vectors.shape[0])}
        if sizes != {n}:
            raise ValueError(Errors.E249.format(n=n, sizes=sorted(sizes)))

    def __len__(self) -> int:
        return len(self.words)

    @property
    def width(self) -> int:
        return int(self.vectors.shape[1])

    def indices(self, held_out: bool) -> List[int]:
        return [i for i, flag in enumerate(self.held_out) if flag == held_out]

    def check_width(self, width: int, where: str = "") -> None:
        if self.width != int(width):
            raise ValueError(
                Errors.E250.format(where=where, width=self.width, model_width=width, base_model=self.base_model)
            )

    def save(self, path: PathLike) -> Path:
        target = Path(path)
        index = {
            "base_model": self.base_model,
            "width": self.width,
            "words": self.words,
            "counts": self.counts,
            "kinds": self.kinds,
            "pieces": self.pieces,
            "held_out": self.held_out,
            "rare_like": self.rare_like,
            "info": self.info,
        }
        with atomic_path(target, is_dir=True) as tmp:
            save_file({"vectors": self.vectors.detach().float().cpu().contiguous()}, str(tmp / VECTORS_FILE))
            write_json_atomic(tmp / INDEX_FILE, index, indent=None)
        return target

    @classmethod
    def load(cls, path: PathLike, expected_width: Optional[int] = None) -> "TargetSet":
        directory = Path(path)
        if not (directory / VECTORS_FILE).is_file() or not (directory / INDEX_FILE).is_file():
            raise ValueError(Errors.E251.format(directory=str(directory), VECTORS_FILE=VECTORS_FILE,
                                                INDEX_FILE=INDEX_FILE))
        try:
            vectors = load_file(str(directory / VECTORS_FILE))["vectors"]
        except (SafetensorError, OSError, KeyError) as err:
            raise ValueError(Errors.E252.format(path=str(directory / VECTORS_FILE), err=err)) from err
        try:
            with open(directory / INDEX_FILE, encoding="utf8") as file_:
                index = json.load(file_)
            targets = cls(
                words=list(index["words"]),
                counts=[int(c) for c in index["counts"]],
                vectors=vectors.float(),
                kinds=list(index["kinds"]),
                pieces=[list(map(int, p)) for p in index["pieces"]],
                rare_like=[list(map(int, p)) for p in index["rare_like"]],
                held_out=[bool(h) for h in index["held_out"]],
                base_model=str(index["base_model"]),
                info=dict(index.get("info", {})),
            )
        except (OSError, KeyError, TypeError, ValueError) as err:  # JSON and UTF-8 errors are ValueErrors
            raise ValueError(Errors.E253.format(path=str(directory / INDEX_FILE), err=err)) from err
        if vectors.ndim != 2:
            raise ValueError(Errors.E254.format(directory=str(directory), shape=tuple(vectors.shape)))
        if expected_width is not None:
            targets.check_width(expected_width, f" in {str(directory)!r}")
        return targets


def _alphabetic(word: str) -> bool:
    return word.isalpha()


def select_training_words(
    source: ContextSource,
    segmenter: RareLikeSegmenter,
    min_count: int = DEFAULT_MIN_COUNT,
    max_words: Optional[int] = None,
    held_out_fraction: float = DEFAULT_HELD_OUT,
    seed: int = 0,
) -> Tuple[List[str], List[int], List[bool]]:
    """Frequent alphabetic words with contexts, one per normalised form, and held-out flags."""
    check_word_limits(min_count, max_words, held_out_fraction)
    unk = segmenter.tokenizer.unk_token_id
    words: List[str] = []
    counts: List[int] = []
    seen = set()
    for word, count in source.counts(min_count):
        if count < min_count or not _alphabetic(word):
            continue
        key = segmenter.inputs.normalize(word)
        if key in seen:
            continue
        # No target for an UNK word; a rare-like UNK (one-letter words) looks like no rare word.
        if unk is not None and (unk in segmenter.pieces(word) or unk in segmenter.rare_like(word)):
            continue
        if not source.contexts(word, 1):
            continue
        seen.add(key)
        words.append(word)
        counts.append(int(count))
        if max_words is not None and len(words) >= max_words:
            break
    if len(words) < MIN_TRAINING_WORDS:
        raise ValueError(
            Errors.E258.format(n_words=len(words), min_count=min_count, MIN_TRAINING_WORDS=MIN_TRAINING_WORDS)
        )
    rng = numpy.random.default_rng(seed)
    n_held = max(1, int(math.ceil(held_out_fraction * len(words))))
    chosen = set(rng.choice(len(words), size=n_held, replace=False).tolist())
    return words, counts, [i in chosen for i in range(len(words))]


def build_targets(
    source: ContextSource,
    encoder,
    tokenizer,
    base_model: str,
    min_count: int = DEFAULT_MIN_COUNT,
    max_words: Optional[int] = None,
    held_out_fraction: float = DEFAULT_HELD_OUT,
    seed: int = 0,
    ota: Optional[OTASettings] = None,
    device: Optional[torch.device] = None,
    progress: bool = True,
) -> TargetSet:
    """Select training words and compute their targets (embedding rows or OTA)."""
    segmenter = RareLikeSegmenter(tokenizer)
    words, counts, held_out = select_training_words(
        source, segmenter, min_count, max_words, held_out_fraction, seed
    )
    table = encoder.get_input_embeddings().weight.detach()
    pieces = [segmenter.pieces(w) for w in words]
    vectors = torch.zeros(len(words), table.shape[1])
    single = [i for i, p in enumerate(pieces) if len(p) == 1]
    multi = [i for i, p in enumerate(pieces) if len(p) > 1]
    if single:
        rows = torch.as_tensor([pieces[i][0] for i in single], device=table.device)
        vectors[single] = table[rows].float().cpu()
    ota = ota or OTASettings(seed=seed)
    result = one_token_approximation(encoder, tokenizer, [pieces[i] for i in multi], ota, device, progress)
    if multi:
        vectors[multi] = result.vectors
        logger.info("OTA for %d words: loss %.5f -> %.5f", len(multi), result.loss_before, result.loss_after)
    kinds = ["ota" if len(p) > 1 else "row" for p in pieces]
    info = {
        "min_count": min_count,
        "max_words": max_words,
        "held_out_fraction": held_out_fraction,
        "seed": seed,
        "n_row": len(single),
        "n_ota": len(multi),
        "ota": {**vars(ota), "loss_before": result.loss_before, "loss_after": result.loss_after},
        "vocab_size": int(table.shape[0]),
    }
    return TargetSet(
        words=words,
        counts=counts,
        vectors=vectors,
        kinds=kinds,
        pieces=pieces,
        rare_like=segmenter.rare_like_many(words),
        held_out=held_out,
        base_model=base_model,
        info=info,
    )
