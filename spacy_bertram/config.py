"""The settings that define one BERTRAM model, saved as config.json beside its weights."""
from __future__ import annotations

import json
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
        (masked contexts only), "shallow" (a gate of both), "replace" (form
        vector at the mask), "add" (the paper's best: `[CLS] v_form : context`)
        or "inplace" (the word stays in its contexts, spelled with its own
        wordpieces; the frozen encoder's states over those pieces, read at
        `read_layer`, are projected into the input space: the encoder itself
        composes spelling and context).
    use_subword_mean: also feed the mean of the encoder's own input embeddings
        of the word's wordpieces to the form part, gated against the n-gram
        form: on our data this surface signal is the strongest single cue.
    max_seq_length: encoder window around the masked word, specials included.
    max_contexts: contexts per word used at inference (more are ignored).
    read_layer: which encoder hidden state the context modes read (-1: the
        last layer; -2: the one before, etc.).
    subword_share: weight of the subword mean in the output, as a mix of unit
        vectors scaled to the subword mean's norm: 0 is BERTRAM's own vector
        (the paper); 0.5 an equal mix. On real rare words the subword mean and
        BERTRAM's vector are complementary: the mix beats either alone.
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
    encoder_embedding_width: Optional[int] = None
    encoder_hidden_width: Optional[int] = None
    encoder_vocab_size: Optional[int] = None
    format_version: int = FORMAT_VERSION
    extra: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
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

    @property
    def uses_contexts(self) -> bool:
        return self.mode in CONTEXT_MODES

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BertramConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown keys in BERTRAM config: {unknown}")
        version = int(data.get("format_version", FORMAT_VERSION))
        if version > FORMAT_VERSION:
            raise ValueError(
                f"This BERTRAM model has format version {version}; this spacy-bertram "
                f"reads up to {FORMAT_VERSION}. Upgrade spacy-bertram."
            )
        return cls(**dict(data))

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "BertramConfig":
        with open(path, encoding="utf8") as file_:
            return cls.from_dict(json.load(file_))
