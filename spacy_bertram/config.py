"""The settings that define one BERTRAM model, saved as config.json beside its weights."""
from __future__ import annotations

import json
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Union

MODES = ("form", "context", "shallow", "replace", "add", "inplace")
CONTEXT_MODES = ("context", "shallow", "replace", "add", "inplace")
FORMAT_VERSION = 1


@dataclass
class BertramConfig:
    """Hyper-parameters of the network (not of training).

    mode: how form and context combine: "form" (spelling only), "context"
        (masked contexts only), "shallow" (a learned gate between the two),
        "replace" (the form vector in place of the masked word), "add" (the
        form vector prepended to each context: the paper's best) or "inplace"
        (the word stays in its contexts, spelled with its own wordpieces; the
        frozen encoder's states over those pieces, read at `read_layer`, are
        projected into the input space: the encoder itself composes spelling
        and context; what `train` makes by default).
    use_subword_mean: also feed the mean of the encoder's own input embeddings
        of the word's wordpieces to the form part, gated against the n-gram
        form: on our data this surface signal is the strongest single cue.
    max_seq_length: encoder window around the masked word, specials included.
    max_contexts: contexts per word used at inference (more are ignored).
    max_word_pieces: wordpieces of the word fed to the subword mean (at least 1).
    read_layer: which encoder hidden state the context modes read (-1: the
        last layer; -2: the one before, etc.).
    subword_share: weight of the subword mean in the output, as a mix of unit
        vectors scaled to the subword mean's norm: 0 is BERTRAM's own vector
        (the paper); 0.5 an equal mix. On real rare words the subword mean and
        BERTRAM's vector are complementary: the mix beats either alone.
    own_embedding_for_one_piece: a word that is a single wordpiece of the
        encoder's vocabulary and has no usable context gets that piece's own
        input embedding. Without contexts BERTRAM has only the spelling, and
        the encoder's embedding of that very piece was trained on every one of
        its occurrences: reading the piece again cannot know more. (False: the
        paper, which gives every word its form vector.)
    encoder_*: recorded from the base model so that a mismatched encoder is
        detected at load time instead of producing silently wrong vectors.
    """

    base_model: str = "default"
    mode: str = "add"
    use_subword_mean: bool = True
    ngram_dropout: float = 0.1
    max_seq_length: int = 96
    max_contexts: int = 32
    max_word_pieces: int = 32
    read_layer: int = -1
    subword_share: float = 0.0
    own_embedding_for_one_piece: bool = False
    encoder_embedding_width: Optional[int] = None
    encoder_hidden_width: Optional[int] = None
    encoder_vocab_size: Optional[int] = None
    format_version: int = FORMAT_VERSION
    extra: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_types(self)
        if self.mode not in MODES:
            raise ValueError(f"Unknown BERTRAM mode {self.mode!r}; expected one of {MODES}")
        if not 0.0 <= self.ngram_dropout < 1.0:
            raise ValueError(f"ngram_dropout must be in [0, 1), got {self.ngram_dropout}")
        if self.max_seq_length < 8:
            raise ValueError(f"max_seq_length must be at least 8, got {self.max_seq_length}")
        if not 0.0 <= float(self.subword_share) <= 1.0:
            raise ValueError(f"subword_share must be in [0, 1], got {self.subword_share}")
        if self.max_contexts < 1:
            raise ValueError(f"max_contexts must be at least 1, got {self.max_contexts}")
        if self.max_word_pieces < 1:
            raise ValueError(
                f"max_word_pieces must be at least 1, got {self.max_word_pieces} "
                "(it caps the wordpieces of the subword mean; 0 would leave the word none)"
            )

    @property
    def uses_contexts(self) -> bool:
        return self.mode in CONTEXT_MODES

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BertramConfig":
        if not isinstance(data, Mapping):
            raise ValueError(f"a BERTRAM config is a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown keys in BERTRAM config: {unknown}")
        version = data.get("format_version", FORMAT_VERSION)
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(f"'format_version' must be an integer, got {version!r}")
        if version > FORMAT_VERSION:
            raise ValueError(
                f"This BERTRAM model has format version {version}; this spacy-bertram "
                f"reads up to {FORMAT_VERSION}. Upgrade spacy-bertram."
            )
        return cls(**dict(data))

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "BertramConfig":
        """Read config.json; every problem is a ValueError naming the file (and the key)."""
        try:
            with open(path, encoding="utf8") as file_:
                data = json.load(file_)
            return cls.from_dict(data)
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(f"Bad BERTRAM config file {str(path)!r}: {err}") from err


_TYPE_NAMES = {int: "an integer", float: "a number", bool: "true or false", str: "a string",
               dict: "an object", type(None): "null"}


def _expected(hint: Any) -> tuple:
    """The JSON types a field annotation admits (bool is never an int here)."""
    if hint is bool:
        return (bool,)
    if hint is int:
        return (int,)
    if hint is float:
        return (int, float)
    if hint is str:
        return (str,)
    origin = typing.get_origin(hint)
    if origin is Union:
        return tuple(t for arg in typing.get_args(hint) for t in _expected(arg))
    if hint is type(None):
        return (type(None),)
    if origin in (dict, Dict) or hint is dict:
        return (dict,)
    return (object,)


def check_types(config: "BertramConfig") -> None:
    """Refuse a value of the wrong type by key: a string "no" is not `false`, "96" is not 96."""
    hints = typing.get_type_hints(type(config))
    for item in fields(config):
        value = getattr(config, item.name)
        allowed = _expected(hints[item.name])
        wrong_bool = isinstance(value, bool) and bool not in allowed
        if wrong_bool or not isinstance(value, allowed):
            shown = [t for t in allowed if not (t is int and float in allowed)]  # a float field takes 1
            names = " or ".join(sorted({_TYPE_NAMES.get(t, t.__name__) for t in shown}))
            raise ValueError(f"{item.name!r} must be {names}, got {type(value).__name__} {value!r}")
