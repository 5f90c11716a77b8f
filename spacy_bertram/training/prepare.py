"""Training step 1: corpus -> word counts + context store.

`prepare` streams the corpus twice (count, then sample contexts) and writes
into `output_dir`:
- contexts.sqlite: the `ContextStore` (counts of every word; up to
  `max_contexts` contexts for training words, count >= min_count, and up to
  `rare_max_contexts` for rarer words, which the spaCy component looks up);
- counts.tsv: "word<TAB>count", most frequent first (easy to inspect/grep);
- prepare.json: settings and statistics, written last: its presence means the
  step finished.
Each file is written to a temp file and renamed, so a failure leaves none of
them behind (earlier outputs from a previous run stay as they were).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Union

from ..errors import Errors
from ..context_store import DEFAULT_WINDOW
from .store_builder import (
    DEFAULT_MAX_CONTEXTS,
    DEFAULT_RARE_MAX_CONTEXTS,
    build_context_store,
    context_caps,
    count_words,
)
from .corpus import Corpus
from .dask_prepare import build_context_store_dask, count_words_dask
from .settings import DEFAULT_MIN_COUNT, PREPARE_FILES, check_prepare_run, prepare_settings
from ..fileio import atomic_path
from ..rarity.frequencies import write_counts
from ..types import PathLike

logger = logging.getLogger(__name__)

STORE_NAME, COUNTS_NAME, INFO_NAME = PREPARE_FILES


@dataclass
class PrepareResult:
    """Where the outputs are and what went in."""

    store: str
    counts: str
    info: str
    files: int
    lines: int
    total_words: int
    vocab_size: int
    training_words: int
    words_with_contexts: int
    seconds: float


def prepare(
    corpus_paths: Union[PathLike, Iterable[PathLike]],
    output_dir: PathLike,
    max_contexts: int = DEFAULT_MAX_CONTEXTS,
    context_words: int = DEFAULT_WINDOW,
    min_count: int = DEFAULT_MIN_COUNT,
    rare_max_contexts: int = DEFAULT_RARE_MAX_CONTEXTS,
    max_rare_words: Optional[int] = None,
    include_words: Iterable[str] = (),
    lowercase: bool = True,
    errors: str = "raise",
    min_training_words: int = 1,
    seed: int = 0,
    progress: bool = True,
    client: Any = None,
    force: bool = False,
) -> PrepareResult:
    """Count words and collect contexts from a corpus (files or directories).

    `lowercase` should match the encoder (True for uncased models like the
    default MiniLM). Raises ValueError, before writing anything, for a missing
    path, a binary or non-UTF-8 file (errors="skip" skips those with a
    warning), an empty corpus, or fewer than `min_training_words` words
    reaching `min_count`. With a Dask `client`, both passes run on its cluster
    (`dask_prepare.py`) and give the same store for the same files and seed.
    `output_dir` follows the output rule (`settings.check_prepare_run`): a directory of others' files,
    or a finished run with other settings, is refused before any work unless `force`.
    """
    settings = prepare_settings(
        min_count, max_contexts, rare_max_contexts, max_rare_words, context_words, lowercase, seed
    )
    check_prepare_run(output_dir, settings, force=force)
    start = time.time()
    if client is not None:
        files, counts, n_lines = count_words_dask(client, corpus_paths, lowercase, errors)
        corpus = Corpus(files, lowercase=lowercase)
    else:
        corpus = Corpus.from_paths(corpus_paths, lowercase=lowercase, errors=errors)
        logger.info("Corpus: %d files, %.1f MB", len(corpus.files), corpus.size_bytes / 1e6)
        counts, n_lines = count_words(corpus, progress=progress)
    caps = context_caps(
        counts,
        min_count,
        max_contexts,
        rare_max_contexts,
        max_rare_words=max_rare_words,
        include=[w.lower() if lowercase else w for w in include_words],
    )
    n_training = sum(1 for n in counts.values() if n >= min_count)
    if n_training < min_training_words:
        raise ValueError(
            Errors.E227.format(
                n_training=n_training,
                min_count=min_count,
                n_words=sum(counts.values()),
                min_training_words=min_training_words,
            )
        )
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    extra_meta = {k: v for k, v in settings.items() if v is not None}
    if client is not None:
        build_context_store_dask(
            client,
            corpus.files,
            out / STORE_NAME,
            counts,
            caps,
            lowercase,
            context_words,
            seed=seed,
            extra_meta=extra_meta,
            progress=progress,
        )
    else:
        build_context_store(
            corpus,
            out / STORE_NAME,
            counts,
            caps,
            window=context_words,
            n_lines=n_lines,
            seed=seed,
            extra_meta=extra_meta,
            progress=progress,
        )
    # the format `train` ships in models, over a previous run's: `prepare`'s output rule has let it write there
    write_counts(out / COUNTS_NAME, counts, overwrite=True)
    result = PrepareResult(
        store=str(out / STORE_NAME),
        counts=str(out / COUNTS_NAME),
        info=str(out / INFO_NAME),
        files=len(corpus.files),
        lines=n_lines,
        total_words=sum(counts.values()),
        vocab_size=len(counts),
        training_words=n_training,
        words_with_contexts=len(caps),
        seconds=round(time.time() - start, 2),
    )
    info = {"settings": settings, "corpus": [str(p) for p in corpus.files], **asdict(result)}
    with atomic_path(out / INFO_NAME, overwrite=True) as tmp:
        tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf8")
    logger.info(
        "Prepared %s: %d words, vocabulary %d, %d training words",
        out,
        result.total_words,
        result.vocab_size,
        n_training,
    )
    return result
