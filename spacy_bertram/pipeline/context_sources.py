"""Where a rare word's contexts come from: the sources, registered in spaCy's config system as
spacy-transformers registers its span getters, and `chain_contexts`, the one rule every mix of
sources follows (in the component, in training's definitions and in the evaluation).

A context source is any callable `source(doc, word, indices, limit) -> List[str]` giving up to
`limit` contexts of `word`, which occurs at token `indices` of `doc`. Its `key` names it in the
vector cache key, so a vector computed from one source is never served for another (a source
without one is named by its function). The built-in sources (registered in `architectures.py`):

    [components.bertram.contexts]
    @context_sources = "spacy-bertram.chained_contexts.v1"

    [components.bertram.contexts.*.store]
    @context_sources = "spacy-bertram.store_contexts.v1"
    path = "corpus/contexts.sqlite"
    limit = 6

    [components.bertram.contexts.*.dictionary]
    @context_sources = "spacy-bertram.dictionary_contexts.v1"
    path = "corpus/definitions.sqlite"
    limit = 2

The string shorthand is sugar for those same sources (`contexts_from_spec`, its one parser): sources joined
by "+", each with an optional limit after ":" ("doc", "store", "dictionary", "memory", "doc+dictionary",
"store:4+dictionary:2", "doc+memory"; "none" for the form alone), each name built by the registered source
it stands for (`SHORTHAND`), as a config block naming it builds it, given the component's `context_store`,
`dictionary_store` and `context_window` settings, which nothing else reads: once built, each source
holds its own window, store and limit, and setting the component's `context_window` sets the window of
its doc sources, registered or not (a component without one refuses it: nothing would read it). Sources
are read in order; each adds its contexts (skipping any already taken) until it has given its own limit
(default: contexts_per_word) or the word has contexts_per_word in all.
"both" is the older name of "doc+store". "memory" is `context_memory.MemoryContexts`, the doc's sentences of the
word and those of the docs seen before.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

from spacy.tokens import Doc

from .. import registries  # spacy.registry.context_sources, which architectures.py fills
from ..bounds import check_count, describe, is_count
from ..dictionary.store import open_definition_store
from ..errors import Errors
from ..context_store import DamagedFileError, open_context_store

ContextSource = Callable[[Doc, str, Sequence[int], int], List[str]]

#: The shorthand's older names.
ALIASES = {"both": "doc+store"}
#: The shorthand's names: the registered source each builds (`architectures.py`), and the component setting its
#: store's path comes from (None: it reads the doc, with the component's `context_window`).
SHORTHAND: Dict[str, Tuple[str, Optional[str]]] = {
    "doc": ("spacy-bertram.doc_contexts.v1", None),
    "store": ("spacy-bertram.store_contexts.v1", "context_store"),
    "dictionary": ("spacy-bertram.dictionary_contexts.v1", "dictionary_store"),
    "memory": ("spacy-bertram.memory_contexts.v1", None),
}


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


# -- the stores the sources read -----------------------------------------------------------


class LazyStore:
    """A store file opened on first use and once per process (SQLite handles must not cross a fork).

    `kind` is "context" (a `prepare` store) or "dictionary" (a definition store); `setting` names where
    the path was configured and `owner` the component, both for the error a store that will not open gets.
    """

    def __init__(self, path: Optional[str], kind: str, setting: str) -> None:
        self._path = str(path) if path else None
        self.kind = kind
        self.setting = setting
        self.owner = "bertram"
        self.hint: Optional[str] = None  # where a loaded pipeline's cfg said the store was
        self._handle: Any = None
        self._pid: Optional[int] = None

    @property
    def path(self) -> Optional[str]:
        return self._path

    @path.setter
    def path(self, value: Optional[str]) -> None:
        self._path = str(value) if value else None
        self._handle = None

    def get(self) -> Any:
        if self._handle is None or self._pid != os.getpid():
            if not self._path:
                raise ValueError(Errors.E152.format(setting=self.setting))
            self._handle = self._open()
            self._pid = os.getpid()
        return self._handle

    def _open(self) -> Any:
        if self.kind == "dictionary":
            return open_definition_store(self._path, self.setting)
        try:
            return open_context_store(self._path)
        except DamagedFileError:  # names the file and the fix: no hint of a moved store
            raise
        except ValueError as err:
            saved = f" (the saved pipeline had it {self.hint})" if self.hint else ""
            raise ValueError(
                Errors.E153.format(path=self._path, setting=self.setting, err=err, saved=saved, name=self.owner)
            ) from err


# -- the built-in sources --------------------------------------------------------------------


#: Tokens on each side of a rare word in a doc without sentences (or in a sentence longer than twice that).
#: Against 25: no difference within the CIs on synonym recovery, CRW and the rarified sets, and new text
#: costs less (docs/benchmarks.md#the-pipeline); at 5 the rarified sets' log p(gold) drops measurably.
DEFAULT_DOC_WINDOW = 10


class DocContexts:
    """The distinct sentences around the word's occurrences in the doc (a window of `window` tokens on each
    side where the doc has no sentence boundaries, or within a sentence longer than twice that)."""

    def __init__(self, window: int = DEFAULT_DOC_WINDOW, limit: Optional[int] = None) -> None:
        check_count(window, "the window of spacy-bertram.doc_contexts.v1", "window")
        self.window = int(window)
        self.limit = _checked_limit(limit, "doc")
        self.key = _key("doc", self.limit)

    def __call__(self, doc: Doc, word: str, indices: Sequence[int], limit: int) -> List[str]:
        use_sents = doc.has_annotation("SENT_START")
        window = self.window
        texts: List[str] = []
        seen: Set[str] = set()
        for i in indices:
            lo, hi = max(0, i - window), min(len(doc), i + window + 1)
            if use_sents:
                sent = doc[i].sent
                if len(sent) <= 2 * window + 1:
                    lo, hi = sent.start, sent.end
                else:
                    lo, hi = max(sent.start, lo), min(sent.end, hi)
            text = doc[lo:hi].text
            if text not in seen:
                seen.add(text)
                texts.append(text)
        return spread(texts, _within(self.limit, limit))


class StoreContexts:
    """Sentences of the word from a context store (`python -m spacy_bertram prepare`): the same contexts
    wherever the word occurs, so its vector is computed once."""

    def __init__(self, store: LazyStore, limit: Optional[int] = None) -> None:
        self.store = store
        self.limit = _checked_limit(limit, "store")
        self.key = _key("store", self.limit)

    def __call__(self, doc: Doc, word: str, indices: Sequence[int], limit: int) -> List[str]:
        return self.store.get().contexts(word, limit=_within(self.limit, limit))


class DictionaryContexts:
    """The word's definitions (`python -m spacy_bertram dictionary`), written as the doc writes the word;
    an inflected form finds its lemma (the doc's, where it has lemmas)."""

    def __init__(self, store: LazyStore, limit: Optional[int] = None) -> None:
        self.store = store
        self.limit = _checked_limit(limit, "dictionary")
        self.key = _key("dictionary", self.limit)

    def __call__(self, doc: Doc, word: str, indices: Sequence[int], limit: int) -> List[str]:
        token = doc[indices[0]]
        lemma = token.lemma_ if doc.has_annotation("LEMMA") else None
        return self.store.get().contexts(token.text, _within(self.limit, limit), lemma)


class ChainedContexts:
    """Sources read in order (`chain_contexts`): each gives up to its own `limit` (if it has one, else up to
    the total) of contexts not taken yet. An empty chain gives no contexts (the word's form alone): the
    shorthand "none" builds it; in a config, `spacy-bertram.chained_contexts.v1` needs at least one source
    (confection requires a `*sources` argument), and the form alone is `contexts = "none"`."""

    def __init__(self, sources: Sequence[ContextSource]) -> None:
        self.sources = tuple(sources)
        for source in self.sources:
            if not callable(source):
                raise ValueError(Errors.E165.format(source=source))
        self.key = "+".join(source_key(source) for source in self.sources) or "none"
        self.limit: Optional[int] = None

    def __call__(self, doc: Doc, word: str, indices: Sequence[int], limit: int) -> List[str]:
        def group(source: ContextSource) -> Tuple[Iterable[str], int]:
            own = _within(getattr(source, "limit", None), limit)
            return checked_texts(source, source(doc, word, indices, own), word), own

        return chain_contexts((group(source) for source in self.sources), limit)


def source_key(source: ContextSource) -> str:
    """What names a source in the vector cache key: its `key`, or its function's qualified name."""
    key = getattr(source, "key", None)
    if isinstance(key, str) and key:
        return key
    function = getattr(source, "func", source)  # functools.partial
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', type(function).__name__)}"


def leaves(source: ContextSource) -> Iterator[Any]:
    """The source and every source it chains, depth first."""
    yield source
    for inner in getattr(source, "sources", ()):
        yield from leaves(inner)


def spread(items: Sequence[str], limit: int) -> List[str]:
    """At most `limit` items, evenly spaced over the sequence (first and last kept)."""
    if len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[0]]
    step = (len(items) - 1) / (limit - 1)
    return [items[round(k * step)] for k in range(limit)]


