"""Where the `bertram` component's knowledge of a word comes from.

`WordSources` is an object the component holds (`component.word_sources`),
built from the settings that say, for a word of a doc: how frequent it is (the
frequency table the rare-word rule reads: the model's counts, wordfreq, or the
context store's corpus), whether BERTRAM can see anything of it (known n-grams
or wordpieces), and which contexts it gets (the doc's own sentences, the
context store, dictionary definitions, in the order and with the limits of
`contexts`: `context_sources.py`; the docs seen before: `context_memory.py`).
It opens the stores once per process and records the context store's path
relative to a saved pipeline, to find the store there again. What a load can
replace (the network, the model's counts) is passed in, never read from the
component.
`word_key_function` says which form of a word decides its vector.
"""

from __future__ import annotations

import os
import warnings
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from spacy.tokens import Doc

from ..context_store import check_casing
from ..bounds import check_count
from ..errors import Errors, Warnings
from ..rarity.frequencies import (
    CountTable,
    Frequencies,
    StoreFrequencies,
    WordfreqFrequencies,
    WorldFrequencies,
    wordfreq_has_language,
)
from ..model.network import BertramNetwork
from ..rarity.rare_words import RareWordFinder, RareWordRule
from ..types import DEFAULT_CONTEXTS, DEFAULT_CONTEXTS_PER_WORD
from .context_memory import MemoryContexts
from .context_sources import (
    DEFAULT_DOC_WINDOW,
    ContextSource,
    DocContexts,
    LazyStore,
    checked_texts,
    contexts_from_spec,
    leaves,
    source_key,
)

#: Key of the component's saved cfg: the context store's path relative to the pipeline directory.
STORE_KEY = "context_store_relative"


