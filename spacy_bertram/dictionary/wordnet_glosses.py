"""Definition contexts out of WordNet 3.0, read with NLTK.

Per single-word lemma, in WordNet's sense order (most frequent first): for
each synset the gloss as "lemma: gloss", then the synset's first example
sentence that contains the lemma (a context like a corpus one). WordNet's
irregular forms (its `*.exc` exception lists, "geese goose") go into the
store so that inflected forms find their lemma. WordNet is located and
copied for NLTK (`dictionary/wordnet.py`, which rarification reads too).
"""

from __future__ import annotations

import re
from typing import Iterator, List, Optional, Tuple

from .wordnet import load_wordnet
from ..types import PathLike
from .store import SourcedContext

SOURCE = "wordnet"
EXCEPTION_FILES = ("noun.exc", "verb.exc", "adj.exc", "adv.exc")


#: Who reads WordNet's glosses, as its errors name it.
COMMAND = "dictionary --sources wordnet"


def load_reader(wordnet_dir: Optional[PathLike] = None):
    """NLTK's WordNet reader (WordNetMissingError with install instructions when absent)."""
    return load_wordnet(wordnet_dir, command=COMMAND)


def occurrence(word: str, text: str) -> Optional[Tuple[int, int]]:
    """Span of the first whole-word, case-insensitive occurrence of `word` in `text`."""
    match = re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE)
    return match.span() if match else None


def lemma_contexts(reader, name: str) -> List[SourcedContext]:
    """Glosses and examples of one lemma name, in sense order (synsets that list the lemma only)."""
    contexts: List[SourcedContext] = []
    for synset in reader.synsets(name):
        written = next((lemma.name() for lemma in synset.lemmas() if lemma.name().lower() == name), None)
        if written is None:
            continue  # reached through morphy ("axes" -> "axis"), not a sense of this lemma
        contexts.append((SOURCE, f"{written}: {synset.definition()}", 0, len(written)))
        for example in synset.examples():
            span = occurrence(written, example)
            if span is not None:
                contexts.append((SOURCE, example, *span))
                break
    return contexts


def wordnet_entries(reader) -> Iterator[Tuple[str, List[SourcedContext]]]:
    """(lowercased lemma, contexts) for every single-word lemma (multi-word ones have '_')."""
    for name in reader.all_lemma_names():
        if "_" in name:
            continue
        contexts = lemma_contexts(reader, name)
        if contexts:
            yield name, contexts


def irregular_forms(reader) -> Iterator[Tuple[str, str]]:
    """(inflected form, lemma) from WordNet's exception lists ("geese" -> "goose")."""
    for fileid in EXCEPTION_FILES:
        with reader.open(fileid) as file_:
            for line in file_:
                form, *lemmas = line.split()
                for lemma in lemmas:
                    if "_" not in form and "_" not in lemma and form != lemma:
                        yield form, lemma
