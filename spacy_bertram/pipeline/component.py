"""The `bertram` pipeline component: rare tokens in, BERTRAM vectors on the doc out.

For each doc it finds the tokens rare to the encoder (`rare_words.py`), gathers
their contexts (doc, store, definitions: `word_sources.py`), looks each (word,
contexts) pair up in an LRU cache (`vector_cache.py`), infers the missing vectors
of a batch of docs in one call, and sets `doc._.bertram` = {token index: float32
vector} for `spacy-bertram.TransformerModel.v1`. A `vector_table` word gets its
row. Each word gets one vector per doc; a doc with no rare word gets {}.

Weights are trained offline: `update` only annotates the training docs. The
layer's init loads `[components.bertram.model] model_path` (at `initialize`, or
on first use) and records which weights it holds (`layers.Weights`); a save
writes those weights, the frequency table and the model's identity into the
pipeline as checked parts (`serialization.py`) and loads nothing, so a loaded
pipeline never reads model_path again unless `initialize(reload_model=True)`
asks it to (saved before initialize, it holds no weights: W014).

Fallbacks, all documented and none silent about a wrong vector:
- a word no context of which contains it gets its form-only vector (BERTRAM's
  own fallback); a word BERTRAM sees nothing of (only unknown n-grams and
  unknown wordpieces) gets no vector and keeps its stock encoding;
- empty or whitespace-only docs get {};
- a missing or corrupt model or store (at `initialize` or load), a model for
  another encoder, a transformer that would never read the vectors
  (`checks.py`), or non-finite vectors raise ValueError.
"""
from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

import numpy
from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Config, Model

from .. import architectures  # noqa: F401  (registers what the default config names)
from ..encoder import limit_torch_threads_in_forked_worker, quiet_tokenizers_in_forked_workers
from ..errors import Errors, Warnings
from ..extension import install_extension
from ..frequencies import DEFAULT_MAX_ZIPF, CountTable
from ..layers import Weights, bertram_shim, get_bertram_network
from ..network import BertramNetwork
from ..rare_words import RareDecision, RareWordFinder, RareWordRule, group_by_word
from ..types import DEFAULT_CONTEXTS, DEFAULT_CONTEXTS_PER_WORD, DEFAULT_MIN_WORDPIECES, DOC_EXTENSION
from . import serialization
from .checks import check_encoders, check_placement
from .context_sources import DEFAULT_DOC_WINDOW, ContextSource
from ..device import check_not_forked_on_gpu
from .serialization import Reader, Writer
from .vector_cache import DEFAULT_CACHE_SIZE, CacheKey, VectorCache, cache_key
from .vector_table import VectorTable, encoder_identity
from .word_sources import Setting, WordSources, word_key_function

logger = logging.getLogger("spacy_bertram")

#: Words per call of the BERTRAM layer, bounding memory on huge batches.
WORDS_PER_CALL = 512

Vectors = Dict[int, numpy.ndarray]
#: The saved cfg's checks: keys that are strings or null; the part a cfg from before its list of parts needs.
CFG_STRINGS = ("model_id", "model_source")
UNTRAINED_KEY = "untrained"  # in a saved cfg: an untrained network (no model_path), not a model left unnamed
UNLISTED_NEEDS = {"model": "it holds the trained weights"}
#: In a saved cfg: the subword_share in use, and the one the config gave when the component was built.
SHARE_KEY, CONFIGURED_SHARE_KEY = "subword_share", "subword_share_config"

DEFAULT_CONFIG_STR = f"""
[bertram]
contexts = "{DEFAULT_CONTEXTS}"
context_store = null
dictionary_store = null
contexts_per_word = {DEFAULT_CONTEXTS_PER_WORD}
context_window = {DEFAULT_DOC_WINDOW}
cache_size = {DEFAULT_CACHE_SIZE}
save_cache = false
vector_table = null
infer_missing = true
subword_share = null

[bertram.model]
@architectures = "spacy-bertram.Bertram.v1"
base_model = null
model_path = null

[bertram.rare_words]
@misc = "spacy-bertram.RareWords.v1"
frequencies = "auto"
max_zipf = {DEFAULT_MAX_ZIPF}
alpha_only = true
min_wordpieces = {DEFAULT_MIN_WORDPIECES}
min_length = 2
skip_split_pieces = true
"""
DEFAULT_CONFIG = Config().from_str(DEFAULT_CONFIG_STR)


