"""Where the NER's training signal lands: the listener's gradient on rare tokens against the others.

The `ner` component reads the transformer through a listener; in training, the
gradient of its loss with respect to each token's pooled transformer vector is
what flows back into the encoder. Its norm at a token says how much the NER's
loss depends on that token's representation. On the same tweets and gold
entities, the mean norm at the tokens the `bertram` component calls rare
(where its vectors are injected) is compared with the mean at the other tokens,
for the stock-trained and the bertram-trained pipeline: a ratio that rises with
the vectors says the trained NER leans on the injected positions more.

Measured with dropout off, no optimizer step (nothing is updated) and the full
transition sequence (no oracle cut), on one batch of gold docs at a time.
"""

from __future__ import annotations

from typing import Callable, Dict, List, Sequence

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from thinc.api import Model

from ..errors import Errors
from .predict import bare_copy

#: spacy-transformers' TransformerListener.v1: the listener chained with the pooling to tokens.
LISTENER_LAYER = "transformer-listener>>trfs2arrays"


def capture_output_gradients(model: Model, into: List[np.ndarray]) -> Callable[[], None]:
    """Make `model` append the gradient of its outputs (one array per doc) to `into`; returns the undo."""
    original = model._func

    def forward(layer: Model, X, is_train: bool):
        Y, backprop = original(layer, X, is_train)

        def backprop_and_keep(dY):
            into.extend(layer.ops.to_numpy(d) for d in dY)
            return backprop(dY)

        return Y, backprop_and_keep

    model._func = forward
    return lambda: setattr(model, "_func", original)


def listener_output(tok2vec: Model) -> Model:
    """The layer of the NER's tok2vec that gives one pooled transformer vector per token (List[Floats2d])."""
    for layer in tok2vec.walk():
        if layer.name == LISTENER_LAYER:
            return layer
    raise ValueError(Errors.E422.format(name=tok2vec.name))


def token_gradient_norms(nlp: Language, gold: Sequence[Doc], batch_size: int = 32) -> List[np.ndarray]:
    """Per gold doc, the norm of the NER loss's gradient at every token's listener output."""
    ner = nlp.get_pipe("ner")
    before = [proc for name, proc in nlp.pipeline if name not in ("transformer", "ner")]
    tok2vec = listener_output(ner.model.get_ref("tok2vec"))
    captured: List[np.ndarray] = []
    undo = capture_output_gradients(tok2vec, captured)
    cut = ner.cfg.get("update_with_oracle_cut_size")
    ner.cfg["update_with_oracle_cut_size"] = 0  # whole docs: every token's gradient, no random cut
    norms: List[np.ndarray] = []
    try:
        for start in range(0, len(gold), batch_size):
            docs = [bare_copy(nlp, doc) for doc in gold[start : start + batch_size]]
            for proc in before:  # bertram puts its vectors on the docs the transformer reads
                docs = list(proc.pipe(docs))
            examples = [Example(doc, reference) for doc, reference in zip(docs, gold[start : start + batch_size])]
            captured.clear()
            nlp.get_pipe("transformer").update(examples, drop=0.0, sgd=None)
            ner.update(examples, drop=0.0, sgd=None)
            assert len(captured) == len(docs), "the listener's gradient did not come back for every doc"
            norms.extend(np.linalg.norm(d, axis=1) for d in captured)
    finally:
        undo()
        ner.cfg["update_with_oracle_cut_size"] = cut
    return norms


def rare_token_gradients(
    pipelines: Dict[str, Language], gold: Sequence[Doc], rare: Sequence[Sequence[int]]
) -> Dict[str, Dict[str, float]]:
    """{system: mean gradient norm at rare tokens, at the others, their ratio, the rare tokens' share of the
    summed norms (against their share of the tokens, n_rare / (n_rare + n_other)), the token counts}."""
    out = {}
    for name, nlp in pipelines.items():
        norms = token_gradient_norms(nlp, gold)
        is_rare = [np.isin(np.arange(len(n)), list(r)) for n, r in zip(norms, rare)]
        at_rare = np.concatenate([n[m] for n, m in zip(norms, is_rare)])
        at_other = np.concatenate([n[~m] for n, m in zip(norms, is_rare)])
        mean_rare = float(at_rare.mean()) if len(at_rare) else float("nan")
        mean_other = float(at_other.mean()) if len(at_other) else float("nan")
        total = float(at_rare.sum() + at_other.sum())
        out[name] = {
            "rare": mean_rare,
            "other": mean_other,
            "ratio": mean_rare / mean_other if mean_other else float("nan"),
            "rare_share_of_gradient": float(at_rare.sum()) / total if total else float("nan"),
            "n_rare": int(len(at_rare)),
            "n_other": int(len(at_other)),
        }
    return out


__all__ = ["capture_output_gradients", "listener_output", "rare_token_gradients", "token_gradient_norms"]
