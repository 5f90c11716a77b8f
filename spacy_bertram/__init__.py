"""spacy-bertram: BERTRAM embeddings for rare words in spaCy transformer pipelines.

The names below are imported on first use (PEP 562), not with the package:
`python -m spacy_bertram --help` must not wait for torch and transformers.
spaCy finds the factory `bertram` and everything else the configs name through
the entry points in pyproject.toml: the component's module, and `architectures.py`,
where every registration lives.
"""
import sys
from importlib import import_module
from typing import Any, Dict, List


__version__ = "0.1.0"

if "spacy" in sys.modules:
    # spaCy is loaded already (`import spacy` came first): `spacy.registry.context_sources` costs nothing now,
    # and a user's `@spacy.registry.context_sources(...)` below `import spacy_bertram` finds it.
    import_module(".registries", __name__)

#: public name -> the module (relative to this package) that defines it
_EXPORTS: Dict[str, str] = {
    "BertramComponent": ".pipeline.component",
    "BertramConfig": ".config",
    "BertramNetwork": ".network",
    "Bertram_v1": ".architectures",
    "DEFAULT_BASE_MODEL": ".encoder",
    "NgramVocab": ".inputs",
    "create_bertram": ".storage",
    "get_bertram_network": ".layers",
    "load_bertram": ".storage",
    "load_encoder": ".encoder",
    "make_bertram": ".pipeline.component",
    "resolve_base_model": ".encoder",
    "save_bertram": ".storage",
    "save_pipeline": ".pipeline.serialization",
    "set_bertram_network": ".layers",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "injection":  # the old eager import made `spacy_bertram.injection` an attribute
        return import_module(".injection", __name__)
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted([*globals(), *_EXPORTS])
