"""The word-similarity runner: files in, Spearman of BERTRAM and subword mean out."""

from __future__ import annotations

import json

import numpy
import pytest
from scipy.stats import spearmanr

from spacy_bertram import create_bertram, save_bertram
from spacy_bertram.model.inputs import NgramVocab
from bertram_experiments.intrinsic.similarity_eval import evaluate_similarity_files

from tests.util import TINY_TEXT

PAIRS = [
    ("fruit", "kumquat", 8.0),
    ("dog", "kumquats", 1.0),
    ("lemon", "oranges", 7.5),
    ("road", "gardener", 2.0),
    ("apple", "sweetest", 5.0),
]


@pytest.fixture(scope="module")
def files(tiny_bert_path, tmp_path_factory):
    root = tmp_path_factory.mktemp("wordsim")
    (root / "pairs.tsv").write_text("word1\tword2\tscore\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in PAIRS))
    contexts = root / "contexts"
    contexts.mkdir()
    for _, rare, _ in PAIRS[:4]:  # the last rare word has no file: form vector
        (contexts / f"{rare}.txt").write_text(f"the farmer sold a {rare} at the market\n\nwe like the {rare} .\n")
    vocab = NgramVocab.from_words([w for line in TINY_TEXT for w in line.split()], min_count=1)
    save_bertram(create_bertram(tiny_bert_path, ngram_vocab=vocab, mode="add", max_seq_length=32), root / "model")
    return root


def test_subword_mean_rho_matches_hand_computed_cosines(files):
    from spacy_bertram import load_bertram

    out = files / "out" / "wordsim.json"
    metrics = evaluate_similarity_files(files / "pairs.tsv", files / "contexts", files / "model", output=out)
    network = load_bertram(files / "model")
    table = network.encoder.get_input_embeddings().weight.detach().numpy()
    tok = network.inputs.tokenizer
    mean = lambda w: table[tok(w, add_special_tokens=False)["input_ids"]].mean(axis=0)  # noqa: E731
    cos = [
        float(numpy.dot(mean(a), mean(b)) / numpy.linalg.norm(mean(a)) / numpy.linalg.norm(mean(b)))
        for a, b, _ in PAIRS
    ]
    expected = spearmanr([s for _, _, s in PAIRS], cos)[0]
    result = metrics["results"]["all"]
    assert result["n"] == 5
    assert result["subword_mean"]["spearman"] == pytest.approx(expected, abs=1e-9)
    assert -1.0 <= result["bertram"]["spearman"] <= 1.0
    assert metrics["rare_words_without_contexts"] == 1
    assert json.loads(out.read_text())["results"]["all"]["n"] == 5
    # "kumquat" (ku ##m ##qua ##t) and the other unknown words are multi-piece; "oranges" may not be
    multi = metrics["results"]["multi_piece"]
    assert multi["n"] == sum(len(tok(b, add_special_tokens=False)["input_ids"]) >= 2 for _, b, _ in PAIRS)


def test_context_store_and_directory_give_the_same_vectors(files, tmp_path):
    from spacy_bertram.training.prepare import prepare

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("".join((files / "contexts" / f"{b}.txt").read_text() for _, b, _ in PAIRS[:4]))
    prepare(corpus, tmp_path / "store", min_count=1, max_contexts=4, rare_max_contexts=4, progress=False)
    from_store = evaluate_similarity_files(files / "pairs.tsv", tmp_path / "store", files / "model")
    from_dir = evaluate_similarity_files(files / "pairs.tsv", files / "contexts", files / "model")
    assert from_store["results"]["all"]["bertram"]["spearman"] == pytest.approx(
        from_dir["results"]["all"]["bertram"]["spearman"], abs=1e-6
    )


def test_bad_inputs_name_what_is_wrong(files, tmp_path):
    one = tmp_path / "one.tsv"
    one.write_text("fruit\tkumquat\t3\n")
    with pytest.raises(ValueError, match=r"\[E382\].*at least two"):
        evaluate_similarity_files(one, files / "contexts", files / "model")
    with pytest.raises(ValueError, match=r"\[E380\] No contexts at"):
        evaluate_similarity_files(files / "pairs.tsv", tmp_path / "missing.sqlite", files / "model")
