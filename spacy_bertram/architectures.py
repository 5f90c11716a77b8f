"""Everything spacy-bertram registers in spaCy's config system, in one place.

Each function here is what a config names; it builds its object from the module that owns it.
spaCy finds them through the entry points in pyproject.toml (`spacy_architectures`, `spacy_misc`,
`spacy_callbacks`, `spacy_context_sources`), so a config can name them before this package is
imported. The factory `bertram` is registered with its component (`pipeline/component.py`), as
spaCy's own factories are.

- architectures: `spacy-bertram.Bertram.v1` (the BERTRAM layer), `spacy-bertram.TransformerModel.v1`
  and `spacy-bertram.Tok2VecTransformer.v1` (spacy-transformers' models with the vectors injected);
- misc: `spacy-bertram.RareWords.v1` (the rare-word rule), `spacy-bertram.encoder_path.v1`;
- callbacks: `spacy-bertram.freeze_embeddings.v1`;
- loggers: `spacy-bertram.CheckpointLogger.v1` (the pipeline saved at chosen steps: learning curves);
- context sources: `spacy-bertram.doc_contexts.v1`, `spacy-bertram.store_contexts.v1`,
  `spacy-bertram.dictionary_contexts.v1`, `spacy-bertram.memory_contexts.v1`, `spacy-bertram.chained_contexts.v1`.
"""

from __future__ import annotations

import logging
from typing import Callable, List, Optional, Sequence

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import registry
from spacy_transformers import FullTransformerBatch
from spacy_transformers.layers import split_trf_batch, trfs2arrays
from thinc.api import Model, chain
from thinc.types import Floats2d, Ragged

from .model.encoder import DEFAULT_BASE_MODEL, resolve_base_model
from .checkpoint_logger import LOGGER_NAME as CHECKPOINT_LOGGER, checkpoint_logger
from .injection.frozen_embeddings import FREEZE_CALLBACK, freeze_transformer_embeddings
from .injection.model import BertramTransformerModel
from .model.inputs import check_token_budget
from .model.layers import (
    NETWORK_SETTINGS,
    SHARE_ATTR,
    BertramInput,
    BertramShim,
    convert_inputs,
    convert_outputs,
    forward,
    init,
)
from .model.network import BertramNetwork
from .model.storage import create_bertram
from .pipeline.context_memory import (
    DEFAULT_MAX_PER_WORD,
    DEFAULT_MAX_WORDS,
    DEFAULT_RECOMPUTE_AT,
    MemoryContexts,
)
from .pipeline.context_sources import (
    DEFAULT_DOC_WINDOW,
    ChainedContexts,
    ContextSource,
    DictionaryContexts,
    DocContexts,
    LazyStore,
    StoreContexts,
)
from .rarity.rare_words import RareWordRule
from .types import DEFAULT_INJECTION, DEFAULT_TOKEN_BUDGET

logger = logging.getLogger("spacy_bertram")


# -- architectures ----------------------------------------------------------------------------


