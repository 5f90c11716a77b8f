"""The library versions a pipeline was saved with, and the one pairing that cannot load.

spacy-transformers 2 writes the transformer's weights as safetensors and reads both those and the
torch pickles that 1.x writes, so a pipeline saved on 1.x loads on 2.x. spacy-transformers 1.x reads
a 2.x save as a torch pickle and stops with an unpickling error that names neither version. The
`bertram` component, which runs before the transformer, saves the versions beside its own parts and,
at load, refuses that pairing first, naming both stacks.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Dict, Mapping, Optional

from ..errors import Errors

#: The saved cfg's keys (strings; absent in saves from before they were recorded).
STACK_KEYS = {"spacy-transformers": "spacy_transformers_version", "transformers": "transformers_version"}
#: The first spacy-transformers release that saves the transformer's weights as safetensors.
SAFETENSORS_MAJOR = 2


def installed_version(package: str) -> Optional[str]:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def saved_stack() -> Dict[str, Optional[str]]:
    """The cfg entries a save records: the installed spacy-transformers and transformers."""
    return {key: installed_version(package) for package, key in STACK_KEYS.items()}


def _major(text: Optional[str]) -> Optional[int]:
    match = re.match(r"\s*(\d+)", text or "")
    return int(match.group(1)) if match else None


def check_saved_stack(cfg: Optional[Mapping[str, Any]], where: str) -> None:
    """Refuse a pipeline saved with spacy-transformers 2+ on a spacy-transformers 1.x, naming both stacks."""
    if not cfg:
        return
    saved = cfg.get(STACK_KEYS["spacy-transformers"])
    here = installed_version("spacy-transformers")
    saved_major, here_major = _major(saved), _major(here)
    if saved_major is None or here_major is None:
        return
    if saved_major >= SAFETENSORS_MAJOR > here_major:
        raise ValueError(
            Errors.E192.format(
                where=where,
                saved=saved,
                saved_transformers=cfg.get(STACK_KEYS["transformers"]) or "unknown",
                here=here,
                here_transformers=installed_version("transformers") or "none",
            )
        )


__all__ = ["STACK_KEYS", "check_saved_stack", "saved_stack"]
