"""The settings that define one BERTRAM model, saved as config.json beside its weights."""

from __future__ import annotations

import json
import typing
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Dict, Literal, Mapping, Optional, Tuple, Union

from ..bounds import check_count
from ..errors import Errors

#: How form and context combine (see `BertramConfig.mode`); MODES lists them in this order.
Mode = Literal["form", "context", "shallow", "replace", "add", "inplace"]
MODES: Tuple[Mode, ...] = typing.get_args(Mode)


@dataclass(frozen=True)
class ContextRows:
    """How a mode builds each context row, as the behaviour the code asks about (never a label to compare).

    spelled: the word stays in its context, spelled with its own wordpieces (inplace); the form
        path is a row of those pieces alone, so a training step can mix the paths.
    prefix_slot: a slot for the form vector before the masked context (ADD: `[CLS] v : context`);
        the slot is filled before encoding, so the states are fixed while the form is frozen.
    mask_slot: the form vector takes the mask's place in the context (REPLACE).
    With none of these the word is masked and the form vector is not in the row (context, shallow).
    """

    spelled: bool = False
    prefix_slot: bool = False
    mask_slot: bool = False

    @property
    def fills_slot(self) -> bool:
        """The form vector goes into a slot of each context row."""
        return self.prefix_slot or self.mask_slot


@dataclass(frozen=True)
class ModeTraits:
    """What a mode does, in one table (`MODE_TRAITS`): inputs, the network and training read these
    traits, never the mode's name.

    rows: how a context row is built (`ContextRows`); None: the mode reads no contexts (form).
    gate_per_context: each context's vector is gated against the form ("shallow").
    combined_groups: the parameter groups of the paper's third stage (none: two stages, or one).
    one_stage: trained in a single stage (inplace), not the paper's context, form, combined.
    """

    rows: Optional[ContextRows]
    gate_per_context: bool = False
    combined_groups: Tuple[str, ...] = ()
    one_stage: bool = False

    @property
    def reads_contexts(self) -> bool:
        return self.rows is not None

    @property
    def reads_form(self) -> bool:
        """The n-gram form is part of the vector (all modes but "context", which reads contexts alone)."""
        return not self.reads_contexts or self.fills_slot or self.gate_per_context or self.spelled

    @property
    def fills_slot(self) -> bool:
        """The form vector goes into a slot of each context row."""
        return self.rows is not None and self.rows.fills_slot

    @property
    def spelled(self) -> bool:
        """Context rows spell the word with its own pieces (and the form path is the pieces alone)."""
        return self.rows is not None and self.rows.spelled

    @property
    def prefix_slot(self) -> bool:
        return self.rows is not None and self.rows.prefix_slot


