"""spacy-bertram: BERTRAM embeddings for rare words in spaCy transformer pipelines."""
from .config import BertramConfig
from .encoder import DEFAULT_BASE_MODEL, load_encoder, resolve_base_model
from . import injection  # noqa: F401  (registers TransformerModel.v1 and doc._.bertram)
from .pipeline.component import BertramComponent, make_bertram
from .layers import Bertram_v1, get_bertram_network, set_bertram_network
from .network import BertramNetwork
from .ngrams import NgramVocab
from .storage import create_bertram, load_bertram, save_bertram

__version__ = "0.1.0"

__all__ = [
    "BertramComponent",
    "BertramConfig",
    "BertramNetwork",
    "Bertram_v1",
    "DEFAULT_BASE_MODEL",
    "NgramVocab",
    "create_bertram",
    "get_bertram_network",
    "load_bertram",
    "load_encoder",
    "make_bertram",
    "resolve_base_model",
    "save_bertram",
    "set_bertram_network",
]
