"""The oracle ceiling of a rarified set: each substitute gets the stock embedding of the
word it replaced, through the same injection as BERTRAM's vectors.

A perfect vector for a rare synonym is, at best, what the encoder already has for
the original word. Injecting that (the mean of the original word's wordpiece
embeddings, the encoder's own input-space view of it) shows how much accuracy the
injection path itself can give back. If the oracle recovers little, better vectors
cannot help through that injection; if it recovers much and BERTRAM little, the
vectors are the limit.

The `spacy_bertram_oracle` component sets `doc._.bertram` for the substituted
tokens of the items it is given (`set_items`), looked up by the doc's text.
"""

from __future__ import annotations

from typing import Dict, List, Mapping, Sequence, Tuple

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc

from spacy_bertram.project_support import DOC_EXTENSION, install_extension, word_piece_ids
from ..pipelines import pipeline_transformer

ORACLE_FACTORY = "spacy_bertram_oracle"


class OracleVectors:
    """Sets `doc._.bertram` to the original words' stock embeddings at the substitutes."""

    def __init__(self, name: str = ORACLE_FACTORY) -> None:
        self.name = name
        self._by_text: Dict[str, List[Tuple[int, str, np.ndarray]]] = {}
        install_extension()

    def set_items(self, items: Sequence[Mapping], tokenizer, embeddings: np.ndarray) -> None:
        """Take the rarified items (text, substitutions) and the encoder's input-embedding matrix."""
        table: Dict[str, List[Tuple[int, str, np.ndarray]]] = {}
        for item in items:
            entries = []
            for sub in item["substitutions"]:
                pieces = word_piece_ids(tokenizer, sub["original"])
                vector = embeddings[pieces].mean(axis=0).astype(np.float32)
                entries.append((int(sub["index"]), sub["substitute"], vector))
            table[item["text"]] = entries
        self._by_text = table

    def __call__(self, doc: Doc) -> Doc:
        vectors: Dict[int, np.ndarray] = {}
        for index, substitute, vector in self._by_text.get(doc.text, ()):
            if index < len(doc) and doc[index].text == substitute:
                vectors[index] = vector
                continue
            for token in doc:  # the pipeline tokenized differently: find the word itself
                if token.text == substitute and token.i not in vectors:
                    vectors[token.i] = vector
                    break
        doc._.set(DOC_EXTENSION, vectors)
        return doc


@Language.factory(ORACLE_FACTORY)
def make_oracle_vectors(nlp: Language, name: str) -> OracleVectors:
    return OracleVectors(name)


def add_oracle(nlp: Language, items: Sequence[Mapping]) -> OracleVectors:
    """The oracle component before the transformer, primed with `items`."""
    node = pipeline_transformer(nlp)
    embeddings = node.transformer.get_input_embeddings().weight.detach().cpu().numpy()
    oracle = nlp.add_pipe(ORACLE_FACTORY, before="transformer")
    oracle.set_items(items, node.tokenizer, embeddings)
    return oracle


__all__ = ["ORACLE_FACTORY", "OracleVectors", "add_oracle"]
