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
