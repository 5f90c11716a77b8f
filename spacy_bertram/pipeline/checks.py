"""Does the pipeline around `bertram` use its vectors? Placement and encoder checks.

The `bertram` component only writes `doc._.bertram`; a transformer reads it
only if it runs after `bertram` and its architecture is
`spacy-bertram.TransformerModel.v1` with injection "slash" or "replace".
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
from spacy_transformers.layers.transformer_model import TransformerModel
from thinc.api import Model

from ..injection import BertramTransformerModel
from ..network import BertramNetwork

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
            problems.append(
                f"The '{name}' component comes after '{owner}', whose transformer has already "
                f"encoded the doc when doc._.bertram is set, so the BERTRAM vectors are never "
                f"used. Put '{name}' before it: nlp.add_pipe(\"bertram\", before=\"{owner}\"), or "
                f"list it first in [nlp] pipeline."
            )
        elif not ours:
            problems.append(
                f"'{owner}' runs spacy-transformers' stock TransformerModel, which never reads "
                f"doc._.bertram, so the '{name}' vectors are computed for nothing. Set "
                f"[components.{owner}.model] @architectures = \"spacy-bertram.TransformerModel.v1\" "
                f"with injection = \"slash\" or \"replace\" (injection = \"none\" keeps the stock "
                f"encoding on purpose)."
            )
        elif node.injection != "none":
            return  # an injecting transformer after bertram reads the vectors
    if problems:
        raise ValueError(problems[0])


def check_encoders(nlp: Language, component: Any, network: BertramNetwork, checked: set) -> None:
    """Refuse to feed vectors to a transformer whose embedding space is not BERTRAM's."""
    for _, owner, node in transformer_nodes(nlp, component):
        if node.attrs.get("has_transformer") and id(node) not in checked:
            check_encoder_compatible(network, node.transformer, node.tokenizer, owner)
            checked.add(id(node))


def check_encoder_compatible(network: BertramNetwork, hf_model: Any, tokenizer: Any, where: str) -> None:
    """Raise if a transformer does not share BERTRAM's input-embedding space.

    Checks the embedding width, the wordpiece vocabulary, and that the
    embedding rows agree in direction.
    """
    theirs = hf_model.get_input_embeddings().weight.detach()
    ours = network.embedding_matrix().detach()
    base = network.config.base_model
    hint = (
        f"The BERTRAM model was trained for {base!r}; use that encoder in the '{where}' "
        "component or retrain BERTRAM for this one."
    )
    if theirs.shape[1] != ours.shape[1]:
        raise ValueError(
            f"bertram: vector width {ours.shape[1]} does not match the input embeddings "
            f"of '{where}' (width {theirs.shape[1]}). {hint}"
        )
    if theirs.shape[0] != ours.shape[0] or tokenizer.get_vocab() != network.tokenizer.get_vocab():
        raise ValueError(
            f"bertram: the wordpiece vocabulary of '{where}' ({theirs.shape[0]} rows) differs "
            f"from that of BERTRAM's encoder ({ours.shape[0]} rows). {hint}"
        )
    rows = torch.linspace(0, ours.shape[0] - 1, steps=min(256, ours.shape[0])).long()
    a, b = ours[rows].float().cpu(), theirs[rows].float().cpu()
    agreement = float(torch.nn.functional.cosine_similarity(a, b, dim=1).mean())
    if agreement < MIN_EMBEDDING_AGREEMENT:
        raise ValueError(
            f"bertram: the input embeddings of '{where}' are not those of BERTRAM's encoder "
            f"(mean cosine {agreement:.2f} over sampled rows). {hint}"
        )
