"""Readers for three public sets of real rare words, with errors that name file and line.

- CRW (Khodak et al. 2018, "A la carte embedding"; pairs from Luong et al.
  2013's Rare Word set), as in the CRW-dev folder of timoschick/form-context-model:
  a directory with `pairs.tsv` (word, rare word, score; no header) and
  `contexts/<rare word>.txt` (one sentence per line, the word not removed).
- Card-660 (Pilehvar et al. 2018): a TSV of word, word, score (0-4); no
  contexts. Many entries are multiword (underscores) or not alphabetic
  ("1080p", "black-and-white"); BERTRAM and the scoring want single words, so
  only pairs of two alphabetic words are kept, and the dropped ones are counted
  by reason.
- Chimeras (Lazaridou et al. 2017), as in NLPrinceton/ALaCarte `data-chimeras/`:
  `dataset.l{2,4,6}.fixed.{train,test}.txt`, tab-separated id, passage
  (sentences split by `@@`, the nonce written `___`), 6 probe words and 6 human
  ratings (comma-separated). The nonce has no real spelling, so `___` becomes
  one fixed made-up word (see `NONCE`) that the context encoder masks like any
  other word.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from .similarity import Pair, read_contexts, read_similarity_pairs
from ..errors import Errors
from spacy_bertram.project_support import PathLike

#: What `___` becomes in a Chimera passage: "wug", the classic made-up word
#: (Berko 1958). It is masked in every context, so its spelling never reaches
#: the encoder; it only has to be one word that the passages do not contain.
NONCE = "wug"
CHIMERA_BLANK = "___"
CHIMERA_PATTERN = re.compile(r"^dataset\.l(\d+)\.fixed\.(train|test)\.txt$")
PAIR_FILE_NAMES = ("pairs.tsv", "dataset.tsv")


def find_pairs_file(path: PathLike, what: str) -> Path:
    """`path` itself, or in a directory its pairs.tsv / dataset.tsv / only *.tsv."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise FileNotFoundError(Errors.E349.format(what=what, path=str(path)))
    for name in PAIR_FILE_NAMES:
        if (path / name).is_file():
            return path / name
    tsvs = sorted(path.glob("*.tsv"))
    if len(tsvs) == 1:
        return tsvs[0]
    raise ValueError(Errors.E350.format(what=what, path=str(path)))


@dataclass
class CrwSet:
    """CRW pairs and every context of each rare word (file order)."""

    path: Path
    pairs: List[Pair]
    contexts: Dict[str, List[str]]

    @property
    def rare_words(self) -> List[str]:
        return sorted({rare for _, rare, _ in self.pairs})


def read_crw(directory: PathLike) -> CrwSet:
    """pairs.tsv and contexts/<rare word>.txt; a rare word without a file has no contexts."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(Errors.E351.format(directory=str(directory)))
    pairs_path = find_pairs_file(directory, "CRW")
    pairs = read_similarity_pairs(pairs_path, allow_header=False)
    if len(pairs) < 2:
        raise ValueError(Errors.E352.format(pairs_path=str(pairs_path), n_pairs=len(pairs)))
    context_dir = directory / "contexts"
    contexts = {rare: read_contexts(context_dir, rare) for rare in {p[1] for p in pairs}}
    if not any(contexts.values()):  # a wrong layout, not a set without contexts
        raise ValueError(
            Errors.E353.format(pairs_path=str(pairs_path), context_file=str(context_dir / "<rare word>.txt"))
        )
    return CrwSet(directory, pairs, contexts)


@dataclass
class CardSet:
    """The Card-660 pairs usable as single words, and what was dropped and why."""

    path: Path
    pairs: List[Pair]
    dropped: Dict[str, int] = field(default_factory=dict)
    dropped_examples: Dict[str, List[str]] = field(default_factory=dict)


def single_word_problem(word: str) -> Optional[str]:
    """Why a word is not usable as one alphabetic token (None if it is)."""
    if "_" in word or any(ch.isspace() for ch in word):
        return "multiword"
    if not word.isalpha():
        return "not alphabetic"
    return None


def read_card(path: PathLike) -> CardSet:
    """Card-660 pairs of two alphabetic single words; the rest counted by reason."""
    pairs_path = find_pairs_file(path, "Card-660")
    kept: List[Pair] = []
    dropped: Counter = Counter()
    examples: Dict[str, List[str]] = {}
    for pair in read_similarity_pairs(pairs_path, allow_header=False):
        reasons = [r for r in map(single_word_problem, pair[:2]) if r]
        if not reasons:
            kept.append(pair)
            continue
        reason = "multiword" if "multiword" in reasons else reasons[0]
        dropped[reason] += 1
        sample = examples.setdefault(reason, [])
        if len(sample) < 5:
            sample.append(f"{pair[0]} / {pair[1]}")
    if len(kept) < 2:
        raise ValueError(Errors.E354.format(pairs_path=str(pairs_path), n_kept=len(kept)))
    return CardSet(pairs_path, kept, dict(dropped), examples)


@dataclass
class ChimeraItem:
    """One Chimera: the passage's sentences with the nonce written NONCE, probes, ratings."""

    item_id: str
    sentences: List[str]
    context_text: str  # the passage without the nonce (for the context-word baseline)
    probes: List[str]
    ratings: List[float]


