"""Biomedical NER from the NERO corpus (PubMed sentences annotated with entity types), as IOB lines.

NERO-nlp 0.0.8 on PyPI ships the corpus as one tab-separated file of annotation rows
(NERO/annotation_results.txt): one row per annotated mention, its sentence
(`sentenceText`, tokens separated by spaces) and the set it was annotated in
(`procset`). The `manualset3` set holds about 23,700 PubMed sentences, each annotated
once. A sentence becomes a text of `token<TAB>tag` lines: each mention of a kept type
is found as a run of the sentence's tokens (the first place it occurs), overlapping
mentions keep the longer, and a sentence where a kept mention cannot be found is left
out rather than given a wrong gold (annotator test rows are left out the same way).
The kept types are the classic biomedical ones, so the task is named entities of
technical vocabulary: rare words are the rule here, not the exception.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

NERO_SET = "manualset3"
NERO_TYPES = ("Disease", "Chemical", "Drug", "Protein", "Cell", "Organism")
N_COLUMNS = 31
ENTITY, ENTITY_TYPE, SENTENCE, PROCSET = 8, 9, 29, 30


def nero_sentences(lines: Iterable[bytes], procset: str = NERO_SET) -> Dict[str, List[Tuple[str, str]]]:
    """{sentence: [(mention, type), ...]} of `procset`, in file order (the header line skipped)."""
    sentences: Dict[str, List[Tuple[str, str]]] = OrderedDict()
    for number, raw in enumerate(lines):
        parts = raw.decode("utf8", errors="replace").rstrip("\r\n").split("\t")
        if number == 0 or len(parts) != N_COLUMNS or parts[PROCSET] != procset:
            continue
        sentences.setdefault(parts[SENTENCE].strip(), []).append((parts[ENTITY].strip(), parts[ENTITY_TYPE].strip()))
    return sentences


def find_tokens(tokens: Sequence[str], mention: Sequence[str]) -> Optional[int]:
    """Where `mention`'s tokens first occur as a run of `tokens` (None if they do not)."""
    n = len(mention)
    for start in range(len(tokens) - n + 1):
        if list(tokens[start : start + n]) == list(mention):
            return start
    return None


def sentence_tags(
    sentence: str, mentions: Sequence[Tuple[str, str]], types: Sequence[str] = NERO_TYPES
) -> Optional[List[Tuple[str, str]]]:
    """(token, IOB tag) pairs, or None when a kept mention is not a run of the sentence's tokens."""
    tokens = sentence.split()
    spans = []
    for mention, label in mentions:
        if label not in types:
            continue
        words = mention.split()
        start = find_tokens(tokens, words) if words else None
        if start is None:
            return None
        spans.append((start, start + len(words), label))
    tags = ["O"] * len(tokens)
    for start, end, label in sorted(set(spans), key=lambda s: (s[0] - s[1], s[0])):  # longer spans first
        if all(tag == "O" for tag in tags[start:end]):
            tags[start:end] = [f"B-{label}"] + [f"I-{label}"] * (end - start - 1)
    return list(zip(tokens, tags))


def nero_iob(
    lines: Iterable[bytes], max_texts: Optional[int] = None, seed: int = 0, types: Sequence[str] = NERO_TYPES
) -> str:
    """IOB text (a blank line between sentences) of the kept sentences; `max_texts` of them, a seeded sample."""
    texts = [
        tags
        for sentence, mentions in nero_sentences(lines).items()
        if (tags := sentence_tags(sentence, mentions, types))
    ]
    if max_texts is not None and max_texts < len(texts):
        texts = random.Random(seed).sample(texts, max_texts)
    return "\n\n".join("\n".join(f"{token}\t{tag}" for token, tag in tags) for tags in texts) + "\n"


__all__ = ["NERO_SET", "NERO_TYPES", "find_tokens", "nero_iob", "nero_sentences", "sentence_tags"]
