"""Where the `bertram` component's knowledge of a word comes from.

`WordSources` is an object the component holds (`component.word_sources`),
built from the settings that say, for a word of a doc: how frequent it is (the
frequency table the rare-word rule reads: the model's counts, wordfreq, or the
context store's corpus), whether BERTRAM can see anything of it (known n-grams
or wordpieces), and which contexts it gets (the doc's own sentences, the
context store, dictionary definitions, in the order and with the limits of
`contexts`: `context_sources.py`). It opens the stores once per process and
records the context store's path relative to a saved pipeline, to find the
store there again. What a load can replace (the network, the model's counts)
is passed in, never read from the component.
`word_key_function` says which form of a word decides its vector.
"""
from __future__ import annotations

import os
import warnings
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set

from spacy.tokens import Doc

from ..dictionary.store import open_definition_store
from ..errors import Errors, Warnings
from ..frequencies import (CountTable, Frequencies, StoreFrequencies, WordfreqFrequencies, WorldFrequencies,
                           wordfreq_has_language)
from ..network import BertramNetwork
from ..inputs import UNK_ID
from ..rare_words import RareWordFinder, RareWordRule
from .context_sources import canonical, chain_contexts, check_settings, parse_contexts
from .contexts import open_context_store

#: Key of the component's saved cfg: the context store's path relative to the pipeline directory.
STORE_KEY = "context_store_relative"


