"""The batch the injection makes once is the stock forward's batch: wordpieces, strings, lengths, alignment.

Held to spacy-transformers' own `TransformerModel.v3` (built through its registered architecture, read
through its public output), for WordPiece and byte-level BPE tokenizers, strided spans that share
tokens, texts with runs of whitespace, accents, emoji and empty docs, and truncation.
"""

from typing import List

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy_transformers.data_classes import WordpieceBatch
from thinc.api import Ragged

from spacy_bertram.injection.wordpieces import align_by_offsets, stock_inputs, tokenize, truncate_columns

TEXTS = [
    "Kumquats grow  here.",
    "A quokka's day   ends",
    "",
    "  leading spaces and trailing ones  ",
    "über naïve café 東京 and an emoji 😀 at the end",
    "don't stop-me now!! (said the farmer) -- twice",
    "tab\there\nnew line",
    " ".join(f"w{i}" for i in range(40)),
]


def stock_model(path: str, window: int, stride: int, max_length: int = 0) -> spacy.Language:
    tokenizer_config = {"use_fast": True}
    if max_length:
        tokenizer_config["model_max_length"] = max_length
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "transformer",
        config={
            "model": {
                "@architectures": "spacy-transformers.TransformerModel.v3",
                "name": path,
                "tokenizer_config": tokenizer_config,
                "get_spans": {
                    "@span_getters": "spacy-transformers.strided_spans.v1",
                    "window": window,
                    "stride": stride,
                },
            }
        },
    )
    nlp.initialize()
    return nlp


def docs_of(nlp: spacy.Language) -> List[Doc]:
    return [nlp.make_doc(text) for text in TEXTS]


@pytest.mark.parametrize("encoder", ["bert", "roberta"])
@pytest.mark.parametrize("window,stride,max_length", [(24, 16, 0), (5, 3, 0), (4, 4, 0), (12, 8, 7)])
def test_the_batch_is_the_stock_forwards(encoder, window, stride, max_length, tiny_bert_path, tiny_roberta_path):
    path = tiny_bert_path if encoder == "bert" else tiny_roberta_path
    nlp = stock_model(path, window, stride, max_length)
    model = nlp.get_pipe("transformer").model
    docs = docs_of(nlp)
    stock = model.predict(docs)
    ours = stock_inputs(model, docs)
    assert ours.nested_spans == stock.spans
    assert ours.wordpieces.strings == stock.wordpieces.strings
    assert ours.wordpieces.lengths == stock.wordpieces.lengths
    for name in ("input_ids", "attention_mask"):
        numpy.testing.assert_array_equal(getattr(ours.wordpieces, name), getattr(stock.wordpieces, name))
        assert getattr(ours.wordpieces, name).dtype == getattr(stock.wordpieces, name).dtype
    assert (ours.wordpieces.token_type_ids is None) == (stock.wordpieces.token_type_ids is None)
    numpy.testing.assert_array_equal(ours.align.lengths, stock.align.lengths)
    numpy.testing.assert_array_equal(ours.align.data.ravel(), stock.align.data.ravel())
    assert int(ours.align.lengths.sum()) > 0
    if max_length:
        assert ours.wordpieces.input_ids.shape[1] == max_length  # the truncation ran


def test_a_token_takes_the_pieces_over_its_characters_and_the_one_after():
    """Hand-made offsets: a piece over a token's following space goes to that token; special pieces (0, 0) to
    none; a piece over two tokens to both; a token in two spans is one row with both spans' pieces."""
    nlp = spacy.blank("en")
    doc = nlp.make_doc("ab cd")  # tokens: ab (chars 0-1), cd (chars 3-4)
    spans = [doc[0:2], doc[1:2]]
    offsets = numpy.array(
        [
            [[0, 0], [0, 1], [1, 3], [2, 4], [0, 0]],  # special, "a", "b ", " c", special
            [[0, 0], [0, 2], [0, 0], [0, 0], [0, 0]],  # special, "cd" (span offsets), padding
        ]
    )
    align = align_by_offsets(spans, offsets)
    assert align.lengths.tolist() == [3, 2]
    assert align.data.ravel().tolist() == [1, 2, 3, 3, 6]  # row 1's piece 1 is flat index 5 + 1
    assert align_by_offsets([], numpy.zeros((0, 0, 2), dtype="int64")).lengths.tolist() == []


def test_truncation_drops_the_last_columns_and_their_alignment():
    wordpieces = WordpieceBatch(
        strings=[["a", "b", "c", "d"], ["e", "f", "[PAD]", "[PAD]"]],
        input_ids=numpy.arange(8).reshape(2, 4),
        attention_mask=numpy.array([[1, 1, 1, 1], [1, 1, 0, 0]], dtype="float32"),
        lengths=[4, 2],
        token_type_ids=None,
    )
    align = Ragged(numpy.array([0, 1, 2, 3, 4, 5], dtype="i"), numpy.array([2, 2, 2], dtype="i"))
    cut, cut_align = truncate_columns(wordpieces, align, 3)
    assert cut.strings == [["a", "b", "c"], ["e", "f", "[PAD]"]] and cut.lengths == [3, 3]
    numpy.testing.assert_array_equal(cut.input_ids, [[0, 1, 2], [4, 5, 6]])
    assert cut_align.lengths.tolist() == [2, 1, 2] and cut_align.data.ravel().tolist() == [0, 1, 2, 3, 4]
    same, same_align = truncate_columns(wordpieces, align, 5)
    assert same is wordpieces and same_align is align


def test_a_slow_tokenizer_is_refused_with_what_to_do():
    class Slow:
        is_fast = False

    with pytest.raises(ValueError, match=r"\[E190\] .*Slow.*use_fast"):
        tokenize(Slow(), ["a text"])
