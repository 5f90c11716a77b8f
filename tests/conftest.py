"""Shared fixtures and helpers: a tiny BERT built locally (no downloads), the real MiniLM,
a BERTRAM model directory on the tiny BERT and pipelines around it, tiny training runs,
and the `slow` marker (deselect with `-m "not slow"`)."""
from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Dict, Optional, Sequence

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc

from spacy_bertram import NgramVocab, create_bertram, load_bertram, save_bertram
from spacy_bertram.pipeline.vector_table import VectorTable, encoder_identity
from spacy_bertram.rare_words import write_counts
from spacy_bertram.storage import model_fingerprint
from spacy_bertram.training.ota import OTASettings
from spacy_bertram.training.run import train
from spacy_bertram.training.stages import TrainSettings

torch.set_num_threads(max(1, min(2, torch.get_num_threads())))

TINY_WORDS = (
    "the a an of to in and is was it that this he she they we you i on for with as at by "
    "from be are were had has have not but or his her their its one two three some many "
    "cat dog fox bird fish tree house car road city river sea sky sun moon day night "
    "eat ate eats food fruit apple orange lemon sweet sour small big red green yellow "
    "tasty grow grows grew garden farm farmer market sell sold buy bought people like liked "
    "run ran walk walked see saw look looked good bad new old time year man woman child "
    "kum ##qua ##t ##s ##ing ##ed ##er ##ly ##est un ##able re pre ##tion"
).split()


def write_tiny_bert(directory: Path, seed: int = 0, hidden: int = 32, layers: int = 2) -> Path:
    """Save a randomly initialised BertModel + WordPiece tokenizer to `directory`."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list(string.ascii_lowercase) + list(string.digits)
    punct = list(string.punctuation)
    pieces = ["##" + c for c in string.ascii_lowercase + string.digits]
    vocab = []
    for token in specials + punct + chars + pieces + TINY_WORDS:
        if token not in vocab:
            vocab.append(token)
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf8")
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(str(directory))
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=hidden * 2,
        max_position_embeddings=128,
    )
    model = BertModel(config)
    model.save_pretrained(str(directory))
    return directory


@pytest.fixture(scope="session")
def tiny_bert_path(tmp_path_factory) -> str:
    return str(write_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


@pytest.fixture(scope="session")
def minilm_path() -> str:
    from spacy_bertram.encoder import default_base_model_path

    return default_base_model_path()


TINY_TEXT = [
    "the farmer sold a kumquat at the market",
    "she ate a sweet orange and a sour lemon in the garden",
    "the old dog ran down the road to the river",
    "people liked the tasty fruit: \"kumquat\" is a small fruit",
] * 20


def write_tiny_roberta(directory: Path, seed: int = 0, hidden: int = 32) -> Path:
    """A byte-level BPE tokenizer trained on a few sentences + a random RobertaModel."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        TINY_TEXT, vocab_size=400, min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    bpe.save_model(str(directory))
    tokenizer = RobertaTokenizerFast(
        vocab_file=str(directory / "vocab.json"), merges_file=str(directory / "merges.txt")
    )
    tokenizer.save_pretrained(str(directory))
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=hidden * 2, max_position_embeddings=130,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=0, eos_token_id=2,
    )
    RobertaModel(config).save_pretrained(str(directory))
    return directory


@pytest.fixture(scope="session")
def tiny_roberta_path(tmp_path_factory) -> str:
    return str(write_tiny_roberta(tmp_path_factory.mktemp("tiny-roberta")))


# -- BERTRAM models and pipelines on the tiny BERT ------------------------------------------

EXTRA_WORDS = ["kumquat", "kumquats", "tarantula", "zorbing", "quokka"]
TEXT = "The kumquat grows in a garden. A farmer sold one kumquat at the market."


