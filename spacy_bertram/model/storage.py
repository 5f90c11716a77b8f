"""A BERTRAM model on disk and in bytes: JSON config + n-gram vocab + safetensors.

A model directory holds `config.json` (including the base encoder's name or
path), `ngrams.json` and `weights.safetensors` with the BERTRAM weights only;
the frozen encoder is referenced, never copied, and nothing is pickled. A
model made by `train` also holds `counts.tsv`, the word counts of its training
corpus, from which the `bertram` component tells rare words.

`digests.json`, written last, holds the SHA-256 of each of those files, and the
weights file records the config.json fields its weights depend on beyond their
shapes (`RECORDED_FIELDS`): loading refuses a damaged or edited file by name,
and non-finite weights by tensor, instead of serving wrong vectors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

import srsly
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save, save_file

from .config import MODE_TRAITS, PAPER_SETTINGS, BertramConfig, check_read_layer
from .encoder import layer_count, load_encoder
from ..errors import Errors
from ..fileio import atomic_directory, check_output_dir, write_json_atomic
from .inputs import NgramVocab
from .network import BertramNetwork
from .reference import (
    REFERENCE_MAX_CONTEXTS,
    check_output_size,
    checkpoint_encoder,
    encoder_differs,
    is_reference_checkpoint,
    read_reference_settings,
    read_reference_vocab,
    read_reference_weights,
    reference_state,
    split_weights,
)
from ..rarity.frequencies import COUNTS_FILE, CountTable, write_counts
from .files import (
    DIGEST_ALGORITHM,
    DIGESTED_FILES,
    DIGESTS_FILE,
    MODEL_DIR_ENTRIES,
    check_model_dir,
    model_fingerprint,  # noqa: F401  (the callers that import it from here)
    sha256_of,
    verify_digests,
)
from ..types import MODEL_FILES, PathLike

CONFIG_FILE, NGRAMS_FILE, WEIGHTS_FILE = MODEL_FILES
#: config.json fields the weights depend on beyond their shapes (every mode has weights of the
#: same shapes; another layer's states fit the same projection), recorded in the weights file's
#: metadata: an edited config.json is refused even where digests.json is gone. One metadata key
#: (RECORDED_KEY, a JSON object): safetensors writes several in no fixed order, and the same
#: network must give the same bytes (its model_fingerprint). A weights file without it is refused.
RECORDED_KEY = "spacy-bertram"
RECORDED_FIELDS = (
    "mode",
    "use_subword_mean",
    "read_layer",
    "encoder_embedding_width",
    "encoder_hidden_width",
    "encoder_vocab_size",
)


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


def _weights_metadata(config: BertramConfig) -> Dict[str, str]:
    settings = config.to_dict()
    return {RECORDED_KEY: json.dumps({key: settings[key] for key in RECORDED_FIELDS}, sort_keys=True)}


def _recorded_fields(metadata: Mapping[str, str], path: Path) -> Dict[str, Any]:
    """The config fields recorded with the weights (a file without them is refused)."""
    if RECORDED_KEY not in metadata:
        raise ValueError(Errors.E069.format(path=str(path), key=RECORDED_KEY, fields=", ".join(RECORDED_FIELDS)))
    try:
        recorded = json.loads(metadata[RECORDED_KEY])
    except ValueError:
        recorded = None
    if not isinstance(recorded, dict) or not set(RECORDED_FIELDS) <= set(recorded):
        err = Errors.E204.format(
            fields=f"the config fields {', '.join(RECORDED_FIELDS)} (as its {RECORDED_KEY!r} metadata)"
        )
        raise ValueError(Errors.E046.format(path=str(path), err=err))
    return recorded


def save_bertram(
    network: BertramNetwork, path: PathLike, counts: Optional[Mapping[str, int]] = None, *, force: bool = False
) -> Path:
    """Write the model directory atomically: a crash leaves the old one intact.

    `counts` (word -> count in the training corpus) go to counts.tsv. digests.json is
    written last, from the files as written, so that loading detects a file damaged later.
    A directory holding model files this package did not save (by their digests), or only
    others' files, is refused unless `force`; either way only the model's files are replaced,
    and every other file in the directory stays.
    """
    check_model_dir(path, force=force)
    return write_model_dir(network, path, counts)


def write_model_dir(network: BertramNetwork, path: PathLike, counts: Optional[Mapping[str, int]] = None) -> Path:
    """`save_bertram`'s writing, for a command that checked its model directories with the rest of its output
    (`model_files.check_model_dir`) before its work: train's model and stages, a checkpoint's model."""
    target = Path(path)
    with atomic_directory(target, MODEL_DIR_ENTRIES, overwrite=True) as tmp:
        write_json_atomic(tmp / CONFIG_FILE, network.config.to_dict())
        network.ngram_vocab.to_disk(tmp / NGRAMS_FILE)
        save_file(_cpu_state(network), str(tmp / WEIGHTS_FILE), metadata=_weights_metadata(network.config))
        if counts is not None:
            write_counts(tmp / COUNTS_FILE, counts)
        digests = {name: sha256_of(tmp / name) for name in DIGESTED_FILES if (tmp / name).is_file()}
        write_json_atomic(tmp / DIGESTS_FILE, {"algorithm": DIGEST_ALGORITHM, "files": digests})
    return target


def load_reference(
    path: PathLike,
    base_model: Optional[str] = None,
    device: Optional[str] = None,
    max_contexts: int = REFERENCE_MAX_CONTEXTS,
) -> Tuple[BertramNetwork, Any]:
    """A BERTRAM network from a reference checkpoint (`reference.py`), for the encoder `base_model` (None:
    the one its input processor names, which must be a local directory or a name in the Hugging Face cache).

    Returns (network, own_encoder): `own_encoder` is the checkpoint's encoder where its weights differ from
    the base model's (the network reads contexts with it), else None."""
    directory = Path(path)
    settings = read_reference_settings(directory)
    vocab = read_reference_vocab(directory, settings)
    encoder_weights, bertram_weights = split_weights(read_reference_weights(directory), settings)
    name = base_model or settings.base_model
    encoder, tokenizer = load_encoder(name)
    check_output_size(directory, settings, encoder, name)
    own_encoder = None
    if MODE_TRAITS[settings.mode].reads_contexts and encoder_weights and encoder_differs(encoder, encoder_weights):
        own_encoder = checkpoint_encoder(directory, settings, encoder_weights)
    config = BertramConfig(
        **{
            **PAPER_SETTINGS,
            "base_model": str(name),
            "mode": settings.mode,
            "add_quotes": settings.add_quotes,
            "prefix_tokens": settings.prefix_tokens,
            "max_seq_length": settings.max_seq_length,
            "ngram_dropout": 0.0,
            "max_contexts": max_contexts,
        }
    )
    network = BertramNetwork(config, vocab, own_encoder or encoder, tokenizer)
    state = reference_state(directory, settings, bertram_weights, network.bertram_state_dict())
    check_finite(state, repr(str(directory / "pytorch_model.bin")))
    network.load_state_dict(state, strict=False)
    if device is not None:
        network.to(device)
    return network, own_encoder