def _squash(text: str) -> str:
    return " ".join(text.split())


def parse_chimera_line(line: str, where: str, nonce: str = NONCE) -> ChimeraItem:
    """One tab-separated line: id, passage, probes, ratings."""
    fields = line.rstrip("\r\n").split("\t")
    if len(fields) != 4:
        raise ValueError(Errors.E355.format(where=where, n_fields=len(fields)))
    item_id, passage, probe_field, rating_field = fields
    if CHIMERA_BLANK not in passage:
        raise ValueError(Errors.E356.format(where=where, CHIMERA_BLANK=CHIMERA_BLANK))
    if re.search(rf"(?<!\w){re.escape(nonce)}(?!\w)", passage, re.IGNORECASE):
        raise ValueError(Errors.E357.format(where=where, nonce=nonce))
    probes = [p.strip() for p in probe_field.split(",") if p.strip()]
    try:
        ratings = [float(r) for r in rating_field.split(",") if r.strip()]
    except ValueError:
        raise ValueError(Errors.E358.format(where=where, rating_field=rating_field)) from None
    if len(probes) != len(ratings):
        raise ValueError(Errors.E359.format(where=where, n_probes=len(probes), n_ratings=len(ratings)))
    if len(probes) < 2:
        raise ValueError(Errors.E360.format(where=where, n_probes=len(probes)))
    # Spaces around the nonce also split the few blanks glued to a word ("reeves___").
    sentences = [_squash(s.replace(CHIMERA_BLANK, f" {nonce} ")) for s in passage.split("@@")]
    context_text = _squash(passage.replace("@@", " ").replace(CHIMERA_BLANK, " "))
    return ChimeraItem(item_id.strip(), [s for s in sentences if s], context_text, probes, ratings)


def chimera_files(directory: PathLike) -> List[Tuple[str, Path]]:
    """("l2.train", path), ... for the Chimera files present, by length then split."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(Errors.E361.format(directory=str(directory)))
    found = []
    for path in directory.iterdir():
        match = CHIMERA_PATTERN.match(path.name)
        if match and path.is_file():
            found.append(((int(match.group(1)), match.group(2)), f"l{match.group(1)}.{match.group(2)}", path))
    if not found:
        raise ValueError(Errors.E362.format(directory=str(directory)))
    return [(name, path) for _, name, path in sorted(found)]


def read_chimera_file(path: PathLike, nonce: str = NONCE) -> List[ChimeraItem]:
    items = []
    with open(path, encoding="utf8") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                items.append(parse_chimera_line(line, f"{path}: line {n}", nonce))
    if not items:
        raise ValueError(Errors.E363.format(path=str(path)))
    return items


def read_chimeras(directory: PathLike, nonce: str = NONCE) -> Dict[str, List[ChimeraItem]]:
    """Items of every Chimera file present, keyed "l2.train", "l4.test", ..."""
    return {name: read_chimera_file(path, nonce) for name, path in chimera_files(directory)}


__all__: Sequence[str] = [
    "NONCE",
    "CardSet",
    "ChimeraItem",
    "CrwSet",
    "chimera_files",
    "find_pairs_file",
    "parse_chimera_line",
    "read_card",
    "read_chimeras",
    "read_crw",
    "single_word_problem",
]
