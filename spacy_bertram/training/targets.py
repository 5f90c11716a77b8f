"""Training words and their mimicking targets.

Training words are frequent (count >= min_count) alphabetic words with at
least one context, then (`multi_piece_words`) wordfreq's most frequent words
that the encoder cuts into 2+ wordpieces, at or above the rare-word rule's
threshold: the words nearest to the ones the component is asked about (multi-
piece, less frequent) that are never asked about themselves, so no rare word
an evaluation scores is a training word. They need no corpus context (OTA
draws random neighbours; the inplace network also reads a word from its
pieces alone) and take the store's contexts where it has some.

A word that is one wordpiece mimics its embedding row; a multi-wordpiece word
mimics its one-token approximation (ota.py). A seeded random 5% of the words
is held out for validation and never trained on (nor used for the n-gram
vocabulary). Each word also carries its rare-like segmentation
(segmentation.py), the subword-mean input used in training.

On disk a target set is a directory: `targets.safetensors` (the vectors) and
`targets.json` (words, counts, kinds, held-out flags, rare-like pieces, the
base model), written together atomically.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional

import numpy
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from ..errors import Errors
from ..fileio import atomic_directory, write_json_atomic
from .ota import OTASettings, one_token_approximation
from .segmentation import RareLikeSegmenter
from ..rarity.frequencies import DEFAULT_MAX_ZIPF, wordfreq_band
from .settings import (
    DEFAULT_HELD_OUT,
    DEFAULT_MIN_COUNT,
    MIN_TRAINING_WORDS,
    TARGET_FILES,
    check_word_limits,
    target_settings,
)
from .sources import TrainingSource
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
        sizes = {
            len(self.counts),
            len(self.kinds),
            len(self.pieces),
            len(self.rare_like),
            len(self.held_out),
            int(self.vectors.shape[0]),
        }
        assert sizes == {n}, f"inconsistent target set: {n} words but field sizes {sorted(sizes)}"

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
        """Replace the set in `path` (one rename), for a command whose output rule has let it write there."""
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
        with atomic_directory(target, TARGET_FILES, overwrite=True) as tmp:
            save_file({"vectors": self.vectors.detach().float().cpu().contiguous()}, str(tmp / VECTORS_FILE))
            write_json_atomic(tmp / INDEX_FILE, index, indent=None)
        return target

    def select(self, max_corpus_words: Optional[int], max_multi_piece_words: Optional[int]) -> "TargetSet":
        """The same held-out words, and the first `max_corpus_words` corpus and first
        `max_multi_piece_words` wordfreq words of the rest (None: all of them): the smaller
        training sets of a learning curve, validated on one set of words and with the same
        targets (no OTA recomputed)."""
        n_corpus = int(self.info.get("n_corpus", len(self)))
        limits = {True: max_corpus_words, False: max_multi_piece_words}
        taken = {True: 0, False: 0}
        keep: List[int] = []
        for i in range(len(self)):
            from_corpus = i < n_corpus
            limit = limits[from_corpus]
            if not self.held_out[i]:
                if limit is not None and taken[from_corpus] >= limit:
                    continue
                taken[from_corpus] += 1
            keep.append(i)
        n_ota = sum(1 for i in keep if self.kinds[i] == "ota")
        info = {
            **self.info,
            "n_corpus": sum(1 for i in keep if i < n_corpus),
            "n_row": len(keep) - n_ota,
            "n_ota": n_ota,
            "multi_piece_share": round(n_ota / len(keep), 4),
            "selected": {
                "from_words": len(self),
                "max_corpus_words": max_corpus_words,
                "max_multi_piece_words": max_multi_piece_words,
            },
        }
        info.pop("n_with_contexts", None)  # not known without the store
        return TargetSet(
            words=[self.words[i] for i in keep],
            counts=[self.counts[i] for i in keep],
            vectors=self.vectors[keep],
            kinds=[self.kinds[i] for i in keep],
            pieces=[self.pieces[i] for i in keep],
            rare_like=[self.rare_like[i] for i in keep],
            held_out=[self.held_out[i] for i in keep],
            base_model=self.base_model,
            info=info,
        )

    @classmethod
    def load(cls, path: PathLike, expected_width: Optional[int] = None) -> "TargetSet":
        directory = Path(path)
        if not (directory / VECTORS_FILE).is_file() or not (directory / INDEX_FILE).is_file():
            raise ValueError(
                Errors.E251.format(directory=str(directory), VECTORS_FILE=VECTORS_FILE, INDEX_FILE=INDEX_FILE)
            )
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


class TrainingWords(NamedTuple):
    """The chosen words in order: the corpus's first (`n_corpus` of them), then wordfreq's."""

    words: List[str]
    counts: List[int]
    held_out: List[bool]
    n_corpus: int


def select_training_words(
    source: TrainingSource,
    segmenter: RareLikeSegmenter,
    min_count: int = DEFAULT_MIN_COUNT,
    max_words: Optional[int] = None,
    held_out_fraction: float = DEFAULT_HELD_OUT,
    seed: int = 0,
    multi_piece_words: int = 0,
    multi_piece_min_zipf: float = DEFAULT_MAX_ZIPF,
    lang: str = "en",
) -> "TrainingWords":
    """Frequent alphabetic words with contexts, one per normalised form, then up to
    `multi_piece_words` of wordfreq's multi-piece words at Zipf >= `multi_piece_min_zipf`
    (contexts or not); and held-out flags over all of them."""
    check_word_limits(min_count, max_words, held_out_fraction)
    unk = segmenter.tokenizer.unk_token_id
    words: List[str] = []
    counts: List[int] = []
    seen = set()

    def usable(word: str) -> bool:
        # No target for an UNK word; a rare-like UNK (one-letter words) looks like no rare word.
        if not _alphabetic(word) or segmenter.inputs.normalize(word) in seen:
            return False
        return unk is None or not (unk in segmenter.pieces(word) or unk in segmenter.rare_like(word))

    def add(word: str, count: int) -> None:
        seen.add(segmenter.inputs.normalize(word))
        words.append(word)
        counts.append(int(count))

    for word, count in source.counts(min_count):
        if count >= min_count and usable(word) and source.contexts(word, 1):
            add(word, count)
            if max_words is not None and len(words) >= max_words:
                break
    n_corpus = len(words)
    if multi_piece_words > 0:
        corpus_counts = dict(source.counts(1))
        added = 0
        for word, _ in wordfreq_band(lang, multi_piece_min_zipf):
            if added >= multi_piece_words:
                break
            if usable(word) and len(segmenter.pieces(word)) > 1:
                add(word, corpus_counts.get(word, 0))
                added += 1
    if len(words) < MIN_TRAINING_WORDS:
        raise ValueError(
            Errors.E258.format(n_words=len(words), min_count=min_count, MIN_TRAINING_WORDS=MIN_TRAINING_WORDS)
        )
    rng = numpy.random.default_rng(seed)
    n_held = max(1, int(math.ceil(held_out_fraction * len(words))))
    chosen = set(rng.choice(len(words), size=n_held, replace=False).tolist())
    return TrainingWords(words, counts, [i in chosen for i in range(len(words))], n_corpus)


def build_targets(
    source: TrainingSource,
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
    multi_piece_words: int = 0,
    multi_piece_min_zipf: float = DEFAULT_MAX_ZIPF,
    client: Any = None,
) -> TargetSet:
    """Select training words and compute their targets (embedding rows or OTA; with a Dask `client`, OTA runs
    on its workers)."""
    started = time.perf_counter()
    segmenter = RareLikeSegmenter(tokenizer)
    words, counts, held_out, n_corpus = select_training_words(
        source, segmenter, min_count, max_words, held_out_fraction, seed, multi_piece_words, multi_piece_min_zipf
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
    result = one_token_approximation(
        encoder, tokenizer, [pieces[i] for i in multi], ota, device, progress, client=client, base_model=base_model
    )
    if multi:
        vectors[multi] = result.vectors
        logger.info("OTA for %d words: loss %.5f -> %.5f", len(multi), result.loss_before, result.loss_after)
    kinds = ["ota" if len(p) > 1 else "row" for p in pieces]
    recorded = target_settings(
        base_model, min_count, max_words, held_out_fraction, seed, multi_piece_words, multi_piece_min_zipf, ota
    )
    info = {
        **{key: value for key, value in recorded.items() if key not in ("base_model", "ota")},
        "n_corpus": n_corpus,
        "n_row": len(single),
        "n_ota": len(multi),
        "multi_piece_share": round(len(multi) / len(words), 4),
        # the corpus words were chosen for having contexts: only wordfreq's need looking up
        "n_with_contexts": n_corpus + sum(1 for word in words[n_corpus:] if source.contexts(word, 1)),
        "ota": {**recorded["ota"], "loss_before": result.loss_before, "loss_after": result.loss_after},
        "vocab_size": int(table.shape[0]),
        "seconds": round(time.perf_counter() - started, 1),
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
