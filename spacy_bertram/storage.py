"""A BERTRAM model on disk and in bytes: JSON config + n-gram vocab + safetensors.

A model directory holds `config.json` (including the base encoder's name or
path), `ngrams.json` and `weights.safetensors` with the BERTRAM weights only;
the frozen encoder is referenced, never copied, and nothing is pickled. A
model made by `train` also holds `counts.tsv`, the word counts of its training
corpus, from which the `bertram` component tells rare words.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Dict, Mapping, Optional

import srsly
import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import load_file, save, save_file

from .config import BertramConfig
from .encoder import load_encoder
from .errors import Errors
from .fileio import atomic_path, write_json_atomic
from .inputs import NgramVocab
from .network import BertramNetwork
from .frequencies import COUNTS_FILE, write_counts
from .types import PathLike

CONFIG_FILE = "config.json"
NGRAMS_FILE = "ngrams.json"
WEIGHTS_FILE = "weights.safetensors"
MODEL_FILES = (CONFIG_FILE, NGRAMS_FILE, WEIGHTS_FILE)



def create_bertram(
    base_model: str = "default",
    ngram_vocab: Optional[NgramVocab] = None,
    **settings,
) -> BertramNetwork:
    """A fresh (untrained) network for `base_model` with the given config settings."""
    config = BertramConfig(base_model=base_model, **settings)
    encoder, tokenizer = load_encoder(config.base_model)
    return BertramNetwork(config, ngram_vocab or NgramVocab(), encoder, tokenizer)


def _cpu_state(network: BertramNetwork) -> Dict[str, torch.Tensor]:
    return {k: v.detach().cpu().contiguous() for k, v in network.bertram_state_dict().items()}


def save_bertram(network: BertramNetwork, path: PathLike, counts: Optional[Mapping[str, int]] = None) -> Path:
    """Write the model directory atomically: a crash leaves the old one intact.

    `counts` (word -> count in the training corpus) go to counts.tsv.
    """
    target = Path(path)
    with atomic_path(target, is_dir=True) as tmp:
        write_json_atomic(tmp / CONFIG_FILE, network.config.to_dict())
        network.ngram_vocab.to_disk(tmp / NGRAMS_FILE)
        save_file(_cpu_state(network), str(tmp / WEIGHTS_FILE), metadata={"format": "spacy-bertram"})
        if counts is not None:
            write_counts(tmp / COUNTS_FILE, counts)
    return target


def _load_weights(network: BertramNetwork, state: Dict[str, torch.Tensor], source: str) -> None:
    expected = network.bertram_state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ValueError(Errors.E041.format(source=source, missing=missing[:5], unexpected=unexpected[:5]))
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            raise ValueError(
                Errors.E042.format(key=key, source=source, shape=tuple(tensor.shape),
                                   expected=tuple(expected[key].shape))
            )
    network.load_state_dict(state, strict=False)


def load_bertram(
    path: PathLike, base_model: Optional[str] = None, device: Optional[str] = None
) -> BertramNetwork:
    """Load a model directory; `base_model` overrides the recorded encoder location.

    `device` (None: the CPU) is where the network and the encoder copy it reads go.
    """
    directory = Path(path)
    if not directory.is_dir():
        raise ValueError(Errors.E043.format(directory=str(directory)))
    missing = [name for name in MODEL_FILES if not (directory / name).is_file()]
    if missing:
        raise ValueError(Errors.E044.format(directory=str(directory), missing=", ".join(missing)))
    try:  # each reader names its file and the offending key
        config = BertramConfig.from_disk(directory / CONFIG_FILE)
        ngrams = NgramVocab.from_disk(directory / NGRAMS_FILE)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(Errors.E045.format(err=err)) from err
    if base_model is not None:
        config.base_model = base_model
    encoder, tokenizer = load_encoder(config.base_model)
    network = BertramNetwork(config, ngrams, encoder, tokenizer)
    try:
        state = load_file(str(directory / WEIGHTS_FILE))
    except (SafetensorError, OSError) as err:
        raise ValueError(Errors.E046.format(path=str(directory / WEIGHTS_FILE), err=err)) from err
    _load_weights(network, state, str(directory / WEIGHTS_FILE))
    if device is not None:
        network.to(device)
    return network


def network_to_bytes(network: BertramNetwork) -> bytes:
    return srsly.msgpack_dumps(
        {
            "config": network.config.to_dict(),
            "ngrams": network.ngram_vocab.to_dict(),
            "weights": save(_cpu_state(network)),
        }
    )


def network_from_bytes(
    network: Optional[BertramNetwork], data: bytes, device: Optional[torch.device] = None
) -> BertramNetwork:
    """Restore from bytes, rebuilding the network when config or n-grams differ (or there
    is none yet: a layer whose model_path was never loaded)."""
    try:
        msg = srsly.msgpack_loads(data)
        if not isinstance(msg, dict) or not {"config", "ngrams", "weights"} <= set(msg):
            raise ValueError(Errors.E047)
        config = BertramConfig.from_dict(msg["config"])
        ngrams = NgramVocab.from_dict(msg["ngrams"])
    except (ValueError, TypeError) as err:  # msgpack's decoding errors are ValueErrors
        raise ValueError(Errors.E048.format(err=err)) from err
    same_shape = network is not None and (
        config.to_dict() == network.config.to_dict() and ngrams.to_dict() == network.ngram_vocab.to_dict()
    )
    if not same_shape:
        if network is not None and config.base_model == network.config.base_model:
            encoder, tokenizer = network.encoder, network.tokenizer
        else:
            encoder, tokenizer = load_encoder(config.base_model)
        network = BertramNetwork(config, ngrams, encoder, tokenizer)
    try:
        state = load_safetensors_bytes(msg["weights"])
    except (SafetensorError, TypeError, ValueError) as err:
        raise ValueError(Errors.E049.format(err=err)) from err
    _load_weights(network, state, "serialized bytes")
    if device is not None:
        network.to(device)
    return network


def model_fingerprint(path: PathLike) -> str:
    """Content hash of a BERTRAM model directory: cache entries are valid for this model only."""
    digest = hashlib.blake2b(digest_size=16)
    for name in MODEL_FILES:
        with open(Path(path) / name, "rb") as file_:
            for block in iter(lambda: file_.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