@registry.architectures("spacy-bertram.Bertram.v1")
def Bertram_v1(
    base_model: Optional[str] = None,
    mode: Optional[str] = None,
    use_subword_mean: Optional[bool] = None,
    max_seq_length: Optional[int] = None,
    max_contexts: Optional[int] = None,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    model_path: Optional[str] = None,
    int8_encoder: bool = False,
) -> Model[BertramInput, Floats2d]:
    """BERTRAM as a Thinc layer: (word, contexts) pairs in, one vector per word out.

    model_path: the trained BERTRAM directory. It is loaded by the layer's init
    (`model.initialize()`, which the `bertram` component runs), not here: a
    config stays valid without the directory, and a saved pipeline restores
    its weights from its own files without ever reading it (as
    spacy-transformers' `name`). Without model_path the layer is the untrained
    network its settings describe (those unset: BertramConfig's defaults).
    base_model, mode, use_subword_mean, max_seq_length and max_contexts (the
    most contexts the network reads) are read from the trained model (the
    directory or the serialized weights): leave them unset. A value that
    differs from the trained model's is a ValueError naming the setting, never
    silently replaced. token_budget (encoder tokens per call) is this layer's
    own and always wins, as does int8_encoder: on a CPU, run the context
    encoder's linear layers in int8 (dynamic quantization; faster, not exact:
    docs/benchmarks.md measures the drift); a GPU ignores it. Serialisation
    writes safetensors + JSON, never pickles, never the encoder.
    """
    check_token_budget(token_budget, "[components.bertram.model] token_budget")
    values = (base_model, mode, use_subword_mean, max_seq_length, max_contexts)
    requested = {key: value for key, value in zip(NETWORK_SETTINGS, values) if value is not None}
    network: Optional[BertramNetwork] = None
    if not model_path:
        settings = {k: v for k, v in requested.items() if k != "base_model"}
        network = create_bertram(requested.get("base_model", "default"), **settings)
    return Model(
        "bertram",
        forward,
        init=init,
        attrs={"convert_inputs": convert_inputs, "convert_outputs": convert_outputs, SHARE_ATTR: None},
        shims=[BertramShim(network, requested, token_budget, model_path, int8_encoder)],
        dims={"nI": None, "nO": network.width if network is not None else None},
    )


def stock_span_getter() -> Callable:
    """spacy-transformers' `transformer` factory's default spans, read from its default config's get_spans block
    through spaCy's factory meta, so that the window and stride stay theirs."""
    block = Language.get_factory_meta("transformer").default_config["model"]["get_spans"]
    return registry.resolve({"get_spans": block})["get_spans"]


@registry.architectures("spacy-bertram.TransformerModel.v1")
def create_TransformerModel_v1(
    name: str = DEFAULT_BASE_MODEL,
    get_spans: Optional[Callable] = None,
    tokenizer_config: dict = {},
    transformer_config: dict = {},
    mixed_precision: bool = False,
    grad_scaler_config: dict = {},
    injection: str = DEFAULT_INJECTION,
) -> Model[List[Doc], FullTransformerBatch]:
    """`spacy-transformers.TransformerModel.v3` that feeds `doc._.bertram` vectors.

    injection (str): "recentre" (the wordpieces moved so that their mean is the
        vector; no position added, so text costs what it costs stock), "slash"
        (wordpieces, "/", vector), "replace" (vector instead of the wordpieces) or
        "none" (stock model; vectors ignored).
    The other settings are those of TransformerModel.v3, with defaults for what `nlp.add_pipe("transformer",
    config={"model": {"@architectures": ...}})` leaves out (a new architecture replaces the factory's whole
    model block, its get_spans included): name "default" is the embedded MiniLM, BERTRAM's default encoder;
    get_spans is the factory's default (`stock_span_getter`).
    """
    if get_spans is None:
        get_spans = stock_span_getter()
    return BertramTransformerModel(
        resolve_base_model(name),
        get_spans,
        tokenizer_config,
        transformer_config,
        mixed_precision,
        grad_scaler_config,
        injection=injection,
    )


@registry.architectures("spacy-bertram.Tok2VecTransformer.v1")
def create_Tok2VecTransformer_v1(
    name: str,
    get_spans: Callable,
    tokenizer_config: dict,
    pooling: Model[Ragged, Floats2d],
    grad_factor: float = 1.0,
    transformer_config: dict = {},
    mixed_precision: bool = False,
    grad_scaler_config: dict = {},
    injection: str = DEFAULT_INJECTION,
) -> Model[List[Doc], List[Floats2d]]:
    """`spacy-transformers.Tok2VecTransformer.v3` with BERTRAM injection: what `nlp.replace_listeners`
    turns a listener of our transformer into, so the injection setting survives the replacement."""
    transformer = create_TransformerModel_v1(
        name, get_spans, tokenizer_config, transformer_config, mixed_precision, grad_scaler_config, injection
    )
    return chain(transformer, split_trf_batch(), trfs2arrays(pooling, grad_factor))


# -- misc ---------------------------------------------------------------------------------------


