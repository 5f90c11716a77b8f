"""spacy-bertram: BERTRAM embeddings for rare words in spaCy transformer pipelines.

`__all__` is the public API: the 30 names a user of the component may rely on, grouped and described
in docs/api.md; import them from here, `from spacy_bertram import load_bertram`. Everything else is
internal and may change. The repository's own experiments, benchmarks and scripts reach a few more
internals through `spacy_bertram.project_support`, a named list that is no public API either.

The names are imported on first use (PEP 562), not with the package, each from its own module:
`python -m spacy_bertram --help` must not wait for torch and transformers, and `from spacy_bertram
import CountTable` costs what `spacy_bertram.rarity.frequencies` costs. spaCy finds the factory
`bertram` and everything else the configs name through the entry points in pyproject.toml: the
component's module, and `architectures.py`, where every registration lives.
"""

import sys
from importlib import import_module
from typing import Any, Callable, Dict, List, Mapping, Tuple


__version__ = "0.1.0"

if "spacy" in sys.modules:
    # spaCy is loaded already (`import spacy` came first): `spacy.registry.context_sources` costs nothing now,
    # and a user's `@spacy.registry.context_sources(...)` below `import spacy_bertram` finds it.
    import_module(".registries", __name__)


def _lazy_names(module_name: str, exports: Mapping[str, str]) -> Tuple[Callable[[str], Any], Callable[[], List[str]]]:
    """A module's PEP 562 `__getattr__` and `__dir__` over `exports` (name -> "module" or "module:own_name",
    relative to this package): a name is imported from its module on first use, then kept as a global."""

    def get(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module, _, own_name = exports[name].partition(":")
        value = getattr(import_module(module, __name__), own_name or name)
        setattr(sys.modules[module_name], name, value)
        return value

    def names() -> List[str]:
        return sorted({*vars(sys.modules[module_name]), *exports})

    return get, names


#: The public API, in docs/api.md's groups and order (a literal list: static tools read it).
__all__ = [
    # the model
    "BertramConfig",
    "PAPER_SETTINGS",
    "BertramNetwork",
    "create_bertram",
    "load_bertram",
    "save_bertram",
    # the component and the pipeline
    "BertramComponent",
    "make_bertram",
    "DEFAULT_CONFIG",
    "save_pipeline",
    "get_bertram_network",
    "set_bertram_network",
    "VectorCache",
    "VectorTable",
    # the injection into the transformer
    "BertramTransformerModel",
    "INJECTION_MODES",
    # the rare-word rule and the frequency tables
    "RareWordRule",
    "RareWordFinder",
    "CountTable",
    # contexts: the stores, the sources, the dictionary
    "ContextStore",
    "open_context_store",
    "DocContexts",
    "chain_contexts",
    "DefinitionStore",
    # training
    "prepare",
    "train",
    "build_vector_table",
    "TrainSettings",
    "TrainingData",
    "RunOptions",
]

#: public name -> the module (relative to this package) that defines it, in `__all__`'s order.
_EXPORTS: Dict[str, str] = {
    "BertramConfig": ".model.config",
    "PAPER_SETTINGS": ".model.config",
    "BertramNetwork": ".model.network",
    "create_bertram": ".model.storage",
    "load_bertram": ".model.storage",
    "save_bertram": ".model.storage",
    "BertramComponent": ".pipeline.component",
    "make_bertram": ".pipeline.component",
    "DEFAULT_CONFIG": ".pipeline.component",
    "save_pipeline": ".pipeline.pipeline_save",
    "get_bertram_network": ".model.layers",
    "set_bertram_network": ".model.layers",
    "VectorCache": ".pipeline.vector_cache",
    "VectorTable": ".pipeline.vector_table",
    "BertramTransformerModel": ".injection",
    "INJECTION_MODES": ".types",
    "RareWordRule": ".rarity.rare_words",
    "RareWordFinder": ".rarity.rare_words",
    "CountTable": ".rarity.frequencies",
    "ContextStore": ".context_store",
    "open_context_store": ".context_store",
    "DocContexts": ".pipeline.context_sources",
    "chain_contexts": ".pipeline.context_sources",
    "DefinitionStore": ".dictionary.store",
    "prepare": ".training.prepare",
    "train": ".training.run",
    "build_vector_table": ".training.vectors",
    "TrainSettings": ".training.settings",
    "TrainingData": ".training.settings",
    "RunOptions": ".training.settings",
}

__getattr__, __dir__ = _lazy_names(__name__, _EXPORTS)
