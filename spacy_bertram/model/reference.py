"""Checkpoints of the reference implementation (github timoschick/bertram, the paper's code) as networks.

A reference checkpoint is the directory its training script saves: `bertram_config.json` and
`input_processor.json` (jsonpickle's JSON of its config objects), `input_processor.json.vocab` (the
training words and counts, from which it rebuilds the n-gram table at load), the encoder's
`config.json` and `pytorch_model.bin` (the whole model: the encoder and BERTRAM's parts). Here the
two JSON files are read as plain JSON, field by field, and never decoded by jsonpickle (which
builds whatever objects a file names); the weights load with `weights_only=True`. The network made
has the reference's settings (`PAPER_SETTINGS`) and an n-gram table rebuilt as the reference
rebuilds it, so it infers the vectors the reference infers.

The reference's training fine-tunes the encoder unless told not to: where the checkpoint's encoder
weights differ from the named base model's, the network reads contexts with the checkpoint's encoder
(vectors still go into the base model's input space, the one BERTRAM was trained to mimic), and
`convert_reference` writes that encoder beside the converted model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Mapping, Tuple

import pickle

from ..errors import Errors
from ..types import PathLike
from .config import MODE_TRAITS
from .inputs import NgramVocab

BERTRAM_CONFIG_FILE = "bertram_config.json"
INPUT_PROCESSOR_FILE = "input_processor.json"
VOCAB_FILE = INPUT_PROCESSOR_FILE + ".vocab"
ENCODER_CONFIG_FILE = "config.json"
WEIGHTS_FILE = "pytorch_model.bin"
REFERENCE_FILES = (BERTRAM_CONFIG_FILE, INPUT_PROCESSOR_FILE, VOCAB_FILE, ENCODER_CONFIG_FILE, WEIGHTS_FILE)
#: The reference's modes, as this package's mode and `add_quotes`.
REFERENCE_MODES: Mapping[str, Tuple[str, bool]] = {
    "form": ("form", False),
    "context": ("context", False),
    "shallow": ("shallow", False),
    "replace": ("replace", False),
    "add": ("add", False),
    "add-quotes": ("add", True),
}
ENCODER_CLASSES = ("bert", "roberta")
#: The reference's parameter names -> this network's.
WEIGHT_NAMES: Mapping[str, str] = {
    "ngram_processor.ngram_embeddings.weight": "ngram_form.embeddings.weight",
    "reliability_measure.linear.weight": "mimicking.query.weight",
    "reliability_measure.linear.bias": "mimicking.query.bias",
    "linear.weight": "projection.weight",
    "linear.bias": "projection.bias",
    "shallow_combination.linear.weight": "shallow_combination.weight",
    "shallow_combination.linear.bias": "shallow_combination.bias",
}
#: The most contexts per word a converted model reads (the reference reads every one it is given).
REFERENCE_MAX_CONTEXTS = 64
#: This network's parameters the reference's settings never read (the subword-mean gate, the per-context gate).
UNREAD_WEIGHTS = ("form_gate.", "context_gate.")


def is_reference_checkpoint(path: PathLike) -> bool:
    """A directory the reference's training saved (it has its BERTRAM config and input processor)."""
    directory = Path(path)
    return (directory / BERTRAM_CONFIG_FILE).is_file() and (directory / INPUT_PROCESSOR_FILE).is_file()


@dataclass(frozen=True)
class ReferenceSettings:
    """What this package reads of a reference checkpoint's two JSON files."""

    transformer_cls: str
    mode: str
    add_quotes: bool
    prefix_tokens: bool
    output_size: int
    ngram_vocab_size: int
    max_seq_length: int
    min_n: int
    max_n: int
    ngram_threshold: int
    base_model: str


def _fail(directory: Path, problem: str) -> ValueError:
    return ValueError(Errors.E098.format(path=str(directory), problem=problem))