install_extension()


@Language.factory(
    "bertram",
    assigns=[f"doc._.{DOC_EXTENSION}"],
    default_config=DEFAULT_CONFIG["bertram"],
)
def make_bertram(
    nlp: Language,
    name: str,
    model: Model,
    rare_words: RareWordRule,
    contexts: Union[str, ContextSource],
    context_store: Optional[str],
    contexts_per_word: int,
    context_window: int,
    cache_size: int,
    save_cache: bool,
    vector_table: Optional[str] = None,
    infer_missing: bool = True,
    dictionary_store: Optional[str] = None,
    subword_share: Optional[float] = None,
) -> "BertramComponent":
    """BERTRAM vectors for the rare tokens of each doc, in `doc._.bertram`.

    model: the `spacy-bertram.Bertram.v1` layer. Its `model_path` is the
        trained BERTRAM directory, loaded by `initialize` or on first use; its
        network settings are read from the trained model (a conflicting value
        is an error).
    rare_words: the rule (`spacy-bertram.RareWords.v1`).
    contexts: a context source, registered (`@context_sources =
        "spacy-bertram.store_contexts.v1"`, or your own) or as a string
        shorthand ("doc", "store:6+dictionary:2", "none": `context_sources.py`).
    context_store, dictionary_store, context_window: the paths and window the
        shorthand reads; context_store also gives rare_words.frequencies="store" its counts.
    contexts_per_word: contexts per rare word from all sources together (`word_sources.WordSources`).
    cache_size: vectors kept in the LRU cache (0 disables it).
    save_cache: write the cache with the pipeline. Off by default: the cache
        holds the rare words of every doc processed (the training data too).
    vector_table: a table from `python -m spacy_bertram vectors` (or give it at
        initialize): a rare word in it gets its row, no inference; the table is
        saved with the pipeline.
    infer_missing: infer rare words that are not in the table (False: they
        keep their stock encoding).
    subword_share: the weight of the subword mean in the vectors inferred, in
        [0, 1]; None: the trained model's own (its config.json). An inference
        setting (training fits BERTRAM's own vector), so it is set here rather
        than by saving the model again.
    """
    return BertramComponent(
        nlp.vocab, model, rare_words, name=name, nlp=nlp, contexts=contexts, context_store=context_store,
        contexts_per_word=contexts_per_word, context_window=context_window, cache_size=cache_size,
        save_cache=save_cache, vector_table=vector_table, infer_missing=infer_missing,
        dictionary_store=dictionary_store, subword_share=subword_share,
    )


def checked_subword_share(share: Any, name: str) -> Optional[float]:
    """None (the trained model's own share) or a number in [0, 1]: anything else is E169, not a vector mixed out
    of range."""
    if share is None:
        return None
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
        raise ValueError(Errors.E169.format(name=name, value=share))
    return float(share)


@dataclass
class Derived:
    """What the component derives from its model, counts, vector table and pipeline (`reset_derived` drops it)."""

    finder: RareWordFinder  # the rare-word rule with the model's encoder and counts
    word_key: Callable[[str], str]  # the word form that decides a vector
    checked_encoders: Set[int] = field(default_factory=set)  # transformers checked against the model
    layout: Optional[Tuple[int, ...]] = None  # the pipeline whose placement was checked


