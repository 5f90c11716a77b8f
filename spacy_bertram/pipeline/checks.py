"""Does the pipeline around `bertram` use its vectors? Placement and encoder checks.

The `bertram` component only writes `doc._.bertram`; a transformer reads it
only if it runs after `bertram` and its architecture is
`spacy-bertram.TransformerModel.v1` with injection "recentre", "slash" or "replace".
Anything else computes vectors for nothing, so it is an error naming the fix
(injection = "none" is the explicit way to keep the stock encoding). A
pipeline without any transformer is fine: `doc._.bertram` is then the product.

The vectors must also live in the transformer's own input-embedding space:
same width, same wordpiece vocabulary, and embedding rows that point the same
way (fine-tuning keeps them close, an unrelated model of the same shape does not).
"""

from __future__ import annotations

from typing import Any, List, Tuple

import torch
from spacy.language import Language
from spacy_transformers import TransformerModel
from thinc.api import Model

from ..errors import Errors
from ..injection import BertramTransformerModel
from ..model.network import BertramNetwork

#: Mean cosine between sampled embedding rows of BERTRAM's encoder and the
#: pipeline transformer's below which they are different embedding spaces
#: (fine-tuning keeps it near 1; an unrelated model gives about 0).
MIN_EMBEDDING_AGREEMENT = 0.5


def transformer_nodes(nlp: Language, skip: Any) -> List[Tuple[int, str, Model]]:
    """(pipeline position, component name, transformer node) of every transformer model."""
    found = []
    for position, (name, proc) in enumerate(nlp.pipeline):
        model = getattr(proc, "model", None)
        if proc is skip or not isinstance(model, Model):
            continue
        found.extend((position, name, node) for node in model.walk() if isinstance(node, TransformerModel))
    return found


def check_placement(nlp: Language, component: Any, name: str) -> None:
    """Raise unless a transformer after `component` injects its vectors (or there is no transformer)."""
    position = next(i for i, (_, proc) in enumerate(nlp.pipeline) if proc is component)
    problems: List[str] = []
    for index, owner, node in transformer_nodes(nlp, component):
        ours = isinstance(node, BertramTransformerModel)
        if index < position:
            problems.append(Errors.E137.format(name=name, owner=owner))
        elif not ours:
            problems.append(Errors.E138.format(name=name, owner=owner))
        elif node.injection != "none":
            return  # an injecting transformer after bertram reads the vectors
    if problems:
        raise ValueError(problems[0])


def check_encoders(nlp: Language, component: Any, network: BertramNetwork) -> bool:
    """Refuse to feed vectors to a transformer whose embedding space is not BERTRAM's. False while a transformer
    has not loaded its weights yet (spaCy initializes and loads the components in order, and `bertram` comes
    first): the component checks again at its first batch."""
    loaded = True
    for _, owner, node in transformer_nodes(nlp, component):
        if node.attrs.get("has_transformer"):
            check_encoder_compatible(network, node.transformer, node.tokenizer, owner)
        else:
            loaded = False
    return loaded


def check_encoder_compatible(network: BertramNetwork, hf_model: Any, tokenizer: Any, where: str) -> None:
    """Raise if a transformer does not share BERTRAM's input-embedding space.

    Checks the embedding width, the wordpiece vocabulary, and that the
    embedding rows agree in direction.
    """
    theirs = hf_model.get_input_embeddings().weight.detach()
    ours = network.embedding_matrix().detach()
    base = network.config.base_model
    if theirs.shape[1] != ours.shape[1]:
        raise ValueError(Errors.E101.format(width=ours.shape[1], where=where, their_width=theirs.shape[1], base=base))
    if theirs.shape[0] != ours.shape[0] or tokenizer.get_vocab() != network.tokenizer.get_vocab():
        raise ValueError(Errors.E102.format(where=where, their_rows=theirs.shape[0], rows=ours.shape[0], base=base))
    rows = torch.linspace(0, ours.shape[0] - 1, steps=min(256, ours.shape[0])).long()
    a, b = ours[rows].float().cpu(), theirs[rows].float().cpu()
    agreement = float(torch.nn.functional.cosine_similarity(a, b, dim=1).mean())
    if agreement < MIN_EMBEDDING_AGREEMENT:
        raise ValueError(Errors.E103.format(where=where, agreement=agreement, base=base))
