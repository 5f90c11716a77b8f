"""Where the `bertram` component's knowledge of a word comes from.

`WordSources` is the part of `BertramComponent` that answers, for a word of a
doc: how frequent it is (the frequency table the rare-word rule reads: the
model's counts, wordfreq, or the context store's corpus), whether BERTRAM can
see anything of it (known n-grams or wordpieces), and which contexts it gets
(the doc's own sentences, the context store, dictionary definitions, in the
order and with the limits of `contexts`: `context_sources.py`).
`word_key_function` says which form of a word decides its vector.
"""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence, Set

from spacy.tokens import Doc

from ..ngrams import UNK_ID
from ..frequencies import Frequencies, StoreFrequencies, WordfreqFrequencies, WorldFrequencies, wordfreq_has_language

if TYPE_CHECKING:
    from ..network import BertramNetwork

logger = logging.getLogger("spacy_bertram")


class WordSources:
    """Frequencies, signal and contexts of words (a part of `BertramComponent`)."""

    def _frequencies(self) -> Frequencies:
        source = self.rule.frequencies
        if source == "auto":
            if wordfreq_has_language(self.vocab.lang):
                if self.table is None:  # say so: a lost counts.tsv changes which unlisted words are rare
                    logger.warning(
                        "bertram: the BERTRAM model ships no word counts (counts.tsv), so rarity comes from "
                        "wordfreq's frequencies for %r alone; set rare_words.frequencies = \"wordfreq\" to "
                        "silence this, or restore counts.tsv in the model directory", self.vocab.lang)
                return WorldFrequencies(WordfreqFrequencies(self.vocab.lang), self.table)
            source = "model" if self.table is not None else "wordfreq"  # wordfreq: its named error
        if source == "model":
            if self.table is None:
                raise ValueError(
                    "bertram: rare_words.frequencies is 'model', but the BERTRAM model ships "
                    "no word counts (counts.tsv in its directory, written by `train`). Use "
                    "'auto', 'wordfreq' or 'store'."
                )
            self._check_resolution(self.table.resolution_zipf, "the BERTRAM model's counts.tsv")
            return self.table
        if source == "store":
            frequencies = StoreFrequencies(self._get_store)
            self._check_resolution(frequencies.resolution_zipf, f"the context store {self.context_store!r}")
            return frequencies
        return WordfreqFrequencies(self.vocab.lang)

    def _check_resolution(self, resolution: float, what: str) -> None:
        """Counts cannot tell frequencies below one occurrence in their corpus: say so."""
        if self.rule.max_zipf <= resolution:
            logger.warning(
                "bertram: %s resolves Zipf values down to %.2f (one occurrence), above max_zipf %s: "
                "every word it has seen counts as frequent and only unseen words as rare. Use "
                "rare_words.frequencies = \"auto\" (wordfreq) for a finer scale.",
                what, resolution, self.rule.max_zipf,
            )

    def _uses(self, name: str) -> bool:
        return any(source.name == name for source in self.sources)

    def _check_sources(self) -> None:
        """Open the stores the settings use now: a bad store fails here, not at a doc."""
        if self._uses("store") or self.rule.frequencies == "store":
            self._get_store()
        if self._uses("dictionary"):
            self._get_dictionary()

    def _word_pieces(self, word: str) -> List[int]:
        try:
            return list(self.network.inputs.word_pieces(word))
        except ValueError:  # the tokenizer drops the word entirely
            return []

    def _has_signal(self, word: str) -> bool:
        network = self.network
        if any(i != UNK_ID for i in network.ngram_vocab.encode(word)):
            return True
        unk = network.tokenizer.unk_token_id
        try:
            return any(piece != unk for piece in network.inputs.word_pieces(word))
        except ValueError:
            return False

    def rare_tokens(self, doc: Doc) -> List[int]:
        """Indices of the tokens of `doc` the component calls rare, in order: its own rule,
        frequencies and encoder, so that an evaluation never needs a second rule."""
        return self._ensure_ready().find(doc)  # type: ignore[attr-defined]

    def _get_store(self) -> Any:
        """The context store, opened lazily and once per process (SQLite handles must not cross fork)."""
        if self._store is None or self._store_pid != os.getpid():
            if not self.context_store:
                raise ValueError("bertram: no context_store configured")
            from .contexts import open_context_store

            try:
                self._store = open_context_store(self.context_store)
            except ValueError as err:
                saved = f" (the saved pipeline had it {self.store_hint})" if self.store_hint else ""
                raise ValueError(
                    f"bertram: cannot open the context store {self.context_store!r} "
                    f"(contexts={self.source!r}): {err}.{saved} If the pipeline or the store moved, point the "
                    f"pipeline at the store: spacy.load(PIPELINE, config={{\"components\": {{\"{self.name}\": "
                    f"{{\"context_store\": \"/path/to/contexts.sqlite\"}}}}}}), or keep the store at the same "
                    "place relative to the pipeline."
                ) from err
            self._store_pid = os.getpid()
        return self._store

    def _get_dictionary(self) -> Any:
        """The definition store, opened lazily and once per process, like the context store."""
        if self._dictionary is None or self._dictionary_pid != os.getpid():
            from ..dictionary.store import open_definition_store

            self._dictionary = open_definition_store(self.dictionary_store)
            self._dictionary_pid = os.getpid()
        return self._dictionary

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
            return self._get_store().contexts(word, limit=limit)
        token = doc[indices[0]]
        lemma = token.lemma_ if doc.has_annotation("LEMMA") else None
        return self._get_dictionary().contexts(token.text, limit, lemma)

    def contexts_for(self, doc: Doc, word: str, indices: Sequence[int]) -> List[str]:
        """The word's contexts from each source in turn, each up to its limit, all up to contexts_per_word."""
        texts: List[str] = []
        seen: Set[str] = set()
        for source in self.sources:
            if len(texts) >= self.contexts_per_word:
                break
            limit = source.limit or self.contexts_per_word
            taken = 0
            for text in self.source_contexts(source.name, doc, word, indices, limit):
                if text not in seen and taken < limit and len(texts) < self.contexts_per_word:
                    seen.add(text)
                    texts.append(text)
                    taken += 1
        return texts


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