MODE_TRAITS: Mapping[str, ModeTraits] = MappingProxyType(
    {
        "form": ModeTraits(rows=None),
        "context": ModeTraits(rows=ContextRows()),
        "shallow": ModeTraits(rows=ContextRows(), gate_per_context=True, combined_groups=("form", "context", "gate")),
        "replace": ModeTraits(rows=ContextRows(mask_slot=True), combined_groups=("form", "context")),
        "add": ModeTraits(rows=ContextRows(prefix_slot=True), combined_groups=("context",)),
        "inplace": ModeTraits(rows=ContextRows(spelled=True), one_stage=True),
    }
)
#: The modes that read contexts (all but "form"), and those that write the form vector into
#: a slot of each context row ("add": a prefix, "replace": in place of the mask).
CONTEXT_MODES: Tuple[Mode, ...] = tuple(mode for mode in MODES if MODE_TRAITS[mode].reads_contexts)
SLOT_MODES: Tuple[Mode, ...] = tuple(mode for mode in MODES if MODE_TRAITS[mode].fills_slot)
FORMAT_VERSION = 1
#: The shortest encoder window per context: the special tokens, the word and a few words around it.
MIN_SEQ_LENGTH = 8
#: The reference implementation's network (github timoschick/bertram, the paper's code), every
#: setting where the defaults differ from it: `BertramConfig(**PAPER_SETTINGS)`, with an n-gram table
#: built as it builds one (`NgramVocab.from_words(..., style="reference")`). Its vectors equal the
#: reference's own within 1e-5 (tests/test_model_reference.py holds them to vectors it inferred).
PAPER_SETTINGS: Mapping[str, Any] = MappingProxyType(
    {
        "mode": "add",
        "read_layer": -1,
        "subword_share": 0.0,
        "own_embedding_for_one_piece": False,
        "context_mean_share": 0.0,
        "context_mean_share_with_form": 0.0,
        "context_mean_smoothing": 0.0,
        "use_subword_mean": False,
        "mimicking": "linear",
        "context_rows": "reference",
        "shallow_gate": "after",
    }
)
#: How attentive mimicking turns the contexts' similarities into weights (`BertramConfig.mimicking`).
Mimicking = Literal["softmax", "linear"]
#: How a context becomes an encoder row (`BertramConfig.context_rows`).
ContextRowStyle = Literal["matched", "reference"]
#: Where the shallow mode's gate sits (`BertramConfig.shallow_gate`).
ShallowGate = Literal["per_context", "after"]


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
        and context; the default, as `train` makes it).
    use_subword_mean: also feed the mean of the encoder's own input embeddings
        of the word's wordpieces to the form part, gated against the n-gram
        form: on our data this surface signal is the strongest single cue.
    max_seq_length: encoder window around the masked word, specials included.
    max_contexts: contexts per word used at inference (more are ignored).
    max_word_pieces: wordpieces of the word fed to the subword mean (at least 1).
    read_layer: which encoder hidden state the context modes read (-1: the
        last layer; -2: the one before, etc.; training reads it in the inplace
        mode only: the paper's modes train on the last layer).
    subword_share: weight of the subword mean in the output, as a mix of unit
        vectors scaled to the subword mean's norm: 0 is BERTRAM's own vector
        (the paper); 0.15 the default. On real rare words the subword mean and
        BERTRAM's vector are complementary: the mix beats either alone. The mix
        is applied at inference only (training fits BERTRAM's own vector), so a
        trained model's share can be changed without training again.
    own_embedding_for_one_piece: a word that is a single wordpiece of the
        encoder's vocabulary and has no usable context gets that piece's own
        input embedding. Without contexts BERTRAM has only the spelling, and
        the encoder's embedding of that very piece was trained on every one of
        its occurrences: reading the piece again cannot know more (the default;
        False: the paper, which gives every word its form vector).
    context_mean_share: for a word read from its contexts alone (`use_form=False`:
        a nonce word whose spelling means nothing), weight of the context mean (the
        input embeddings of the context words, averaged as `context_mean_smoothing`
        says) in a mix of unit vectors scaled to BERTRAM's norm, for words with
        contexts only: 0 is BERTRAM's own vector; 0.7 the default, measured on the
        Chimeras' dev half, where BERTRAM alone fell below the plain context mean on
        some folds. Like `subword_share` it is inference's: changing it needs no training.
    context_mean_share_with_form: the same for a word read from its spelling and
        contexts (before the subword mean's mix); 0 the default: with the weighted
        mean a share raised the intrinsic measures but cost accuracy on the
        rarified sets wherever contexts were read.
    context_mean_smoothing: how the context mean weighs its words: a / (a + p), p a
        word's share of the model's training counts (counts.tsv) and a this setting
        (smooth inverse frequency, Arora et al. 2017), so "the" and "of" count for
        little and the words that say what a nonce is count most; 0 (or a model
        without counts) is the plain mean; 1e-4 the default, measured on the
        Chimeras' dev half. Inference's too.
    mimicking: how a word's contexts are weighed: "softmax" (the default) sums
        each context's similarities with the word's other contexts and takes a
        softmax; "linear" (the reference implementation's) sums every similarity,
        a context's with itself included, and divides each sum by their total, then
        projects the weighted mean of the states (not each state).
    context_rows: how a context becomes an encoder row: "matched" (the default)
        finds the word case-insensitively between word boundaries in the normalised
        text ("kumquat." is the word), masks every occurrence and centres the window
        on the first; "reference" as the reference implementation does: the
        whitespace-separated tokens equal to the word (case-sensitive) are masked,
        the text is re-joined with single spaces, each stretch between masks is
        tokenised on its own (byte-level BPE: with a leading space), the window drops
        a token from the longer side until it fits one position short of
        `max_seq_length`. ADD's prefix is `[CLS] v :` (`add_quotes`: `[CLS] " v " :`)
        in both styles; a word without a usable context gets its form vector in both.
    add_quotes: ADD wraps the form vector in double quotes (the reference's
        "add-quotes" mode, for RoBERTa: `<s> Ġ" v Ġ" :`).
    prefix_tokens: ADD's rows hold the prefix tokens (`[CLS] v : context`); false is
        what a model of the reference's own training script reads: that script never
        records ADD in its input processor, whose rows are then `[CLS] context [SEP]`
        with the form vector over the token at the slot's index (the first context
        token), and a checkpoint's `input_processor.json` says so (`"mode": null`).
    shallow_gate: where "shallow" gates the form against the contexts: "per_context"
        (the default) gates each context's projected state before attentive
        mimicking; "after" (the reference's) gates once, the mimicked context vector
        against the form vector: a = sigmoid(w . [v_ctx; v_form] + b).
    encoder_*: recorded from the base model so that a mismatched encoder is
        detected at load time instead of producing silently wrong vectors.
    """

    base_model: str = "default"
    mode: Mode = "inplace"
    use_subword_mean: bool = True
    ngram_dropout: float = 0.1
    max_seq_length: int = 96
    max_contexts: int = 32
    max_word_pieces: int = 32
    read_layer: int = -2
    subword_share: float = 0.15
    own_embedding_for_one_piece: bool = True
    context_mean_share: float = 0.7
    context_mean_share_with_form: float = 0.0
    context_mean_smoothing: float = 1e-4
    mimicking: Mimicking = "softmax"
    context_rows: ContextRowStyle = "matched"
    add_quotes: bool = False
    prefix_tokens: bool = True
    shallow_gate: ShallowGate = "per_context"
    encoder_embedding_width: Optional[int] = None
    encoder_hidden_width: Optional[int] = None
    encoder_vocab_size: Optional[int] = None
    format_version: int = FORMAT_VERSION
    extra: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_types(self)
        if self.mode not in MODES:
            raise ValueError(Errors.E050.format(mode=self.mode, MODES=MODES))
        for setting, allowed in (
            ("mimicking", typing.get_args(Mimicking)),
            ("context_rows", typing.get_args(ContextRowStyle)),
            ("shallow_gate", typing.get_args(ShallowGate)),
        ):
            if getattr(self, setting) not in allowed:
                raise ValueError(Errors.E097.format(setting=setting, value=getattr(self, setting), allowed=allowed))
        if not 0.0 <= self.ngram_dropout < 1.0:
            raise ValueError(Errors.E052.format(setting="ngram_dropout", bounds="in [0, 1)", value=self.ngram_dropout))
        check_count(self.max_seq_length, "max_seq_length", "tokens", low=MIN_SEQ_LENGTH)
        for setting in ("subword_share", "context_mean_share", "context_mean_share_with_form"):
            if not 0.0 <= float(getattr(self, setting)) <= 1.0:
                raise ValueError(Errors.E052.format(setting=setting, bounds="in [0, 1]", value=getattr(self, setting)))
        if not 0.0 <= float(self.context_mean_smoothing) < 1.0:
            raise ValueError(
                Errors.E052.format(
                    setting="context_mean_smoothing",
                    bounds="in [0, 1) (0: the plain mean)",
                    value=self.context_mean_smoothing,
                )
            )
        check_count(self.max_contexts, "max_contexts", "contexts")
        check_count(self.max_word_pieces, "max_word_pieces (the subword mean's wordpiece cap)", "tokens")

    @property
    def traits(self) -> ModeTraits:
        return MODE_TRAITS[self.mode]

    @property
    def uses_contexts(self) -> bool:
        return self.traits.reads_contexts

    @property
    def fills_slot(self) -> bool:
        """Whether the form vector goes into a slot of each context row (SLOT_MODES)."""
        return self.traits.fills_slot

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "BertramConfig":
        """Read a saved config: every setting named (a file that lacks one was not written by this version, and
        today's default might not be what it was trained with)."""
        if not isinstance(data, Mapping):
            raise ValueError(Errors.E054.format(data_type=type(data).__name__))
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(Errors.E055.format(unknown=unknown))
        version = data.get("format_version", FORMAT_VERSION)
        if not isinstance(version, int) or isinstance(version, bool):
            raise ValueError(Errors.E028.format(key="format_version", value=version))
        if version > FORMAT_VERSION:
            raise ValueError(Errors.E056.format(version=version, FORMAT_VERSION=FORMAT_VERSION))
        missing = [f.name for f in fields(cls) if f.name not in data]
        if missing:
            raise ValueError(Errors.E059.format(missing=missing))
        return cls(**data)

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "BertramConfig":
        """Read config.json; every problem is a ValueError naming the file (and the key)."""
        try:
            with open(path, encoding="utf8") as file_:
                data = json.load(file_)
            return cls.from_dict(data)
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(Errors.E057.format(path=str(path), err=err)) from err


def check_read_layer(read_layer: int, n_layers: Optional[int], base_model: str, source: str) -> None:
    """Refuse a `read_layer` the encoder's hidden states do not have (else an IndexError deep in
    a forward pass): with n layers they are the embeddings' output and each layer's, -(n+1)..n."""
    if n_layers is not None and not -(n_layers + 1) <= read_layer <= n_layers:
        raise ValueError(
            Errors.E068.format(
                read_layer=read_layer,
                source=source,
                base_model=base_model,
                n_layers=n_layers,
                low=-(n_layers + 1),
                high=n_layers,
            )
        )


_TYPE_NAMES = {
    int: "an integer",
    float: "a number",
    bool: "true or false",
    str: "a string",
    dict: "an object",
    type(None): "null",
}


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
    if origin is Literal:
        return tuple({type(arg) for arg in typing.get_args(hint)})
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
            raise ValueError(
                Errors.E058.format(key=item.name, names=names, value_type=type(value).__name__, value=value)
            )