class WordSources:
    """Frequencies, signal and contexts of words, for one component's settings.

    rule: the rare-word rule; its `frequencies` says which counts decide rarity.
    lang: the pipeline's language (wordfreq's frequencies).
    name: the component's name, in the message that says how to point it at a moved store.
    contexts: a context source (`context_sources.py`: registered ones such as
        `spacy-bertram.store_contexts.v1`, or your own), or its string shorthand:
        "doc" (the doc's sentences), "store" (`context_store`), "dictionary"
        (`dictionary_store`), "memory" (the sentences of the docs seen before), or a mix read in order, with
        optional limits: "doc+dictionary", "store:6+dictionary:2", "doc+memory"; "none": the form alone.
    context_store: a context store from `python -m spacy_bertram prepare` (the shorthand's
        "store", and the counts of rare_words.frequencies = "store").
    dictionary_store: a definition store from `python -m spacy_bertram dictionary` (the shorthand's "dictionary").
    contexts_per_word: contexts gathered per rare word, from all sources
        together; the network reads at most its own max_contexts of them.
    context_window: the shorthand's "doc" and "memory": tokens on each side of the word when the doc has no
        sentence boundaries (or the sentence is longer than twice this). Set later, it is the window of every
        doc source; with none (contexts = "none", "store", ...) it would apply to nothing: E168.
    """

    def __init__(
        self,
        rule: RareWordRule,
        lang: str,
        *,
        name: str = "bertram",
        contexts: Union[str, ContextSource] = DEFAULT_CONTEXTS,
        context_store: Optional[str] = None,
        dictionary_store: Optional[str] = None,
        contexts_per_word: int = DEFAULT_CONTEXTS_PER_WORD,
        context_window: int = DEFAULT_DOC_WINDOW,
    ) -> None:
        check_count(contexts_per_word, "contexts_per_word", "contexts")
        check_count(context_window, "context_window", "window")
        self.rule = rule
        self.lang = lang
        self.name = name
        self.contexts_per_word = int(contexts_per_word)
        if isinstance(contexts, str):  # the shorthand: its parser is the one reader of the paths and the window
            self.contexts: ContextSource = contexts_from_spec(
                contexts, context_store=context_store, dictionary_store=dictionary_store, window=context_window
            )
        elif callable(contexts):
            self.contexts = contexts
        else:
            raise ValueError(Errors.E165.format(source=contexts))
        # The context store: the first one a source reads, else `context_store` for the rule's store counts alone.
        self._main_store = next(self._stores_of("context"), None) or LazyStore(
            context_store, "context", "context_store"
        )
        self.source = source_key(self.contexts)  # in the cache key
        self.spec = contexts if isinstance(contexts, str) else self.source  # as the user wrote it: messages quote it
        for store in self.stores():
            store.owner = name

    def _doc_sources(self) -> Iterator[DocContexts]:
        """Every source that reads the doc: a memory holds one (its `sources`), so its window is set here too."""
        return (source for source in leaves(self.contexts) if isinstance(source, DocContexts))

    def _stores_of(self, kind: str) -> Iterator[LazyStore]:
        for source in leaves(self.contexts):
            store = getattr(source, "store", None)
            if isinstance(store, LazyStore) and store.kind == kind:
                yield store

    # -- the sources' settings, read and set where the sources hold them ---------------------

    @property
    def context_store(self) -> Optional[str]:
        return self._main_store.path

    @context_store.setter
    def context_store(self, path: Optional[str]) -> None:
        self._main_store.path = path

    @property
    def dictionary_store(self) -> Optional[str]:
        """The definition store the dictionary sources read (None: no dictionary source)."""
        return next((store.path for store in self._stores_of("dictionary")), None)

    @dictionary_store.setter
    def dictionary_store(self, path: Optional[str]) -> None:
        for store in self._stores_of("dictionary"):
            store.path = path

    @property
    def context_window(self) -> Optional[int]:
        """The window of the doc sources (None: no doc source)."""
        return next((source.window for source in self._doc_sources()), None)

    @context_window.setter
    def context_window(self, window: int) -> None:
        """Every doc source reads this window from now on, registered or built from the shorthand. Without a doc
        source nothing would read it, and contexts are not switched on after construction: refused (E168)."""
        check_count(window, "context_window", "window")
        doc_sources = list(self._doc_sources())
        if not doc_sources:
            raise ValueError(Errors.E168.format(name=self.name, spec=self.spec, window=window))
        for source in doc_sources:
            source.window = int(window)

    def memories(self) -> List[MemoryContexts]:
        """The context memories the sources hold (`context_memory.py`): what they remember, their `stats()`."""
        return [source for source in leaves(self.contexts) if isinstance(source, MemoryContexts)]

    @property
    def store_hint(self) -> Optional[str]:
        return self._main_store.hint

    # -- rarity ------------------------------------------------------------------------

    def finder(self, network: BertramNetwork, table: Optional[CountTable]) -> RareWordFinder:
        """The rare-word rule with these frequencies (`table`: the model's counts) and `network`'s encoder, and
        the frequencies' table of forms at or above max_zipf where they have one (wordfreq's)."""
        return RareWordFinder.build(
            self.rule,
            self.frequencies(table),
            partial(word_pieces, network),
            unk_id=network.tokenizer.unk_token_id,
            has_signal=partial(has_signal, network),
        )

    def frequencies(self, table: Optional[CountTable]) -> Frequencies:
        source = self.rule.frequencies
        if source == "auto":
            if wordfreq_has_language(self.lang):
                if table is None:  # say so: a lost counts.tsv changes which unlisted words are rare
                    warnings.warn(Warnings.W002.format(lang=self.lang), stacklevel=2)
                return WorldFrequencies(WordfreqFrequencies(self.lang), table)
            source = "model" if table is not None else "wordfreq"  # wordfreq: its named error
        if source == "model":
            if table is None:
                raise ValueError(Errors.E151)
            self._check_resolution(table.resolution_zipf, "the BERTRAM model's counts.tsv")
            return table
        if source == "store":
            frequencies = StoreFrequencies(self.store)
            self._check_resolution(frequencies.resolution_zipf, f"the context store {self.context_store!r}")
            return frequencies
        return WordfreqFrequencies(self.lang)

    def _check_resolution(self, resolution: float, what: str) -> None:
        """Counts cannot tell frequencies below one occurrence in their corpus: say so, with what helps here:
        wordfreq where it has the language (W003); else "auto" reads these same counts, and only a higher
        max_zipf or a larger corpus helps (W016)."""
        if self.rule.max_zipf > resolution:
            return
        values = dict(
            setting=self.rule.frequencies, what=what, lang=self.lang, resolution=resolution, max_zipf=self.rule.max_zipf
        )
        if wordfreq_has_language(self.lang):
            warnings.warn(Warnings.W003.format(**values), stacklevel=2)
        else:
            warnings.warn(Warnings.W016.format(**values), stacklevel=2)

    # -- the stores --------------------------------------------------------------------

    def stores(self) -> List[LazyStore]:
        """The stores the sources read, and the context store of store counts."""
        found = [store for kind in ("context", "dictionary") for store in self._stores_of(kind)]
        if self.rule.frequencies == "store" and self._main_store.path:
            found.append(self._main_store)
        return list({id(store): store for store in found}.values())

    def check_paths(self) -> None:
        """Every store the settings read has a path: a named error at `initialize`, a load or the first doc.

        Not at construction: a config whose store is a `${paths...}` variable left null must still fill,
        debug and validate (`spacy init fill-config`, `spacy debug config`), as spaCy's own components do.
        """
        if self.rule.frequencies == "store" and not self._main_store.path:
            raise ValueError(Errors.E108)
        for store in self.stores():
            if not store.path:
                raise ValueError(Errors.E109.format(source=self.spec, setting=store.setting))

    def open_stores(self) -> None:
        """Open the stores the settings use now, and the memory files: a bad store fails here, not at a doc."""
        self.check_paths()
        for store in self.stores():
            store.get()
        for source in leaves(self.contexts):
            if isinstance(source, MemoryContexts):
                source.open()

    def check_casing(self, word_key: Callable[[str], str]) -> None:
        """Every context store read, against the model's word key (`word_key_function`): E193 for a cased one
        where the key lowercases, which would find no contexts for capitalised words."""
        for store in self.stores():
            if store.kind == "context":
                check_casing(store.get(), word_key is str.lower, store.setting)

    def store(self) -> Any:
        """The context store, opened lazily and once per process."""
        return self._main_store.get()

    def saved_store(self, pipeline_dir: Path) -> Dict[str, str]:
        """The cfg entry that says where the context store is as seen from `pipeline_dir` ({}: none)."""
        if not self.context_store:
            return {}
        return {STORE_KEY: os.path.relpath(Path(self.context_store).resolve(), pipeline_dir)}

    def relocate_store(self, pipeline_dir: Path, cfg: Optional[Dict[str, Any]]) -> None:
        """A configured store path that is gone: the one `cfg` saved relative to the pipeline, if it is there."""
        relative = (cfg or {}).get(STORE_KEY)
        store = self._main_store
        if not store.path or Path(store.path).exists() or not isinstance(relative, str):
            return
        candidate = pipeline_dir / relative
        store.hint = f"saved at {relative!r} relative to the pipeline, {str(candidate)!r} here"
        if candidate.exists():
            store.path = str(candidate.resolve())

    # -- contexts ----------------------------------------------------------------------

    def contexts_for(self, doc: Doc, word: str, indices: Sequence[int]) -> List[str]:
        """The word's contexts from each source in turn, each up to its limit, all up to contexts_per_word."""
        texts = checked_texts(self.contexts, self.contexts(doc, word, indices, self.contexts_per_word), word)
        return texts[: self.contexts_per_word]