class WordSources:
    """Frequencies, signal and contexts of words, for one component's settings.

    rule: the rare-word rule; its `frequencies` says which counts decide rarity.
    lang: the pipeline's language (wordfreq's frequencies).
    name: the component's name, in the message that says how to point it at a moved store.
    contexts: "doc" (the doc's sentences), "store" (`context_store`), "dictionary"
        (`dictionary_store`), or a mix read in order, with optional limits:
        "doc+dictionary", "store:6+dictionary:2" (`context_sources.py`); "none": the form alone.
    context_store: a context store from `python -m spacy_bertram prepare`.
    dictionary_store: a definition store from `python -m spacy_bertram dictionary`.
    contexts_per_word: contexts gathered per rare word, from all sources
        together; the network reads at most its own max_contexts of them.
    context_window: tokens on each side of the word when the doc has no
        sentence boundaries (or the sentence is longer than twice this).
    """

    def __init__(
        self,
        rule: RareWordRule,
        lang: str,
        *,
        name: str = "bertram",
        contexts: str = "doc",
        context_store: Optional[str] = None,
        dictionary_store: Optional[str] = None,
        contexts_per_word: int = 8,
        context_window: int = 25,
    ) -> None:
        self.sources = parse_contexts(contexts)
        check_settings(self.sources, {"context_store": context_store, "dictionary_store": dictionary_store},
                       store_frequencies=rule.frequencies == "store")
        if contexts_per_word < 1 or context_window < 1:
            raise ValueError(Errors.E150)
        self.rule = rule
        self.lang = lang
        self.name = name
        self.source = canonical(self.sources)  # in the cache key
        self.context_store = context_store
        self.dictionary_store = dictionary_store
        self.contexts_per_word = int(contexts_per_word)
        self.context_window = int(context_window)
        self.store_hint: Optional[str] = None  # where a loaded pipeline's cfg says the store was
        # The stores, opened lazily and once per process (SQLite handles must not cross fork).
        self._store: Any = None
        self._store_pid: Optional[int] = None
        self._dictionary: Any = None
        self._dictionary_pid: Optional[int] = None

    # -- rarity ------------------------------------------------------------------------

    def finder(self, network: BertramNetwork, table: Optional[CountTable]) -> RareWordFinder:
        """The rare-word rule with these frequencies (`table`: the model's counts) and `network`'s encoder."""
        return RareWordFinder(self.rule, self.frequencies(table), partial(word_pieces, network),
                              partial(has_signal, network), unk_id=network.tokenizer.unk_token_id)

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
        """Counts cannot tell frequencies below one occurrence in their corpus: say so."""
        if self.rule.max_zipf <= resolution:
            warnings.warn(Warnings.W003.format(what=what, resolution=resolution, max_zipf=self.rule.max_zipf),
                          stacklevel=2)

    # -- the stores --------------------------------------------------------------------

    def uses(self, name: str) -> bool:
        return any(source.name == name for source in self.sources)

    def open_stores(self) -> None:
        """Open the stores the settings use now: a bad store fails here, not at a doc."""
        if self.uses("store") or self.rule.frequencies == "store":
            self.store()
        if self.uses("dictionary"):
            self.dictionary()

    def store(self) -> Any:
        """The context store, opened lazily and once per process."""
        if self._store is None or self._store_pid != os.getpid():
            if not self.context_store:
                raise ValueError(Errors.E152)
            try:
                self._store = open_context_store(self.context_store)
            except ValueError as err:
                saved = f" (the saved pipeline had it {self.store_hint})" if self.store_hint else ""
                raise ValueError(Errors.E153.format(path=self.context_store, source=self.source, err=err, saved=saved,
                                                    name=self.name)) from err
            self._store_pid = os.getpid()
        return self._store

    def dictionary(self) -> Any:
        """The definition store, opened lazily and once per process, like the context store."""
        if self._dictionary is None or self._dictionary_pid != os.getpid():
            self._dictionary = open_definition_store(self.dictionary_store)
            self._dictionary_pid = os.getpid()
        return self._dictionary

    def saved_store(self, pipeline_dir: Path) -> Dict[str, str]:
        """The cfg entry that says where the context store is as seen from `pipeline_dir` ({}: none)."""
        if not self.context_store:
            return {}
        return {STORE_KEY: os.path.relpath(Path(self.context_store).resolve(), pipeline_dir)}

    def relocate_store(self, pipeline_dir: Path, cfg: Optional[Dict[str, Any]]) -> None:
        """A configured store path that is gone: the one `cfg` saved relative to the pipeline, if it is there."""
        relative = (cfg or {}).get(STORE_KEY)
        if not self.context_store or Path(self.context_store).exists() or not isinstance(relative, str):
            return
        candidate = pipeline_dir / relative
        self.store_hint = f"saved at {relative!r} relative to the pipeline, {str(candidate)!r} here"
        if candidate.exists():
            self.context_store = str(candidate.resolve())

    # -- contexts ----------------------------------------------------------------------

    def doc_contexts(self, doc: Doc, indices: Sequence[int], limit: Optional[int] = None) -> List[str]:
        """Distinct texts of the sentences (or token windows) around the word's occurrences."""
        use_sents = doc.has_annotation("SENT_START")
        window = self.context_window
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
        return spread(texts, limit or self.contexts_per_word)

    def source_contexts(self, name: str, doc: Doc, word: str, indices: Sequence[int], limit: int) -> List[str]:
        """Up to `limit` contexts of one source; definitions write the word as the doc does."""
        if name == "doc":
            return self.doc_contexts(doc, indices, limit)
        if name == "store":
            return self.store().contexts(word, limit=limit)
        token = doc[indices[0]]
        lemma = token.lemma_ if doc.has_annotation("LEMMA") else None
        return self.dictionary().contexts(token.text, limit, lemma)

    def contexts_for(self, doc: Doc, word: str, indices: Sequence[int]) -> List[str]:
        """The word's contexts from each source in turn, each up to its limit, all up to contexts_per_word."""
        groups = ((self.source_contexts(source.name, doc, word, indices, source.limit or self.contexts_per_word),
                   source.limit or self.contexts_per_word) for source in self.sources)
        return chain_contexts(groups, self.contexts_per_word)


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
    if any(i != UNK_ID for i in network.ngram_vocab.encode(word)):
        return True
    unk = network.tokenizer.unk_token_id
    try:
        return any(piece != unk for piece in network.inputs.word_pieces(word))
    except ValueError:
        return False


def spread(items: Sequence[str], limit: int) -> List[str]:
    """At most `limit` items, evenly spaced over the sequence (first and last kept)."""
    if len(items) <= limit:
        return list(items)
    if limit == 1:
        return [items[0]]
    step = (len(items) - 1) / (limit - 1)
    return [items[round(k * step)] for k in range(limit)]


def word_key_function(network: BertramNetwork) -> Callable[[str], str]:
    """The word form that decides the vector: lowercased only if the network ignores case."""
    ngrams_ignore_case = network.ngram_vocab.lowercase
    tokenizer_ignores_case = network.inputs.normalize("Ab") == network.inputs.normalize("ab")
    if ngrams_ignore_case and tokenizer_ignores_case:
        return str.lower
    return str
