"""Definition contexts for training words, so that BERTRAM learns to read a definition.

At inference a rare word may get "kumquat: small oval citrus fruit ..." from a
definition store; a network trained on corpus sentences alone meets that kind
of context only where the corpus happens to hold glosses. With
`train --definitions STORE`, each training word's pool of contexts starts with
up to `per_word` of its definitions (then its corpus contexts, the pool size
unchanged), so the contexts sampled for a step include definitions as often
as they make up the pool.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

from ..bounds import check_count
from ..dictionary.store import DefinitionStore
from ..pipeline.context_sources import chain_contexts
from ..types import PathLike
from .sources import TrainingSource

DEFAULT_PER_WORD = 2


class WithDefinitions:
    """A `TrainingSource` whose contexts of a word begin with the word's definitions."""

    def __init__(self, source: TrainingSource, store: PathLike, per_word: int = DEFAULT_PER_WORD) -> None:
        check_count(per_word, "--definitions-per-word", "contexts")
        self.source = source
        self.per_word = int(per_word)
        self._store = DefinitionStore.open(store)

    def counts(self, min_count: int = 1) -> Iterable[Tuple[str, int]]:
        return self.source.counts(min_count)

    def contexts(self, word: str, limit: Optional[int] = None) -> List[str]:
        definitions = self._store.contexts(word, self.per_word if limit is None else min(self.per_word, limit))
        return chain_contexts([(definitions, self.per_word), (self.source.contexts(word, limit), None)], limit)

    def close(self) -> None:
        self._store.close()
