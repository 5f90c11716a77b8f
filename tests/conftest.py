"""Shared fixtures: a tiny BERT built locally (no downloads) and the real MiniLM."""
from __future__ import annotations

import string
from pathlib import Path

import pytest
import torch

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