def checked_texts(source: ContextSource, texts: Any, word: str) -> List[str]:
    """What a source returned, as a list of strings: anything else is a named error, not a TypeError later."""
    if isinstance(texts, (list, tuple)) and all(isinstance(text, str) for text in texts):
        return list(texts)
    raise ValueError(Errors.E167.format(source=source_key(source), value=texts, word=word))


def _within(own: Optional[int], limit: int) -> int:
    return limit if own is None else min(own, limit)


def _checked_limit(limit: Optional[int], name: str, spec: Optional[str] = None) -> Optional[int]:
    """A source's limit: None, or a count of contexts within their bounds (`bounds.COUNT_BOUNDS`)."""
    if limit is not None and not is_count(limit, "contexts"):
        raise ValueError(
            Errors.E106.format(spec=spec or name, name=name, bounds=describe("contexts"), limit_text=str(limit))
        )
    return limit


def _key(name: str, limit: Optional[int]) -> str:
    return name if limit is None else f"{name}:{limit}"


# -- the string shorthand ------------------------------------------------------------------


def contexts_from_spec(
    spec: str,
    *,
    context_store: Optional[str] = None,
    dictionary_store: Optional[str] = None,
    window: int = DEFAULT_DOC_WINDOW,
) -> ChainedContexts:
    """The string shorthand's parser: "doc+store:2" -> the chain of the built-in sources it names, each built by
    the registered `spacy-bertram.*_contexts.v1` it stands for (`shorthand_source`) and holding its own settings
    (`window` for "doc" and "memory", the store paths for "store" and "dictionary", its limit). The paths and the
    window are read here and nowhere else; a path left empty is named when the stores are checked
    (`WordSources.check_paths`), so a config with a null `${paths...}` still fills and validates. ValueError
    names a bad part."""
    example = 'e.g. "doc", "store", "dictionary", "memory", "doc+dictionary", "store:4+dictionary:2" or "none"'
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(Errors.E104.format(example=example, spec=spec))
    if spec.strip() == "none":
        return ChainedContexts(())  # the word's form alone
    paths = {"context_store": context_store, "dictionary_store": dictionary_store}
    sources: List[ContextSource] = []
    named: Set[str] = set()
    for part in ALIASES.get(spec.strip(), spec).split("+"):
        name, _, limit_text = part.strip().partition(":")
        if name not in SHORTHAND:
            raise ValueError(Errors.E105.format(spec=spec, name=name, sources=", ".join(SHORTHAND), example=example))
        if limit_text and not limit_text.isdigit():
            raise ValueError(
                Errors.E106.format(spec=spec, name=name, bounds=describe("contexts"), limit_text=limit_text)
            )
        _checked_limit(int(limit_text) if limit_text else None, name, spec)
        if name in named:
            raise ValueError(Errors.E107.format(spec=spec, name=name))
        named.add(name)
        sources.append(shorthand_source(name, int(limit_text) if limit_text else None, paths, window))
    return ChainedContexts(sources)


def shorthand_source(name: str, limit: Optional[int], paths: Dict[str, Optional[str]], window: int) -> ContextSource:
    """The source a shorthand name builds: its registered function's, with the component's store path (its
    setting named in the store's errors, where a config block names `contexts.path`) or window."""
    registered, setting = SHORTHAND[name]
    build = registries.context_sources.get(registered)
    if setting is None:
        return build(window=window, limit=limit)
    source = build(path=paths[setting], limit=limit)
    source.store.setting = setting
    return source
