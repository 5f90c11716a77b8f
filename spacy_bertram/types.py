"""Type aliases, names and defaults shared by the package (a leaf but for the error catalogue: the command line
reads it before any heavy import)."""

from pathlib import Path
from typing import Literal, Tuple, Union, get_args

from .errors import Errors

PathLike = Union[str, Path]
"""A filesystem path: a `str` or a `pathlib.Path`."""

FACTORY = "bertram"
"""The component's factory (`nlp.add_pipe("bertram")`)."""

MODEL_FILES = ("config.json", "ngrams.json", "weights.safetensors")
"""The files of a BERTRAM model directory (written by `storage.save_bertram`), named where the command line
checks a model argument without importing torch."""

VectorInjectionMode = Literal["replace", "slash", "recentre"]
"""The injection modes that put vectors in (`injection/builders.py` builds each)."""
InjectionMode = Literal[VectorInjectionMode, "none"]
"""`spacy-bertram.TransformerModel.v1`'s injection: "none" runs the stock model."""
INJECTION_MODES: Tuple[str, ...] = get_args(InjectionMode)


def check_injection(injection: str) -> None:
    """An injection mode the model has (E156 names them): the one check, wherever a mode comes in."""
    if injection not in INJECTION_MODES:
        raise ValueError(Errors.E156.format(setting="injection", choices=", ".join(INJECTION_MODES), value=injection))


DEFAULT_INJECTION: InjectionMode = "recentre"
"""The injection whose spelling-alone gain on the pooled rarified sets has its CI above zero with the trained
default (slash's does not), at no added positions (docs/evaluation.md#choosing-the-defaults)."""
DEFAULT_CONTEXTS = "none"
"""Where the component's contexts come from by default: nowhere, the spelling alone. Measured, the doc's contexts
add no accuracy over the spelling on the pooled rarified sets while they cost 1.4-1.5x the stock pipeline's cold
time (docs/evaluation.md#choosing-the-defaults); "doc", "store" or a registered source add them."""

DEFAULT_CONTEXTS_PER_WORD = 8
"""Contexts the component gathers per rare word, and what the commands that stand in for it read (`vectors`,
`evaluate`): the number the default model is trained with (`train --max-contexts 8`)."""

DEFAULT_MIN_WORDPIECES = 2
"""A word the encoder keeps whole has its own trained embedding: only words cut into at least this many pieces
are rare to it (the rule's `min_wordpieces`, and the "multi-piece" subsets the experiments report)."""

DEFAULT_TOKEN_BUDGET = 4096
"""Encoder tokens per call of the BERTRAM network: the layer's `token_budget` and training's (here, not in
`network.py`, so that the training commands read it without importing torch)."""

DOC_EXTENSION = "bertram"
"""`doc._.bertram`: token index -> BERTRAM vector, set by the component, read by the injection."""
