"""The transformer's embedding layer, where BERTRAM's vectors live: finding it, freezing it, measuring its drift.

BERTRAM infers vectors in the pretrained input-embedding space of its encoder. A pipeline whose
transformer fine-tunes that layer moves the wordpieces away from the vectors; freezing it
(`spacy-bertram.freeze_embeddings.v1`, an `[initialize.after_init]` callback) keeps them together.
Thinc's PyTorch shim skips parameters without gradients, so frozen ones never change.
"""

from __future__ import annotations

import logging
from typing import List, Tuple

from spacy.language import Language

from ..model.encoder import resolve_base_model
from ..errors import Errors

logger = logging.getLogger("spacy_bertram")

FREEZE_CALLBACK = "spacy-bertram.freeze_embeddings.v1"


def transformer_models(nlp: Language) -> List[Tuple[str, object]]:
    """(component name, Hugging Face model) for every initialised transformer in `nlp`."""
    found = []
    for name, proc in nlp.components:
        model = getattr(proc, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            if node.attrs.get("has_transformer"):
                try:
                    hf = node.transformer
                except (AttributeError, ValueError, IndexError):
                    continue
                if hf is not None:
                    found.append((name, hf))
    return found


def embedding_parameters(hf_model) -> List[Tuple[str, object]]:
    """The embedding layer's parameters: `model.embeddings` if the model has it
    (word, position and type embeddings and their LayerNorm), else the input embeddings."""
    module = getattr(hf_model, "embeddings", None)
    if module is None:
        base = getattr(hf_model, getattr(hf_model, "base_model_prefix", ""), None)
        module = getattr(base, "embeddings", None)
    if module is None:
        module = hf_model.get_input_embeddings()
    params = list(module.named_parameters())
    word = hf_model.get_input_embeddings().weight
    if not any(p is word for _, p in params):
        params.append(("word_embeddings.weight", word))
    return params


def freeze_transformer_embeddings(nlp: Language) -> int:
    """Set requires_grad False on every transformer's embedding layer; returns how many
    parameters were frozen. Raises if the pipeline has no initialised transformer."""
    models = transformer_models(nlp)
    if not models:
        raise ValueError(Errors.E301)
    n = 0
    for _, hf in models:
        for _, param in embedding_parameters(hf):
            param.requires_grad_(False)
            n += 1
    return n


def embeddings_frozen(nlp: Language) -> bool:
    """True if every transformer's embedding parameters have requires_grad False."""
    models = transformer_models(nlp)
    return bool(models) and all(not p.requires_grad for _, hf in models for _, p in embedding_parameters(hf))


def embedding_drift(nlp: Language, base_model: str) -> float:
    """Largest absolute difference between the pipeline's word embeddings and the
    pretrained encoder's (0.0 when the embedding layer really stayed frozen)."""
    from transformers import AutoModel

    pretrained = AutoModel.from_pretrained(resolve_base_model(base_model)).get_input_embeddings().weight
    drift = 0.0
    for _, hf in transformer_models(nlp):
        weight = hf.get_input_embeddings().weight.detach().cpu()
        if weight.shape != pretrained.shape:
            raise ValueError(Errors.E302.format(shape=tuple(weight.shape), pretrained_shape=tuple(pretrained.shape)))
        drift = max(drift, float((weight - pretrained.detach()).abs().max()))
    return drift