class BertramComponent(Pipe):
    """Sets `doc._.bertram` (token index -> BERTRAM vector) for rare tokens."""

    # Settings of `word_sources` (a word's frequency, signal and contexts), read and set through the component.
    rule = Setting()
    context_store = Setting()
    dictionary_store = Setting()
    contexts_per_word = Setting()
    context_window = Setting()

    def __init__(
        self,
        vocab: Vocab,
        model: Model,
        rare_words: RareWordRule,
        *,
        name: str = "bertram",
        nlp: Optional[Language] = None,
        contexts: Union[str, ContextSource] = DEFAULT_CONTEXTS,
        context_store: Optional[str] = None,
        contexts_per_word: int = DEFAULT_CONTEXTS_PER_WORD,
        context_window: int = DEFAULT_DOC_WINDOW,
        cache_size: int = DEFAULT_CACHE_SIZE,
        save_cache: bool = False,
        vector_table: Optional[str] = None,
        infer_missing: bool = True,
        dictionary_store: Optional[str] = None,
        subword_share: Optional[float] = None,
    ) -> None:
        self.word_sources = WordSources(
            rare_words,
            vocab.lang,
            name=name,
            contexts=contexts,
            context_store=context_store,
            dictionary_store=dictionary_store,
            contexts_per_word=contexts_per_word,
            context_window=context_window,
        )
        self.vocab = vocab
        self.model = model
        self.name = name
        self.save_cache = save_cache
        self.cache = VectorCache(cache_size)
        self.infer_missing = bool(infer_missing)
        # Saved state besides the weights (whose model the layer's shim records): the counts, the vector table.
        self.table: Optional[CountTable] = None
        self.vectors: Optional[VectorTable] = None
        self._vector_table_path = vector_table
        self._configured_share = checked_subword_share(subword_share, name)  # the config's: a load compares it
        bertram_shim(model).subword_share = self._configured_share
        self._nlp = nlp
        self._pid = os.getpid()  # a forked worker checks itself before its first batch
        quiet_tokenizers_in_forked_workers()
        self.reset_derived()
        install_extension()

    def reset_derived(self) -> None:
        """Forget what is derived from the model, its counts, the vector table and the pipeline: the one
        place that drops it, called whenever one of those changes (`_ensure_ready` builds it again)."""
        self._derived: Optional[Derived] = None

    # -- the trained model -------------------------------------------------------------

    @property
    def network(self) -> BertramNetwork:
        return get_bertram_network(self.model)

    @property
    def cfg(self) -> Dict[str, Any]:
        """The trained model the weights are, as a save names it (None: untrained): read from the layer."""
        weights = bertram_shim(self.model).weights or Weights()
        return {"model_id": weights.model_id, "model_source": weights.source}

    @property
    def is_loaded(self) -> bool:
        weights = bertram_shim(self.model).weights
        return weights is not None and weights.trained

    @property
    def subword_share(self) -> Optional[float]:
        """The weight of the subword mean in the vectors inferred (None: the trained model's own). The layer
        holds it, its forward pass reads it; vectors cached at another share are not served (`_cache_fingerprint`)."""
        return bertram_shim(self.model).subword_share

    @subword_share.setter
    def subword_share(self, share: Optional[float]) -> None:
        bertram_shim(self.model).subword_share = checked_subword_share(share, self.name)
        self.reset_derived()  # the vector table's mix is checked against it again (W018)

    def _cache_fingerprint(self) -> Optional[str]:
        """What a cached vector depends on besides its word and contexts: the model, and a share set here (none
        set: the model alone, as caches saved before the setting are bound)."""
        model_id, share = self.cfg["model_id"], self.subword_share
        return model_id if model_id is None or share is None else f"{model_id} subword_share={share!r}"

    def _initialize_model(self) -> None:
        """Run the layer's init (it loads model_path when it holds no weights to keep); take the word counts
        of a model it loaded."""
        shim = bertram_shim(self.model)
        before = shim.weights
        self.model.initialize()
        weights = shim.weights
        if weights is before or weights is None or weights.source is None:
            return  # nothing loaded: the weights it held, untrained or from a save
        try:
            table = CountTable.from_model_dir(weights.source)
        except ValueError as err:
            raise ValueError(Errors.E034.format(path=weights.source, err=err)) from err
        self.table = table
        self.reset_derived()
        self.cache.bind(self._cache_fingerprint())

    def load_vector_table(self, path: Union[str, Path]) -> None:
        """Use a vector table (checked against the model before first use)."""
        self.vectors = VectorTable.from_disk(path)
        self.reset_derived()

    def _vector_table(self) -> Optional[VectorTable]:
        """The vector table, loaded from the setting on first need (to use it, or to save it with the pipeline)."""
        if self.vectors is None and self._vector_table_path:
            self.load_vector_table(self._vector_table_path)
        return self.vectors

    def _ensure_ready(self) -> Derived:
        """The derived state, built here and only here: the weights loaded, the vector table checked
        against the model, the rare-word rule with this model's encoder and counts."""
        if bertram_shim(self.model).pending:  # first use without initialize: the same load
            self._initialize_model()
        if not self.is_loaded:
            raise ValueError(Errors.E154.format(name=self.name))
        if self.cache.bind(self._cache_fingerprint()):
            logger.info("bertram: vector cache emptied: it held another model's vectors, or another subword_share's")
        if self._derived is None:
            self.word_sources.check_paths()
            network = self.network
            vectors = self._vector_table()
            if vectors is not None:
                vectors.check_model(self.cfg["model_id"], encoder_identity(network), f"of '{self.name}'")
                share, model_share = self.subword_share, network.config.subword_share
                if share is not None and share != model_share:  # the table's rows are the model's mix
                    warnings.warn(Warnings.W018.format(name=self.name, share=share, model_share=model_share),
                                  stacklevel=3)
            self._derived = Derived(self.word_sources.finder(network, self.table), word_key_function(network))
        return self._derived

    # -- encoder compatibility -----------------------------------------------------------

    def _check_transformers(self, derived: Derived) -> None:
        """A transformer after this component must read the vectors, in BERTRAM's embedding space
        (checked again only when the pipeline's components change)."""
        if self._nlp is None or not any(proc is self for _, proc in self._nlp.pipeline):
            return
        layout = tuple(id(proc) for _, proc in self._nlp.pipeline)
        if layout != derived.layout:
            check_placement(self._nlp, self, self.name)
            derived.layout = layout
        check_encoders(self._nlp, self, self.network, derived.checked_encoders)

    # -- processing --------------------------------------------------------------------

    def __call__(self, doc: Doc) -> Doc:
        error_handler = self.get_error_handler()
        try:
            self.set_annotations([doc], self.predict([doc]))
            return doc
        except Exception as e:
            error_handler(self.name, self, [doc], e)

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Docs in batches: the rare words of a whole batch share one BERTRAM call."""
        error_handler = self.get_error_handler()
        for docs in util.minibatch(stream, size=batch_size):
            docs = list(docs)
            try:
                self.set_annotations(docs, self.predict(docs))
                yield from docs
            except Exception as e:
                error_handler(self.name, self, docs, e)

    @property
    def finder(self) -> RareWordFinder:
        """The component's rare-word rule with its model's encoder and counts (built on first use)."""
        return self._ensure_ready().finder

    def rare_tokens(self, doc: Doc) -> List[int]:
        """Indices of the tokens of `doc` the component calls rare, in order: its own rule,
        frequencies and encoder, so that an evaluation never needs a second rule."""
        return self.finder.find(doc)

    def contexts_for(self, doc: Doc, word: str, indices: Sequence[int]) -> List[str]:
        """The contexts the component gives BERTRAM for `word` at `indices` of `doc` (`word_sources`)."""
        return self.word_sources.contexts_for(doc, word, indices)

    def explain(self, doc: Doc) -> List[RareDecision]:
        """The rare-word rule's decision and reason for each token (`spacy_bertram rare-words`)."""
        finder = self.finder
        return [finder.explain(token) for token in doc]

    def predict(self, docs: Iterable[Doc]) -> List[Vectors]:
        """Vectors for the rare tokens of each doc, without modifying the docs."""
        if os.getpid() != self._pid:
            check_not_forked_on_gpu(f"'{self.name}'")  # a named error, not CUDA's re-initialisation one
            self._pid = os.getpid()
            limit_torch_threads_in_forked_worker()
        derived = self._ensure_ready()
        self._check_transformers(derived)
        plans: List[List[Tuple[List[int], CacheKey]]] = []
        found: Dict[CacheKey, numpy.ndarray] = {}
        missing: Dict[CacheKey, Tuple[str, List[str]]] = {}
        for doc in docs:
            plan = []
            for word, indices in group_by_word(doc, derived.finder.find(doc), derived.word_key).items():
                row = self.vectors.get(word) if self.vectors is not None else None
                if row is not None:
                    found[(word, "table", "")] = row
                    plan.append((indices, (word, "table", "")))
                    continue
                if not self.infer_missing:
                    continue
                contexts = self.word_sources.contexts_for(doc, word, indices)
                key = cache_key(word, self.word_sources.source, contexts)
                if key not in found and key not in missing:
                    vector = self.cache.get(key)
                    if vector is None:
                        missing[key] = (word, contexts)
                    else:
                        found[key] = vector
                plan.append((indices, key))
            plans.append(plan)
        if missing:
            vectors = self.infer(list(missing.values()))
            for key, vector in zip(missing, vectors):
                found[key] = self.cache.put(key, vector)
        return [{i: found[key] for indices, key in plan for i in indices} for plan in plans]

    def infer(self, items: Sequence[Tuple[str, Sequence[str]]]) -> numpy.ndarray:
        """Run the BERTRAM layer; checks shape and finiteness of what comes back."""
        width = self.network.width
        out = numpy.zeros((len(items), width), dtype="float32")
        for start in range(0, len(items), WORDS_PER_CALL):
            chunk = list(items[start : start + WORDS_PER_CALL])
            Y = self.model.ops.to_numpy(self.model.predict(chunk))
            out[start : start + len(chunk)] = Y
        if not numpy.isfinite(out).all():
            bad = [items[i][0] for i in numpy.flatnonzero(~numpy.isfinite(out).all(axis=1))[:5]]
            raise ValueError(Errors.E155.format(words=bad))
        return out

    def set_annotations(self, docs: Iterable[Doc], vectors: Sequence[Vectors]) -> None:
        for doc, doc_vectors in zip(docs, vectors):
            doc._.set(DOC_EXTENSION, doc_vectors)

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Any = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """No weight update (BERTRAM is trained offline): annotate the predicted docs in place."""
        examples = list(examples)
        validate_examples(examples, "BertramComponent.update")
        docs = [eg.predicted for eg in examples]
        self.set_annotations(docs, self.predict(docs))
        return losses if losses is not None else {}

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        vector_table: Optional[str] = None,
        reload_model: bool = False,
    ) -> None:
        """Load the trained model (the layer's init) and vector table (this one wins over the factory's). A loaded
        pipeline keeps its saved weights: `reload_model` loads model_path over them (a model retrained there)."""
        if nlp is not None:
            self._nlp = nlp
        if reload_model and not bertram_shim(self.model).rearm():
            raise ValueError(Errors.E164.format(name=self.name))
        self._initialize_model()
        if vector_table is not None:
            self.load_vector_table(vector_table)
        self.reset_derived()
        self._ensure_ready()
        self.word_sources.open_stores()
        if self._nlp is not None and any(proc is self for _, proc in self._nlp.pipeline):
            check_placement(self._nlp, self, self.name)

    # -- serialization: the component's parts, written and checked by serialization.py ------

    def _writers(self) -> Dict[str, Writer]:
        """Each part's bytes (None: nothing to save): what the component holds, loading nothing. Weights that
        model_path will replace are not saved: the loaded pipeline is pending as this one is."""
        shim = bertram_shim(self.model)
        return {
            "model": (lambda: None) if shim.pending else self.model.to_bytes,
            "frequencies": lambda: self.table.to_bytes() if self.table is not None else None,
            "cache": lambda: self.cache.to_bytes() if self.save_cache else None,
            "vector_table": lambda: table.to_bytes() if (table := self._vector_table()) is not None else None,
        }

    def _readers(self) -> Dict[str, Reader]:
        return {
            "model": self.model.from_bytes,
            "frequencies": CountTable.from_bytes,
            "cache": self.cache.from_bytes,
            "vector_table": VectorTable.from_bytes,
        }

    def _take_loaded(self, loaded: serialization.Loaded, exclude: Set[str]) -> None:
        """Use what a load read. The model's identity comes with the model only; a saved model without
        counts had none; derived state is stale; a store the settings need must open."""
        cfg, parts = loaded
        if "frequencies" not in exclude:
            self.table = parts.get("frequencies")
        if "vector_table" in parts:
            self.vectors = parts["vector_table"]
        shim = bertram_shim(self.model)
        if "model" in parts:
            saved = cfg or {}
            shim.weights = Weights(saved.get("model_id"), saved.get("model_source"))  # whose weights were read
            if not shim.weights.trained and shim.rearm() and not saved.get(UNTRAINED_KEY):
                # saved untrained: loads a model_path given at load, quietly; a save naming no model says so
                warnings.warn(Warnings.W004.format(name=self.name, model_path=shim.model_path), stacklevel=2)
        if cfg is not None:
            self._take_saved_share(cfg)
        self.reset_derived()
        self.word_sources.open_stores()

    def _saved_share(self) -> Dict[str, Any]:
        """subword_share as saved, beside the config's when the component was built (nothing while both are unset,
        so a save at the defaults keeps the cfg of saves from before the setting)."""
        if self.subword_share is None and self._configured_share is None:
            return {}
        return {SHARE_KEY: self.subword_share, CONFIGURED_SHARE_KEY: self._configured_share}

    def _take_saved_share(self, cfg: Dict[str, Any]) -> None:
        """The saved share, as a loaded setting: unless the config now gives another value than when the component
        was saved (an override at `spacy.load`, an edited config.cfg), which then wins, as a config does."""
        config_unchanged = cfg.get(CONFIGURED_SHARE_KEY) == self._configured_share
        self.subword_share = cfg.get(SHARE_KEY) if config_unchanged else self._configured_share

    def _saved_cfg(self) -> Dict[str, Any]:
        """cfg as saved: the model the weights are, or that they are untrained (nothing, while model_path waits),
        and the subword_share in use."""
        shim = bertram_shim(self.model)
        if shim.pending:
            warnings.warn(Warnings.W014.format(name=self.name, model_path=shim.model_path), stacklevel=3)
            return {**self.cfg, **self._saved_share()}
        return {**self.cfg, **({} if self.is_loaded else {UNTRAINED_KEY: True}), **self._saved_share()}

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return serialization.write_bytes(self._writers(), self._saved_cfg(), exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "BertramComponent":
        exclude = set(exclude)
        loaded = serialization.read_bytes(
            bytes_data, self._readers(), exclude, strings=CFG_STRINGS, unlisted=UNLISTED_NEEDS
        )
        self._take_loaded(loaded, exclude)
        return self

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        path = util.ensure_path(path)
        cfg = {**self._saved_cfg(), **self.word_sources.saved_store(path.resolve().parent)}
        serialization.write_disk(path, self._writers(), cfg, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "BertramComponent":
        path, exclude = util.ensure_path(path), set(exclude)
        loaded = serialization.read_disk(path, self._readers(), exclude, strings=CFG_STRINGS, unlisted=UNLISTED_NEEDS)
        self.word_sources.relocate_store(path.parent, loaded[0])
        self._take_loaded(loaded, exclude)
        return self