@registry.misc("spacy-bertram.RareWords.v1")
def make_rare_word_rule(
    frequencies: str = RareWordRule.frequencies,
    max_zipf: float = RareWordRule.max_zipf,
    alpha_only: bool = RareWordRule.alpha_only,
    min_wordpieces: int = RareWordRule.min_wordpieces,
    min_length: int = RareWordRule.min_length,
    skip_split_pieces: bool = RareWordRule.skip_split_pieces,
) -> RareWordRule:
    """Which tokens are rare to the encoder (`rare_words.RareWordRule`, whose fields hold the defaults)."""
    return RareWordRule(frequencies, max_zipf, alpha_only, min_wordpieces, min_length, skip_split_pieces)


@registry.misc("spacy-bertram.encoder_path.v1")
def encoder_path(name: str = "default") -> str:
    """The encoder's name or path as spacy-transformers' `name` wants it ("default" = MiniLM)."""
    return resolve_base_model(name)


# -- callbacks ----------------------------------------------------------------------------------


@registry.loggers(CHECKPOINT_LOGGER)
def create_checkpoint_logger(steps: List[int], directory: str, progress_bar: bool = False):
    """[training.logger]: spaCy's console logger that also saves the pipeline at `steps`
    (`checkpoint_logger.py`)."""
    return checkpoint_logger(steps, directory, progress_bar)


@registry.callbacks(FREEZE_CALLBACK)
def create_freeze_embeddings() -> Callable[[Language], Language]:
    """[initialize.after_init] callback: freeze the transformer's embedding layer (`frozen_embeddings.py`)."""

    def freeze_embeddings(nlp: Language) -> Language:
        n = freeze_transformer_embeddings(nlp)
        logger.info("froze %d embedding parameter tensors", n)
        return nlp

    return freeze_embeddings


# -- context sources (`pipeline/context_sources.py`) ----------------------------------------------


@registry.context_sources("spacy-bertram.doc_contexts.v1")  # type: ignore[attr-defined]
def doc_contexts(window: int = DEFAULT_DOC_WINDOW, limit: Optional[int] = None) -> DocContexts:
    """The sentences around the word in the doc (token windows of `window` where it has no sentences)."""
    return DocContexts(window, limit)


@registry.context_sources("spacy-bertram.store_contexts.v1")  # type: ignore[attr-defined]
def store_contexts(path: str, limit: Optional[int] = None) -> StoreContexts:
    """Sentences of the word from a context store (`python -m spacy_bertram prepare`)."""
    return StoreContexts(LazyStore(path, "context", "contexts.path"), limit)


@registry.context_sources("spacy-bertram.dictionary_contexts.v1")  # type: ignore[attr-defined]
def dictionary_contexts(path: str, limit: Optional[int] = None) -> DictionaryContexts:
    """The word's definitions from a definition store (`python -m spacy_bertram dictionary`)."""
    return DictionaryContexts(LazyStore(path, "dictionary", "contexts.path"), limit)


@registry.context_sources("spacy-bertram.memory_contexts.v1")  # type: ignore[attr-defined]
def memory_contexts(
    window: int = DEFAULT_DOC_WINDOW,
    limit: Optional[int] = None,
    max_per_word: int = DEFAULT_MAX_PER_WORD,
    max_words: int = DEFAULT_MAX_WORDS,
    recompute_at: Sequence[int] = DEFAULT_RECOMPUTE_AT,
    path: Optional[str] = None,
) -> MemoryContexts:
    """The doc's sentences of the word and those of the docs seen before (`pipeline/context_memory.py`), kept in
    the process or, with `path`, in that SQLite file; never in a saved pipeline."""
    return MemoryContexts(window, limit, max_per_word, max_words, recompute_at, path)


@registry.context_sources("spacy-bertram.chained_contexts.v1")  # type: ignore[attr-defined]
def chained_contexts(*sources: ContextSource) -> ChainedContexts:
    """Sources read in order, each up to its own limit, all up to the component's contexts_per_word."""
    return ChainedContexts(sources)
