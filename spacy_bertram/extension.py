"""`doc._.bertram`, registered in one place: the component writes it, the injection reads it."""

from spacy.tokens import Doc

from .types import DOC_EXTENSION


def install_extension() -> None:
    """Register `doc._.bertram` (token index -> BERTRAM vector; None until the component runs), once per process."""
    if not Doc.has_extension(DOC_EXTENSION):
        Doc.set_extension(DOC_EXTENSION, default=None)


__all__ = ["install_extension"]