def _read_json(directory: Path, name: str, tag: str) -> Dict[str, Any]:
    """A jsonpickle file's fields as plain JSON: the object's own (under "py/state" where it has one)."""
    path = directory / name
    try:
        data = json.loads(path.read_text(encoding="utf8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise _fail(directory, f"{name} is not readable JSON ({err})") from err
    if not isinstance(data, dict) or data.get("py/object") != tag:
        raise _fail(directory, f"{name} does not hold a {tag!r} object")
    state = data.get("py/state", data)
    if not isinstance(state, dict):
        raise _fail(directory, f"{name}'s 'py/state' is not an object")
    return state


def _field(directory: Path, name: str, data: Mapping[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise _fail(directory, f"{name}'s {key!r} is {value!r}, not {'an integer' if kind is int else 'a string'}")
    return value


def read_reference_settings(path: PathLike) -> ReferenceSettings:
    """The checkpoint's settings, every field checked: a missing file or field, or a value this package
    cannot reproduce (another separator than ':', a form-only input processor), is E098 naming it."""
    directory = Path(path)
    if not directory.is_dir():
        raise _fail(directory, "it is not a directory")
    missing = [name for name in REFERENCE_FILES if not (directory / name).is_file()]
    if missing:
        raise _fail(directory, f"it lacks {', '.join(missing)}")
    bertram = _read_json(directory, BERTRAM_CONFIG_FILE, "bertram.BertramConfig")
    processor = _read_json(directory, INPUT_PROCESSOR_FILE, "input_processor.InputProcessor")
    mode = _field(directory, BERTRAM_CONFIG_FILE, bertram, "mode", str)
    if mode not in REFERENCE_MODES:
        raise _fail(directory, f"{BERTRAM_CONFIG_FILE}'s mode {mode!r} is none of {sorted(REFERENCE_MODES)}")
    transformer_cls = _field(directory, BERTRAM_CONFIG_FILE, bertram, "transformer_cls", str)
    if transformer_cls not in ENCODER_CLASSES:
        raise _fail(
            directory, f"{BERTRAM_CONFIG_FILE}'s transformer_cls {transformer_cls!r} is none of {ENCODER_CLASSES}"
        )
    processor_mode = processor.get("mode")
    if processor_mode is not None and processor_mode != mode:
        raise _fail(
            directory, f"{INPUT_PROCESSOR_FILE}'s mode {processor_mode!r} is not {BERTRAM_CONFIG_FILE}'s {mode!r}"
        )
    if processor.get("sep_symbol", ":") != ":":
        raise _fail(directory, f"{INPUT_PROCESSOR_FILE}'s sep_symbol {processor.get('sep_symbol')!r} is not ':'")
    if processor.get("form_only"):
        raise _fail(directory, f"{INPUT_PROCESSOR_FILE} is a form-only model's (form_only true)")
    return ReferenceSettings(
        transformer_cls=transformer_cls,
        mode=REFERENCE_MODES[mode][0],
        add_quotes=REFERENCE_MODES[mode][1],
        # Its train.py and fuse_models.py never set the input processor's mode: rows then have no ADD prefix.
        prefix_tokens=processor_mode is not None,
        output_size=_field(directory, BERTRAM_CONFIG_FILE, bertram, "output_size", int),
        ngram_vocab_size=_field(directory, BERTRAM_CONFIG_FILE, bertram, "ngram_vocab_size", int),
        max_seq_length=_field(directory, INPUT_PROCESSOR_FILE, processor, "max_seq_length", int),
        min_n=_field(directory, INPUT_PROCESSOR_FILE, processor, "nmin", int),
        max_n=_field(directory, INPUT_PROCESSOR_FILE, processor, "nmax", int),
        ngram_threshold=_field(directory, INPUT_PROCESSOR_FILE, processor, "ngram_threshold", int),
        base_model=_field(directory, INPUT_PROCESSOR_FILE, processor, "bert_model", str),
    )


def read_reference_vocab(path: PathLike, settings: ReferenceSettings):
    """The n-gram table the reference rebuilds at load: every line's first field counted once, n-grams
    with count >= ngram_threshold in `Counter.most_common()` order after UNK (0) and PAD (1)."""
    directory = Path(path)
    try:
        lines = (directory / VOCAB_FILE).read_text(encoding="utf8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise _fail(directory, f"{VOCAB_FILE} is not readable text ({err})") from err
    words = [line.split()[0] for line in lines if line.split()]
    vocab = NgramVocab.from_words(
        words, settings.min_n, settings.max_n, min_count=settings.ngram_threshold, style="reference"
    )
    if len(vocab) != settings.ngram_vocab_size:
        raise ValueError(
            Errors.E099.format(
                path=str(directory),
                what=f"its own {BERTRAM_CONFIG_FILE}",
                problem=f"{VOCAB_FILE} gives {len(vocab)} n-grams, ngram_vocab_size says {settings.ngram_vocab_size}",
            )
        )
    return vocab


def read_reference_weights(path: PathLike) -> Dict[str, Any]:
    """pytorch_model.bin's tensors, loaded with `weights_only=True` (no object of the file's choosing is built)."""
    import torch  # here: the command line reads this module's settings before it imports torch

    directory = Path(path)
    try:
        state = torch.load(str(directory / WEIGHTS_FILE), map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as err:
        raise _fail(directory, f"{WEIGHTS_FILE} does not load as tensors ({err})") from err
    if not isinstance(state, Mapping) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise _fail(directory, f"{WEIGHTS_FILE} is not a mapping of names to tensors")
    return dict(state)


#: The reference wraps the encoder's word embeddings (its OverwriteableEmbedding), which saves them one level down.
WRAPPED_EMBEDDINGS = ("embeddings.word_embeddings.embedding.weight", "embeddings.word_embeddings.weight")


def split_weights(stored: Mapping[str, Any], settings: ReferenceSettings) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(the encoder's weights under its own names, BERTRAM's weights) of a checkpoint's pytorch_model.bin."""
    prefix = settings.transformer_cls + "."
    encoder = {k[len(prefix) :]: v for k, v in stored.items() if k.startswith(prefix)}
    wrapped, plain = WRAPPED_EMBEDDINGS
    if wrapped in encoder:
        encoder[plain] = encoder.pop(wrapped)
    return encoder, {k: v for k, v in stored.items() if not k.startswith(prefix)}


def encoder_differs(encoder: Any, stored: Mapping[str, Any]) -> bool:
    """Whether the checkpoint's encoder weights are other than `encoder`'s (a key of one the other lacks counts)."""
    import torch

    own = {k: v for k, v in encoder.state_dict().items() if not k.endswith("position_ids")}
    stored = {k: v for k, v in stored.items() if not k.endswith("position_ids")}
    if set(own) != set(stored):
        return True
    return any(own[k].shape != stored[k].shape or not torch.equal(own[k].to(stored[k].dtype), stored[k]) for k in own)


def checkpoint_encoder(path: PathLike, settings: ReferenceSettings, stored: Mapping[str, Any]) -> Any:
    """The checkpoint's own encoder: its config.json read by the class its transformer_cls names, its weights."""
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    directory = Path(path)
    config_cls, model_cls = (
        (BertConfig, BertModel) if settings.transformer_cls == "bert" else (RobertaConfig, RobertaModel)
    )
    try:
        config = config_cls.from_json_file(str(directory / ENCODER_CONFIG_FILE))
    except (OSError, ValueError) as err:
        raise _fail(directory, f"{ENCODER_CONFIG_FILE} is not an encoder config ({err})") from err
    encoder = model_cls(config, add_pooling_layer=any(k.startswith("pooler.") for k in stored))
    missing, unexpected = encoder.load_state_dict(dict(stored), strict=False)
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(
            Errors.E099.format(
                path=str(directory),
                what=f"a {settings.transformer_cls} encoder of its {ENCODER_CONFIG_FILE}",
                problem=f"missing {missing[:5]}, unexpected {unexpected[:5]}",
            )
        )
    return encoder.eval()


def reference_state(
    path: PathLike, settings: ReferenceSettings, bertram_weights: Mapping[str, Any], expected: Mapping[str, Any]
) -> Dict[str, Any]:
    """The checkpoint's BERTRAM weights under this network's names (`expected`: the network's state), every
    shape checked; the parameters the reference's settings never read are zeros."""
    directory = Path(path)
    unknown = sorted(set(bertram_weights) - set(WEIGHT_NAMES))
    if unknown:
        raise _fail(directory, f"{WEIGHTS_FILE} holds weights the reference's BERTRAM does not have: {unknown[:5]}")
    state: Dict[str, Any] = {}
    for key, tensor in bertram_weights.items():
        ours = WEIGHT_NAMES[key]
        if ours not in expected:
            raise _fail(directory, f"{WEIGHTS_FILE}'s {key!r} has no place in a {settings.mode!r} network")
        if tuple(tensor.shape) != tuple(expected[ours].shape):
            raise ValueError(
                Errors.E099.format(
                    path=str(directory),
                    what="the base model",
                    problem=f"{key} is {tuple(tensor.shape)}, the network needs {tuple(expected[ours].shape)}",
                )
            )
        state[ours] = tensor
    for ours, tensor in expected.items():
        if ours in state:
            continue
        reads_form = MODE_TRAITS[settings.mode].reads_form
        unread = ours.startswith(UNREAD_WEIGHTS) or (not reads_form and ours.startswith("ngram_form."))
        if not unread:
            reference_name = next((k for k, v in WEIGHT_NAMES.items() if v == ours), ours)
            raise _fail(directory, f"{WEIGHTS_FILE} lacks {reference_name!r}, which a {settings.mode!r} network reads")
        state[ours] = tensor.new_zeros(tensor.shape)
    return state


def check_output_size(path: PathLike, settings: ReferenceSettings, encoder: Any, base_model: str) -> None:
    """The checkpoint's vectors must be as wide as the base model's input embeddings."""
    width = int(encoder.get_input_embeddings().weight.shape[1])
    if settings.output_size != width:
        raise ValueError(
            Errors.E099.format(
                path=str(path),
                what=f"the base model {base_model!r}",
                problem=f"its output_size is {settings.output_size}, the encoder's input embeddings are {width} wide",
            )
        )
