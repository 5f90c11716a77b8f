"""Type aliases and names shared by the package (a leaf: it imports nothing of it)."""
from pathlib import Path
from typing import Literal, Tuple, Union, get_args

PathLike = Union[str, Path]
"""A filesystem path: a `str` or a `pathlib.Path`."""

MODEL_FILES = ("config.json", "ngrams.json", "weights.safetensors")
"""The files of a BERTRAM model directory (written by `storage.save_bertram`), named where the command line
checks a model argument without importing torch."""

InjectingMode = Literal["replace", "slash", "recentre"]
"""The injection modes that put vectors in (`injection/builders.py` builds each)."""
InjectionMode = Literal[InjectingMode, "none"]
"""`spacy-bertram.TransformerModel.v1`'s injection: "none" runs the stock model."""
INJECTION_MODES: Tuple[str, ...] = get_args(InjectionMode)
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

DOC_EXTENSION = "bertram"
"""`doc._.bertram`: token index -> BERTRAM vector, set by the component, read by the injection."""
