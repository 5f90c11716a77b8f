"""The `contexts` setting of the `bertram` component: which sources, in which order, how many from each
(`chain_contexts`, the one rule every mix of sources follows, in training and evaluation too).

Written as sources joined by "+", each with an optional limit after ":":
"doc", "store", "dictionary", "doc+dictionary", "store:4+dictionary:2"; "none"
for the word's form alone (no contexts).
Sources are read in the order written; each adds its contexts (skipping any
already taken) until it has given its own limit (default: contexts_per_word)
or the word has contexts_per_word in all. "both" is the older name of
"doc+store". The canonical spelling (`canonical`) is part of the vector
cache's key, so a vector computed from one mix of sources is never served
for another.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Optional, Set, Tuple

from ..errors import Errors

SOURCE_NAMES = ("doc", "store", "dictionary")
ALIASES = {"both": "doc+store"}
#: The setting each source needs besides `contexts` (None: nothing).
NEEDS = {"doc": None, "store": "context_store", "dictionary": "dictionary_store"}


@dataclass(frozen=True)
class Source:
    name: str
    limit: Optional[int] = None  # None: up to contexts_per_word

    def __str__(self) -> str:
        return self.name if self.limit is None else f"{self.name}:{self.limit}"


def chain_contexts(groups: Iterable[Tuple[Iterable[str], Optional[int]]], total: Optional[int] = None) -> List[str]:
    """Contexts from each group in turn: each gives up to its own limit (None: none of its own) of
    texts not taken yet, and all together up to `total` (None: no cap).

    The one rule for mixing sources (the component's `contexts`, training's definitions before
    corpus contexts, the evaluation's definitions-then-contexts system). Groups are read lazily:
    a source after the cap is never asked.
    """
    texts: List[str] = []
    seen: Set[str] = set()
    for candidates, limit in groups:
        if total is not None and len(texts) >= total:
            break
        taken = 0
        for text in candidates:
            if (limit is not None and taken >= limit) or (total is not None and len(texts) >= total):
                break
            if text not in seen:
                seen.add(text)
                texts.append(text)
                taken += 1
    return texts


def parse_contexts(spec: str) -> Tuple[Source, ...]:
    """"doc+dictionary:2" -> (Source("doc"), Source("dictionary", 2)); ValueError naming the bad part."""
    example = 'e.g. "doc", "store", "dictionary", "doc+dictionary", "store:4+dictionary:2" or "none"'
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(Errors.E104.format(example=example, spec=spec))
    if spec.strip() == "none":
        return ()  # the word's form alone
    sources = []
    for part in ALIASES.get(spec.strip(), spec).split("+"):
        name, _, limit_text = part.strip().partition(":")
        if name not in SOURCE_NAMES:
            raise ValueError(Errors.E105.format(spec=spec, name=name, sources=", ".join(SOURCE_NAMES), example=example))
        limit = None
        if limit_text:
            if not limit_text.isdigit() or int(limit_text) < 1:
                raise ValueError(Errors.E106.format(spec=spec, name=name, limit_text=limit_text))
            limit = int(limit_text)
        if any(source.name == name for source in sources):
            raise ValueError(Errors.E107.format(spec=spec, name=name))
        sources.append(Source(name, limit))
    return tuple(sources)


def canonical(sources: Tuple[Source, ...]) -> str:
    return "+".join(str(source) for source in sources) or "none"


def check_settings(sources: Tuple[Source, ...], settings: dict, store_frequencies: bool = False) -> None:
    """Each source's own setting must be given: a named error, not a failure at the first doc.

    `store_frequencies`: the rare-word rule counts words in the context store, which needs one too.
    """
    if store_frequencies and not settings.get("context_store"):
        raise ValueError(Errors.E108)
    for source in sources:
        needed = NEEDS[source.name]
        if needed is not None and not settings.get(needed):
            raise ValueError(Errors.E109.format(spec=canonical(sources), name=source.name, needed=needed))