def make_bertram_dir(path: Path, base_model: str, counts: Optional[Dict[str, int]] = None, seed: int = 0) -> str:
    """A BERTRAM model directory on `base_model` (random weights: what matters here is plumbing)."""
    import torch

    torch.manual_seed(seed)
    ngrams = NgramVocab.from_words(TINY_WORDS + EXTRA_WORDS, min_count=1)
    network = create_bertram(base_model, ngrams, max_seq_length=32, max_contexts=8)
    save_bertram(network, path)
    if counts is not None:
        write_counts(path / "counts.tsv", counts)
    return str(path)


def transformer_config(name: str, injection: str = "slash") -> dict:
    return {
        "model": {
            "@architectures": "spacy-bertram.TransformerModel.v1",
            "name": name,
            "injection": injection,
            # The tiny fixture's tokenizer does not know its 128 positions: say so.
            "tokenizer_config": {"use_fast": True, "model_max_length": 128},
            "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": 128, "stride": 96},
        }
    }


def make_nlp(
    bertram_dir: str,
    base_model: str,
    transformer: Optional[str] = None,
    textcat: bool = False,
    sentencizer: bool = False,
    **settings,
) -> spacy.Language:
    nlp = spacy.blank("en")
    if sentencizer:
        nlp.add_pipe("sentencizer")
    config = {"model": {"base_model": base_model, "model_path": bertram_dir}, **settings}
    nlp.add_pipe("bertram", config=config)
    if transformer:
        nlp.add_pipe("transformer", config=transformer_config(transformer))
    if textcat:
        reduce = {f"use_reduce_{k}": k == "mean" for k in ("first", "last", "max", "mean")}
        listener = {
            "@architectures": "spacy-transformers.TransformerListener.v1",
            "grad_factor": 1.0,
            "pooling": {"@layers": "reduce_mean.v1"},
        }
        model = {"@architectures": "spacy.TextCatReduce.v1", "exclusive_classes": True, "tok2vec": listener, **reduce}
        pipe = nlp.add_pipe("textcat", config={"model": model})
        pipe.add_label("POS")
        pipe.add_label("NEG")
    nlp.initialize()
    return nlp


def same_vectors(a: Doc, b: Doc) -> bool:
    return a._.bertram.keys() == b._.bertram.keys() and all(
        numpy.array_equal(a._.bertram[k], b._.bertram[k]) for k in a._.bertram
    )


@pytest.fixture(scope="session")
def bertram_dir(tiny_bert_path, tmp_path_factory) -> str:
    return make_bertram_dir(tmp_path_factory.mktemp("bertram") / "model", tiny_bert_path)


def make_table(bertram_dir: str, words: Sequence[str], path: Path) -> VectorTable:
    """Rows 1.0, 2.0, ... (nothing BERTRAM would infer), tagged for this model and encoder."""
    network = load_bertram(bertram_dir)
    rows = numpy.repeat(numpy.arange(1, len(words) + 1, dtype="float32")[:, None], network.width, axis=1)
    table = VectorTable(list(words), rows, {"model_id": model_fingerprint(bertram_dir),
                                            "encoder": encoder_identity(network)})
    table.to_disk(path)
    return table


# -- tiny training runs ----------------------------------------------------------------------

WORDS = (
    "the cat dog fox bird fish tree house car road city river sea sky sun moon day night apple lemon "
    "garden farm farmer market people time year man woman child kumquats unable grower sweet sour"
).split()
SMALL = dict(mode="add", epochs=(2, 2, 2), batch_words=(8, 8, 8), min_contexts=2, max_contexts=6, pool_contexts=6,
             max_seq_length=24, lr=(1e-2, 1e-2, 1e-2))


def corpus_lines(n_lines: int = 300, seed: int = 0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(9)) for _ in range(n_lines)]


class Killed(Exception):
    pass


def _train(source, out, tiny, **kwargs):
    settings = TrainSettings(**{**SMALL, **kwargs.pop("settings", {})})
    return train(source, out, base_model=tiny, settings=settings, min_count=20, held_out_fraction=0.1,
                 ota=OTASettings(steps=2), progress=False, log=lambda _: None, **kwargs)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: expensive (venvs, `spacy train` subprocesses, n_process=2, "
                                       "baselines trained twice); CI runs them, `-m \"not slow\"` skips them")
