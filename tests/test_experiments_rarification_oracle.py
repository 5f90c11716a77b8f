"""bertram_experiments/rarification/oracle.py: the original words' stock embeddings at the substitutes."""

from __future__ import annotations

import numpy as np

from spacy_bertram.model.encoder import word_piece_ids


def test_the_oracle_puts_the_original_words_embedding_at_each_substitute(trained):
    from bertram_experiments.rarification.oracle import add_oracle
    from bertram_experiments.pipelines import load_textcat, pipeline_transformer

    nlp = load_textcat(trained["model"], injection="slash")
    items = [
        {"text": "the kumquat was good", "substitutions": [{"index": 1, "original": "lemon", "substitute": "kumquat"}]},
        # a stale index (another tokenizer's): the substitute is found by its text
        {"text": "so the dgo was big", "substitutions": [{"index": 1, "original": "dog", "substitute": "dgo"}]},
    ]
    add_oracle(nlp, items)
    assert nlp.pipe_names.index("spacy_bertram_oracle") < nlp.pipe_names.index("transformer")
    node = pipeline_transformer(nlp)
    embeddings = node.transformer.get_input_embeddings().weight.detach().numpy()
    first, second, other = nlp.pipe([items[0]["text"], items[1]["text"], "a text it was not given"])
    lemon = embeddings[word_piece_ids(node.tokenizer, "lemon")].mean(axis=0)
    assert list(first._.bertram) == [1] and np.allclose(first._.bertram[1], lemon)
    assert list(second._.bertram) == [2] and np.allclose(
        second._.bertram[2], embeddings[word_piece_ids(node.tokenizer, "dog")].mean(axis=0)
    )
    assert other._.bertram == {}
    # the injection reads the vectors: the prediction moves away from the stock one
    stock = load_textcat(trained["model"], injection="none")
    assert first.cats != next(stock.pipe([items[0]["text"]])).cats
