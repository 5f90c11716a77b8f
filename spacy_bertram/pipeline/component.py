"""The `bertram` pipeline component: rare tokens in, BERTRAM vectors on the doc out.

For each doc it finds the tokens rare to the encoder (`rare_words.py`), gathers
their contexts (doc, store, definitions: `word_sources.py`), looks each (word,
contexts) pair up in an LRU cache (`vector_cache.py`), infers the missing vectors
of a batch of docs in one call, and sets `doc._.bertram` = {token index: float32
vector} for `spacy-bertram.TransformerModel.v1`. A `vector_table` word gets its
row. Each word gets one vector per doc; a doc with no rare word gets {}.

The component holds what spaCy's `Pipe` holds (vocab, model, name; `cfg` reads
the layer's record of its weights) and its settings: `word_sources`, the cache,
the vector table, and what it prepares from them and the layer's weights
(`Prepared`: the rare-word finder, the word key). The layer (`layers.py`) holds
the weights, the counts of the model they came from and the subword_share its
forward pass reads.

Weights are trained offline: `update` only annotates the training docs.
`initialize` runs the layer's init, which loads `[components.bertram.model]
model_path` and its counts and records which weights it holds
(`layers.Weights`), loads the vector table, and prepares: the stores, the
table and the pipeline checked once, here, not at each batch. A load prepares
the same way; a first doc without initialize runs `initialize` itself. The
transformers that come after `bertram` load their weights after it, so their
encoders are checked at the first batch that finds them loaded, once. A save
writes the weights, the counts and the model's identity (and the table, the
cache if asked) as checked parts through spaCy's `util.to_disk` /
`util.to_bytes` (`serialization.py` seals and checks them) and loads nothing,
so a loaded pipeline never reads model_path again unless
`initialize(reload_model=True)` asks it to (saved before initialize, it holds
no weights: W014).

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

import inspect
import logging
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Collection, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.training import Example, validate_examples
from spacy.vocab import Vocab
from thinc.api import Config, Model

from ..device import check_not_forked_on_gpu
from ..model.encoder import limit_torch_threads_in_forked_worker, quiet_tokenizers_in_forked_workers
from ..errors import Errors
from ..extension import install_extension
from ..rarity.frequencies import CountTable
from ..model.layers import SHARE_ATTR, Weights, bertram_shim, checked_subword_share, infer_vectors
from ..rarity.rare_words import RareDecision, RareWordFinder, RareWordRule, group_by_word
from ..types import DEFAULT_CONTEXTS, DEFAULT_CONTEXTS_PER_WORD, DOC_EXTENSION, FACTORY
from . import serialization
from .checks import check_encoders, check_placement
from .context_sources import DEFAULT_DOC_WINDOW, ContextSource
from .saved_stack import STACK_KEYS, check_saved_stack, saved_stack
from .serialization import CFG, Reader, Writer
from .vector_cache import DEFAULT_CACHE_SIZE, CacheKey, VectorCache, cache_key
from .vector_table import VectorTable
from .word_sources import WordSources, word_key_function

logger = logging.getLogger("spacy_bertram")

Vectors = Dict[int, numpy.ndarray]
#: The saved cfg's keys that are strings or null.
CFG_STRINGS = ("model_id", "model_source", *STACK_KEYS.values())
#: Keys of the saved cfg: the subword_share in use, and the one the config gave when the component was built.
SHARE_KEY, CONFIGURED_SHARE_KEY = "subword_share", "subword_share_config"

install_extension()


@dataclass
class Prepared:
    """What the component prepares for the weights the layer holds (`BertramComponent._prepare`), with what it was
    prepared from: another weights record (a load, `set_bertram_network`), another rule or context store set on
    `word_sources`, prepares again.

    made_from: the weights record, the rule and the context store path it was prepared for.
    finder: the rare-word rule with the model's encoder and counts.
    word_key: the form of a word that decides its vector and its lookups (lowercased for a model that ignores case).
    encoders_checked: every transformer in the pipeline that reads the vectors was checked against the weights.
    """

    made_from: Tuple[Weights, RareWordRule, Optional[str]]
    finder: RareWordFinder
    word_key: Callable[[str], str]
    encoders_checked: bool = False


#: The factory's settings that `word_sources` holds, and their names there: set on the component, they would be
#: a new attribute that nothing reads.
WORD_SOURCE_SETTINGS = {
    "rare_words": "rule",
    **{name: name for name in ("contexts", "context_store", "dictionary_store", "contexts_per_word", "context_window")},
}


class BertramComponent(Pipe):
    """Sets `doc._.bertram` (token index -> BERTRAM vector) for rare tokens."""

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
        bertram_shim(model)  # a named error for a model that is no BERTRAM layer
        self.vocab = vocab
        self.model = model
        self.name = name
        self.cache = VectorCache(cache_size)
        self.save_cache = save_cache
        self.infer_missing = bool(infer_missing)
        self.vector_table = vector_table  # the factory's table: `initialize` (or the first doc) loads it
        self.vectors: Optional[VectorTable] = None  # the table in use, loaded or read with the pipeline
        self._prepared: Optional[Prepared] = None
        self.subword_share = subword_share
        self._configured_share = self.subword_share  # the config's, which a load compares with the one saved
        self._nlp = nlp
        self._pid = os.getpid()  # a worker forked by nlp.pipe(n_process=...) checks itself at its first batch
        quiet_tokenizers_in_forked_workers()
        install_extension()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in WORD_SOURCE_SETTINGS:
            where = WORD_SOURCE_SETTINGS[name]
            raise AttributeError(
                Errors.E194.format(name=getattr(self, "name", FACTORY), setting=name, word_sources_name=where)
            )
        super().__setattr__(name, value)

    @property
    def cfg(self) -> Dict[str, Any]:
        """The trained model the weights are, as a save names it (None: untrained): read from the layer."""
        weights = bertram_shim(self.model).weights or Weights()
        return {"model_id": weights.model_id, "model_source": weights.source}

    @property
    def subword_share(self) -> Optional[float]:
        """The weight of the subword mean in the vectors inferred (None: the trained model's own): the layer's
        attr, which its forward pass reads; vectors cached at another share are not served (`_vectors_key`)."""
        return self.model.attrs[SHARE_ATTR]

    @subword_share.setter
    def subword_share(self, share: Optional[float]) -> None:
        self.model.attrs[SHARE_ATTR] = checked_subword_share(share, self.name)
        if self._prepared is not None:
            self._check_share()  # the cache and the vector table, for this share

    @property
    def finder(self) -> RareWordFinder:
        """The rare-word rule with the model's encoder and counts, ready to decide (E170 before `initialize`)."""
        if not self._is_prepared():
            raise ValueError(Errors.E170.format(name=self.name))
        return self._prepared.finder

    def _made_from(self) -> Tuple[Weights, RareWordRule, Optional[str]]:
        sources = self.word_sources
        return (bertram_shim(self.model).weights, sources.rule, sources.context_store)

    def _is_prepared(self) -> bool:
        """Prepared for what the component holds now: the same weights record (a new record is new weights, even
        where it compares equal), an equal rule and store path."""
        if self._prepared is None:
            return False
        (weights, rule, store), now = self._prepared.made_from, self._made_from()
        return weights is now[0] and rule == now[1] and store == now[2]

    def _vectors_key(self) -> Optional[str]:
        """What a vector depends on besides its word and contexts: the model and the subword_share."""
        model_id = self.cfg["model_id"]
        return None if model_id is None else f"{model_id} subword_share={self.subword_share!r}"

    def _ready(self) -> Prepared:
        """The prepared state for the weights the layer holds: a first doc without `initialize`, or after the
        weights changed, prepares through the same `initialize`."""
        if not self._is_prepared():
            self.initialize(lambda: [])
        return self._prepared

    def _prepare(self) -> Prepared:
        """Check the weights, the stores, the vector table and the pipeline against each other, once: at
        `initialize`, at a load, and when the subword_share changes. The vector cache is bound to the weights
        and the share (emptied if it held others)."""
        shim = bertram_shim(self.model)
        if self.cfg["model_id"] is None:
            raise ValueError(Errors.E154.format(name=self.name))
        network = shim.network
        self._check_share()
        sources = self.word_sources
        word_key = word_key_function(network)
        sources.open_stores()
        sources.check_casing(word_key)
        prepared = Prepared(self._made_from(), sources.finder(network, shim.counts), word_key)
        if self._in_pipeline():
            check_placement(self._nlp, self, self.name)
        self._check_encoders(prepared)
        self._prepared = prepared
        return prepared

    def _check_share(self) -> None:
        """What depends on the weights and the subword_share: the cache bound to them, the vector table checked."""
        if self.cache.bind(self._vectors_key()):
            logger.info("bertram: vector cache emptied: it held another model's vectors, or another subword_share's")
        if self.vectors is not None:
            network = bertram_shim(self.model).network
            self.vectors.check_network(self.cfg["model_id"], network, self.subword_share, self.name)

    def _in_pipeline(self) -> bool:
        return self._nlp is not None and any(proc is self for _, proc in self._nlp.pipeline)

    def _check_encoders(self, prepared: Prepared) -> None:
        """The transformers after `bertram` against the weights, until every one has loaded its own."""
        if not prepared.encoders_checked and self._in_pipeline():
            prepared.encoders_checked = check_encoders(self._nlp, self, bertram_shim(self.model).network)

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

    def rare_tokens(self, doc: Doc) -> List[int]:
        """Indices of the tokens of `doc` the component calls rare, in order: its own rule,
        frequencies and encoder, so that an evaluation never needs a second rule."""
        return self._ready().finder.find(doc)

    def explain(self, doc: Doc) -> List[RareDecision]:
        """The rare-word rule's decision and reason for each token (`spacy_bertram rare-words`)."""
        finder = self._ready().finder
        return [finder.explain(token) for token in doc]

    def predict(self, docs: Iterable[Doc]) -> List[Vectors]:
        """Vectors for the rare tokens of each doc, without modifying the docs."""
        if os.getpid() != self._pid:  # a forked worker: a named error on a GPU, one torch thread on a CPU
            check_not_forked_on_gpu(f"'{self.name}'")
            limit_torch_threads_in_forked_worker()
            self._pid = os.getpid()
        prepared = self._ready()
        self._check_encoders(prepared)
        finder, word_key = prepared.finder, prepared.word_key
        plans: List[List[Tuple[List[int], CacheKey]]] = []
        found: Dict[CacheKey, numpy.ndarray] = {}
        missing: Dict[CacheKey, Tuple[str, List[str]]] = {}
        for doc in docs:
            plan = []
            for word, indices in group_by_word(doc, finder.find(doc), word_key).items():
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
            vectors = infer_vectors(self.model, list(missing.values()))
            for key, vector in zip(missing, vectors):
                found[key] = self.cache.put(key, vector)
        return [{i: found[key] for indices, key in plan for i in indices} for plan in plans]

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
        """Load the trained model (the layer's init: its weights and counts) and the vector table (this one wins
        over the factory's), and prepare: check them with the rule, the stores and the pipeline here rather than
        at a doc. A loaded pipeline keeps its saved weights: `reload_model` loads model_path over them (a model
        retrained there)."""
        if nlp is not None:
            self._nlp = nlp
        if reload_model and not bertram_shim(self.model).rearm():
            raise ValueError(Errors.E164.format(name=self.name))
        self.model.initialize()
        if vector_table is not None or (self.vectors is None and self.vector_table):
            self.vectors = VectorTable.from_disk(vector_table if vector_table is not None else self.vector_table)
        self._prepare()

    # -- serialization: checked parts (serialization.py) through spaCy's util.to_disk / from_disk ----------

    def _parts(self) -> Tuple[Dict[str, Writer], Dict[str, Reader]]:
        """Each saved part's writer (its bytes; None: nothing to save) and reader, in the order a save writes them.
        Weights that model_path will replace are not saved: the loaded pipeline is pending as this one is."""
        shim = bertram_shim(self.model)

        def table() -> Optional[bytes]:  # saved before initialize: the factory's table all the same
            if self.vectors is None and self.vector_table:
                return VectorTable.from_disk(self.vector_table).to_bytes()
            return self.vectors.to_bytes() if self.vectors is not None else None

        writers: Dict[str, Writer] = {
            "model": (lambda: None) if shim.pending else self.model.to_bytes,
            "frequencies": lambda: shim.counts.to_bytes() if shim.counts is not None else None,
            "cache": lambda: self.cache.to_bytes() if self.save_cache else None,
            "vector_table": table,
        }
        readers: Dict[str, Reader] = {
            "model": self.model.from_bytes,
            "frequencies": CountTable.from_bytes,
            "cache": self.cache.from_bytes,
            "vector_table": VectorTable.from_bytes,
        }
        return writers, readers

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        exclude, (writers, _) = set(exclude), self._parts()
        sealed = serialization.seal(writers, self._saved_cfg(), exclude)
        return util.to_bytes({name: partial(sealed.__getitem__, name) for name in sealed}, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "BertramComponent":
        exclude, found = set(exclude), {}
        _, readers = self._parts()
        serialization.unpack(bytes_data, {name: partial(found.__setitem__, name) for name in [CFG, *readers]}, exclude)
        where = "the serialized component's {!r}".format
        cfg, values = serialization.read_parts(found.get, readers, exclude, where, strings=CFG_STRINGS)
        check_saved_stack(cfg, f"The serialized component {self.name!r}")
        self._restore(cfg, values, exclude)
        return self

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple(), overwrite: bool = False) -> None:
        """The parts into the directory `path` (`serialization.staged_parts`); a file at a part's name that no
        save of a component wrote is refused unless `overwrite`, and a file at `path` always is."""
        path, exclude = util.ensure_path(path), set(exclude)
        writers, _ = self._parts()
        serialization.check_parts_target(path, [*writers, CFG], f"{self.name}.to_disk", overwrite)
        cfg = {**self._saved_cfg(), **self.word_sources.saved_store(path.resolve().parent)}
        sealed = serialization.seal(writers, cfg, exclude)
        with serialization.staged_parts(path, [*writers, CFG], exclude) as stage:
            util.to_disk(path, {name: partial(stage, data=data) for name, data in sealed.items()}, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "BertramComponent":
        path, exclude, found = util.ensure_path(path), set(exclude), {}
        _, readers = self._parts()
        util.from_disk(path, {name: partial(serialization.read_file, found) for name in [CFG, *readers]}, exclude)
        cfg, values = serialization.read_parts(
            found.get,
            readers,
            exclude,
            lambda name: repr(str(path / name)),
            strings=CFG_STRINGS,
        )
        check_saved_stack(cfg, f"The pipeline at {str(path.parent)!r}")
        self.word_sources.relocate_store(path.parent, cfg)
        self._restore(cfg, values, exclude)
        return self

    def _saved_cfg(self) -> Dict[str, Any]:
        """The cfg a save records: the layer's weights, the subword_share in use beside the config's, the stack."""
        shares = {SHARE_KEY: self.subword_share, CONFIGURED_SHARE_KEY: self._configured_share}
        return {**bertram_shim(self.model).saved_cfg(self.name), **shares, **saved_stack()}

    def _restore(self, cfg: Optional[Dict[str, Any]], values: Dict[str, Any], exclude: Collection[str]) -> None:
        """Take what a load read, and prepare for it (the stores opened, the table checked): a save that holds
        weights is ready to run; one saved before initialize loads model_path at `initialize` or its first doc.
        The saved share is a loaded setting, unless the config now gives another value than when the component
        was saved (an override at `spacy.load`, an edited config.cfg), which then wins, as a config does."""
        bertram_shim(self.model).restore(cfg, values, exclude, self.name)
        self.vectors = values.get("vector_table", self.vectors)
        self._prepared = None
        if cfg is not None:
            unchanged = cfg.get(CONFIGURED_SHARE_KEY) == self._configured_share
            self.subword_share = cfg.get(SHARE_KEY) if unchanged else self._configured_share
        if bertram_shim(self.model).pending or self.cfg["model_id"] is None:
            self.word_sources.open_stores()
        else:
            self._prepare()


def _keyword_defaults() -> Dict[str, Any]:
    """The component's settings at their defaults, as its constructor states them (the one place they are)."""
    parameters = inspect.signature(BertramComponent.__init__).parameters.values()
    return {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in ("name", "nlp")}


#: The factory's default config: the constructor's defaults, the layer and the rule (their registered functions'
#: defaults, which spaCy fills: RareWordRule's fields for the rule).
DEFAULT_CONFIG = Config(
    {
        "bertram": {
            **_keyword_defaults(),
            "model": {"@architectures": "spacy-bertram.Bertram.v1"},
            "rare_words": {"@misc": "spacy-bertram.RareWords.v1"},
        }
    }
)


@Language.factory(
    FACTORY,
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
    vector_table: Optional[str],
    infer_missing: bool,
    dictionary_store: Optional[str],
    subword_share: Optional[float],
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
        nlp.vocab,
        model,
        rare_words,
        name=name,
        nlp=nlp,
        contexts=contexts,
        context_store=context_store,
        contexts_per_word=contexts_per_word,
        context_window=context_window,
        cache_size=cache_size,
        save_cache=save_cache,
        vector_table=vector_table,
        infer_missing=infer_missing,
        dictionary_store=dictionary_store,
        subword_share=subword_share,
    )