class Setting:
    """A component attribute that is the same-named attribute of its `word_sources` (one copy, read and set there)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, component: Any, owner: Optional[type] = None) -> Any:
        return self if component is None else getattr(component.word_sources, self.name)

    def __set__(self, component: Any, value: Any) -> None:
        setattr(component.word_sources, self.name, value)


def word_pieces(network: BertramNetwork, word: str) -> List[int]:
    """The encoder's wordpiece ids of `word` ([] if its tokenizer drops the word entirely)."""
    try:
        return list(network.inputs.word_pieces(word))
    except ValueError:
        return []


def has_signal(network: BertramNetwork, word: str) -> bool:
    """Whether BERTRAM sees anything of `word`: a known character n-gram or a known wordpiece."""
    if any(i != network.ngram_vocab.unk_id for i in network.ngram_vocab.encode(word)):
        return True
    unk = network.tokenizer.unk_token_id
    try:
        return any(piece != unk for piece in network.inputs.word_pieces(word))
    except ValueError:
        return False


def word_key_function(network: BertramNetwork) -> Callable[[str], str]:
    """The word form that decides the vector: lowercased only if the network ignores case."""
    ngrams_ignore_case = network.ngram_vocab.lowercase
    tokenizer_ignores_case = network.inputs.normalize("Ab") == network.inputs.normalize("ab")
    if ngrams_ignore_case and tokenizer_ignores_case:
        return str.lower
    return str
