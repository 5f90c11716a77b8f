"""Definition contexts in the intrinsic evaluation: the dictionary systems and their coverage.

With a definition store (`python -m spacy_bertram dictionary`), each rare
word of CRW and Card-660 gets up to `DEFINITIONS` definitions written as the
set writes the word (an inflected form finds its lemma, as in the
component). Two systems join the table:
  bertram_dict   BERTRAM on the definitions alone (a word without an entry:
                 its form vector, as the component falls back)
  bertram_both   the definitions first, then corpus contexts, `BOTH_TOTAL`
                 in all: the same number of contexts as bertram_16, so any
                 difference is what definitions add over corpus sentences
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from spacy_bertram import DefinitionStore, chain_contexts
from spacy_bertram.project_support import PathLike

DEFINITIONS = 4
BOTH_TOTAL = 16
SYSTEMS = {
    "bertram_dict": f"BERTRAM with up to {DEFINITIONS} dictionary definitions of the word (none: its form)",
    "bertram_both": f"BERTRAM with the definitions first, then corpus contexts, {BOTH_TOTAL} in all",
}


def load_definitions(store: PathLike, words: Sequence[str], limit: int = DEFINITIONS) -> Dict[str, List[str]]:
    """word -> its definition contexts (possibly []), the word written as given."""
    with DefinitionStore.open(store) as definitions:
        return {word: definitions.contexts(word, limit) for word in words}


def set_definitions(dictionary: Optional[PathLike], crw, card):
    """Definitions of the rare words of CRW and of Card-660 (None for a set not given, or no dictionary)."""
    if dictionary is None:
        return None, None
    crw_words = crw.rare_words if crw is not None else None
    card_words = sorted({pair[1] for pair in card.pairs}) if card is not None else None
    return tuple(None if words is None else load_definitions(dictionary, words) for words in (crw_words, card_words))


def coverage(definitions: Mapping[str, List[str]], words: Sequence[str]) -> Dict[str, Any]:
    """How many of the rare words have an entry (the share the dictionary can change at all)."""
    covered = sum(bool(definitions.get(word)) for word in words)
    return {
        "rare_words": len(words),
        "with_definitions": covered,
        "share": round(covered / len(words), 4) if words else None,
    }


def definition_systems(
    network,
    words: Sequence[str],
    definitions: Mapping[str, List[str]],
    contexts: Optional[Mapping[str, List[str]]],
    run: Callable[[str, Callable[[], np.ndarray]], None],
) -> None:
    """Run bertram_dict (and bertram_both where there are corpus contexts) through `run(name, make)`."""
    run("bertram_dict", lambda: network.infer([(w, list(definitions.get(w, []))) for w in words]))
    if contexts is not None:
        both = [
            (w, chain_contexts([(definitions.get(w, []), None), (contexts.get(w, []), None)], BOTH_TOTAL))
            for w in words
        ]
        run("bertram_both", lambda: network.infer(both))


def with_definitions(pairs: Sequence[Any], definitions: Mapping[str, List[str]]) -> List[int]:
    """Indices of the pairs whose rare (second) word has an entry."""
    return [i for i, pair in enumerate(pairs) if definitions.get(pair[1])]
