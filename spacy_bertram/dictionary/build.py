"""Build a definition store from GCIDE and/or WordNet (`python -m spacy_bertram dictionary`).

Per headword, each source gives its contexts in its own order (GCIDE the
entry's senses, WordNet the senses by frequency); the store keeps them
interleaved, one from each source in turn ("gcide+wordnet": GCIDE's first,
WordNet's first, GCIDE's second, ...), so that a component reading only the
first few gets both dictionaries' main senses.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..bounds import check_count
from ..errors import Errors, Warnings
from .wordnet import WordNetMissingError, check_nltk
from ..types import PathLike
from .dictd import DictdDatabase
from .gcide import definitions, headword
from .store import STORE_FILE, SourcedContext, write_definition_store
from .wordnet_glosses import COMMAND as WORDNET_COMMAND, irregular_forms, load_reader, wordnet_entries

logger = logging.getLogger("spacy_bertram")

SOURCES = ("gcide", "wordnet")
#: Where Debian's `dict-gcide` puts GCIDE.
DEFAULT_GCIDE_INDEX = Path("/usr/share/dictd/gcide.index")
#: Contexts kept per headword and source (the component reads a few).
DEFAULT_MAX_PER_SOURCE = 16


def parse_sources(text: str) -> List[str]:
    """ "gcide,wordnet" -> ["gcide", "wordnet"]; ValueError naming an unknown one."""
    names = [name.strip() for name in text.replace("+", ",").split(",") if name.strip()]
    unknown = [name for name in names if name not in SOURCES]
    if unknown or not names:
        raise ValueError(Errors.E501.format(text=text, sources=", ".join(SOURCES)))
    return list(dict.fromkeys(names))


def gcide_entries(index_path: PathLike, wordnet_derived: bool = True) -> Iterator[Tuple[str, List[SourcedContext]]]:
    """(lowercased headword, contexts) of every GCIDE headword with a current sense.

    The index lists a word also under entries that merely mention it ("run"
    under "All fours"); only entries whose own headword is the word count.
    """
    index_path = Path(index_path)
    if not index_path.is_file():
        raise FileNotFoundError(Errors.E512.format(path=index_path))
    with DictdDatabase.open(index_path) as database:
        for key in database.headwords():
            contexts: List[SourcedContext] = []
            for entry in database.entries(key):
                written = headword(entry)
                if written is None or written.lower() != key:
                    continue
                for sense in definitions(entry):
                    if wordnet_derived or not sense.wordnet_derived:
                        contexts.append(("gcide", f"{written}: {sense.text}", 0, len(written)))
            if contexts:
                yield key, contexts


def interleave(lists: Sequence[Sequence[SourcedContext]]) -> List[SourcedContext]:
    """One from each list in turn, duplicates (same text) dropped."""
    merged: Dict[str, SourcedContext] = {}
    for context in chain.from_iterable(zip_longest(*lists)):
        if context is not None and context[1] not in merged:
            merged[context[1]] = context
    return list(merged.values())


def store_path(output: PathLike) -> Path:
    """The store's file: OUTPUT, or OUTPUT/definitions.sqlite for a directory or a name without a suffix."""
    output = Path(output)
    return output / STORE_FILE if output.is_dir() or not output.suffix else output


def build_dictionary_store(
    output: PathLike,
    sources: Iterable[str] = SOURCES,
    gcide_index: PathLike = DEFAULT_GCIDE_INDEX,
    wordnet_dir: Optional[PathLike] = None,
    gcide_wordnet_derived: bool = True,
    max_per_source: int = DEFAULT_MAX_PER_SOURCE,
) -> Dict[str, Any]:
    """Write the store (OUTPUT, or OUTPUT/definitions.sqlite for a directory); returns its statistics."""
    sources = list(sources)
    check_count(max_per_source, "--max-per-source", "contexts")
    if "wordnet" in sources:  # before GCIDE is read: NLTK missing was found only after it
        check_nltk(WORDNET_COMMAND)
    started = time.perf_counter()
    output = store_path(output)
    per_source: Dict[str, Dict[str, List[SourcedContext]]] = {}
    inflections: List[Tuple[str, str]] = []
    if "gcide" in sources:
        per_source["gcide"] = {k: v[:max_per_source] for k, v in gcide_entries(gcide_index, gcide_wordnet_derived)}
        logger.info("GCIDE: %d headwords", len(per_source["gcide"]))
    if "wordnet" in sources or "gcide" in sources:
        reader = _wordnet_for(sources, wordnet_dir)
        if reader is not None:
            inflections = list(irregular_forms(reader))
            if "wordnet" in sources:
                per_source["wordnet"] = {k: v[:max_per_source] for k, v in wordnet_entries(reader)}
                logger.info("WordNet: %d lemmas", len(per_source["wordnet"]))
    words = sorted(set().union(*(entries.keys() for entries in per_source.values())))
    merged = {word: interleave([per_source[s].get(word, []) for s in sources]) for word in words}
    meta = {
        "sources": json.dumps(sources),
        "gcide_wordnet_derived": str(gcide_wordnet_derived),
        "max_per_source": str(max_per_source),
    }
    write_definition_store(output, merged, inflections, meta)
    return {
        "store": str(output),
        "sources": sources,
        "headwords": len(merged),
        "headwords_per_source": {s: len(entries) for s, entries in per_source.items()},
        "contexts": sum(len(v) for v in merged.values()),
        "irregular_forms": len(inflections),
        "gcide_wordnet_derived": gcide_wordnet_derived,
        "bytes": output.stat().st_size,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _wordnet_for(sources: Sequence[str], wordnet_dir: Optional[PathLike]):
    """WordNet's reader: required for the wordnet source; for GCIDE alone only for the irregular forms."""
    try:
        return load_reader(wordnet_dir)
    except WordNetMissingError:
        if "wordnet" in sources:
            raise
        warnings.warn(Warnings.W013)
        return None