#: Where `convert_reference` writes a reference checkpoint's own encoder, inside the model directory, and what
#: it writes there (transformers' `save_pretrained` of the encoder and of the base model's tokenizer).
REFERENCE_ENCODER_DIR = "encoder"
ENCODER_DIR_ENTRIES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "added_tokens.json",
)


def convert_reference(
    source: PathLike,
    output: PathLike,
    base_model: Optional[str] = None,
    *,
    max_contexts: int = REFERENCE_MAX_CONTEXTS,
    force: bool = False,
) -> Path:
    """Write a model directory of this package's from a reference checkpoint (`load_reference`), for the
    encoder `base_model`. A checkpoint whose encoder was fine-tuned gets that encoder written to
    OUTPUT/encoder (safetensors and the base model's tokenizer), which its config.json names as the
    encoder to read contexts with. Both directories are checked by the output rule before any work."""
    target = Path(output)
    encoder_dir = target / REFERENCE_ENCODER_DIR
    check_model_dir(target, command="convert-reference", force=force, force_hint="--force")
    check_output_dir(
        encoder_dir, ENCODER_DIR_ENTRIES, command="convert-reference", force=force, replaces=True, force_hint="--force"
    )
    network, own_encoder = load_reference(source, base_model, max_contexts=max_contexts)
    if own_encoder is not None:
        with atomic_directory(encoder_dir, ENCODER_DIR_ENTRIES, overwrite=True) as tmp:  # checked above
            own_encoder.save_pretrained(str(tmp), safe_serialization=True)
            network.tokenizer.save_pretrained(str(tmp))
        network.config.base_model = str(encoder_dir.resolve())
    return write_model_dir(network, target)


def check_finite(state: Mapping[str, torch.Tensor], source: str) -> None:
    """Refuse NaN or infinite weights by tensor: they would give NaN vectors at the first doc.

    A sum is finite only if every value is (NaN and infinity propagate), and summing is a
    fraction of the cost of `isfinite(...).all()` on the CPU; values are counted only where the
    sum is not finite (which a sum that overflows also is).
    """
    for key in sorted(state):
        tensor = state[key]
        if not tensor.is_floating_point() or bool(torch.isfinite(tensor.sum())):
            continue
        n_nan, n_inf = int(torch.isnan(tensor).sum()), int(torch.isinf(tensor).sum())
        if n_nan or n_inf:
            raise ValueError(
                Errors.E065.format(key=key, source=source, n_nan=n_nan, n_inf=n_inf, n_values=tensor.numel())
            )


def read_weights(directory: PathLike) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
    """A model directory's weights and the config fields recorded with them, once every file
    matches its digest and every weight is finite."""
    path = Path(directory) / WEIGHTS_FILE
    try:
        with safe_open(str(path), framework="pt") as file_:
            state = {key: file_.get_tensor(key) for key in file_.keys()}
            metadata = dict(file_.metadata() or {})
    except (SafetensorError, OSError) as err:
        raise ValueError(Errors.E046.format(path=str(path), err=err)) from err
    verify_digests(directory)
    recorded = _recorded_fields(metadata, path)
    check_finite(state, repr(str(path)))
    return state, recorded


def check_config_against_weights(
    config: BertramConfig, recorded: Mapping[str, Any], state: Mapping[str, torch.Tensor], directory: Path
) -> None:
    """Refuse a config.json that does not describe its weights: a field recorded with the weights
    (RECORDED_FIELDS) or an encoder width that is not the projection's shape."""
    paths = {"path": str(directory / CONFIG_FILE), "weights": str(directory / WEIGHTS_FILE)}
    settings = config.to_dict()
    for key in RECORDED_FIELDS:
        if json.dumps(recorded[key]) != json.dumps(settings[key]):
            raise ValueError(Errors.E066.format(key=key, value=settings[key], saved=recorded[key], **paths))
    projection = state.get("projection.weight")
    if projection is None or projection.dim() != 2:
        return  # not BERTRAM's weights: the network's own check names what is missing
    widths = (("encoder_embedding_width", projection.shape[0]), ("encoder_hidden_width", projection.shape[1]))
    for key, actual in widths:
        if settings[key] is not None and settings[key] != actual:
            raise ValueError(
                Errors.E067.format(
                    key=key,
                    value=settings[key],
                    actual=actual,
                    tensor="projection.weight",
                    shape=tuple(projection.shape),
                    **paths,
                )
            )


def _load_weights(network: BertramNetwork, state: Dict[str, torch.Tensor], source: str) -> None:
    expected = network.bertram_state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ValueError(Errors.E041.format(source=source, missing=missing[:5], unexpected=unexpected[:5]))
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(expected[key].shape):
            raise ValueError(
                Errors.E042.format(
                    key=key, source=source, shape=tuple(tensor.shape), expected=tuple(expected[key].shape)
                )
            )
    network.load_state_dict(state, strict=False)


def load_bertram(path: PathLike, base_model: Optional[str] = None, device: Optional[str] = None) -> BertramNetwork:
    """Load a model directory and its counts.tsv, if any (`context_word_counts`); `base_model` overrides the
    recorded encoder location. A checkpoint of the reference implementation (`reference.py`) loads too,
    as the paper's network, for `base_model` (None: the encoder its input processor names).

    `device` (None: the CPU) is where the network and the encoder copy it reads go.
    """
    directory = Path(path)
    if not directory.is_dir():
        raise ValueError(Errors.E043.format(directory=str(directory)))
    if is_reference_checkpoint(directory) and not (directory / NGRAMS_FILE).exists():
        return _load_reference_for_encoder(directory, base_model, device)
    missing = [name for name in MODEL_FILES if not (directory / name).is_file()]
    if missing:
        raise ValueError(Errors.E044.format(directory=str(directory), missing=", ".join(missing)))
    try:  # each reader names its file and the offending key
        config = BertramConfig.from_disk(directory / CONFIG_FILE)
        ngrams = NgramVocab.from_disk(directory / NGRAMS_FILE)
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(Errors.E045.format(err=err)) from err
    state, recorded = read_weights(directory)
    if base_model is not None:
        config.base_model = base_model
    encoder, tokenizer = load_encoder(config.base_model)
    # read_layer against the encoder first: a layer it lacks is the clearer message.
    check_read_layer(
        config.read_layer, layer_count(encoder.config), config.base_model, repr(str(directory / CONFIG_FILE))
    )
    check_config_against_weights(config, recorded, state, directory)
    network = BertramNetwork(config, ngrams, encoder, tokenizer)
    _load_weights(network, state, str(directory / WEIGHTS_FILE))
    network.context_word_counts = CountTable.from_model_dir(directory)
    if device is not None:
        network.to(device)
    return network


def _load_reference_for_encoder(directory: Path, base_model: Optional[str], device: Optional[str]) -> BertramNetwork:
    """A reference checkpoint whose encoder is the base model's (else E074: it needs converting, which
    writes the checkpoint's own encoder beside the model)."""
    network, own_encoder = load_reference(directory, base_model, device)
    if own_encoder is not None:
        raise ValueError(Errors.E074.format(path=str(directory), base_model=network.config.base_model))
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
    check_finite(state, "serialized bytes")
    _load_weights(network, state, "serialized bytes")
    if device is not None:
        network.to(device)
    return network
