"""Definitions out of GCIDE entries (the 1913 Webster and later additions, dictd format).

`dictd.py` finds an entry's text; this turns the text into definitions. An
entry is a header (headword, pronunciation, part of speech and etymology, the
etymology a bracket that may run over several lines) and paragraphs: numbered
senses, phrases ("{To run down} ..."), notes, synonym lists and quotations.
Only the senses are kept, without their source tags ("[1913 Webster]"),
citations ("--Shak.") or markup; obsolete senses ("[Obs.]") are dropped, as
BERTRAM should learn what a word means now. GCIDE took some senses from
WordNet 1.5 (tagged "[WordNet 1.5]"); `wordnet_derived` marks them, so a
GCIDE-only store can leave them out where WordNet must not leak in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple

#: Longest definition kept, in characters (cut at a word boundary).
MAX_CHARS = 400
#: Paragraphs indented deeper than this are quotations or the rest of a note.
MAX_INDENT = 7

_HEADWORD = re.compile(r"^(\S[^\\]*?) \\")
_SKIP_STARTS = ("{", "Syn", "Note:", '"', "--", "[")
_CHAR_MARKUP = re.compile(r"(?<=\w)\[([^\]\s]{1,5})\]|\[([^\]\s]{1,5})\](?=\w)")
_CITATION = re.compile(r"\s*--\s?[A-Z][\w.'&]*(?:\s+(?:[A-Z]|\d|of\b|the\b|xx|[ivxl]+\.)[\w.'&]*)*")
_LEADING_MARK = re.compile(r"^(?:\d+\.\s*|\([a-z]\)\s*)+")
_INNER_MARK = re.compile(r"\s\([a-z]\)\s")
#: A trailing list of derived forms: "-- Pho`to*syn*thet"ic, a."
_DERIVED_FORMS = re.compile(r"\s--\s\S*[*`\"].*$")


@dataclass(frozen=True)
class Definition:
    """One sense: the text, and whether GCIDE took it from WordNet."""

    text: str
    wordnet_derived: bool


def headword(entry: str) -> Optional[str]:
    """The headword as the entry writes it ("Kumquat" of "Kumquat \\Kum"quat\\ ..."), or None."""
    match = _HEADWORD.match(entry)
    return match.group(1).strip() if match else None


def _char(match: "re.Match[str]") -> str:
    """GCIDE's letter markup: "[ae]" -> "ae", "[a^]" / "[=a]" -> "a"."""
    content = match.group(1) or match.group(2)
    if content.lower() in ("ae", "oe"):
        return content
    letters = [c for c in content if c.isalpha()]
    return letters[0] if letters else ""


def _split_header(lines: List[str]) -> int:
    """Index of the first body line: the header runs until its brackets and parentheses close."""
    depth = 0
    for n, line in enumerate(lines):
        depth += line.count("[") + line.count("(") - line.count("]") - line.count(")")
        if depth <= 0:
            return n + 1
    return len(lines)


def _tags_and_text(paragraph: str) -> Tuple[List[str], str]:
    """Top-level [...] groups (source tags, etymologies, labels) and the text without them."""
    tags: List[str] = []
    kept: List[str] = []
    depth, start = 0, 0
    for i, char in enumerate(paragraph):
        if char == "[":
            if depth == 0:
                start = i
            depth += 1
        elif char == "]" and depth > 0:
            depth -= 1
            if depth == 0:
                tags.append(paragraph[start + 1 : i])
        elif depth == 0:
            kept.append(char)
    return tags, "".join(kept)


def clean(text: str) -> str:
    """Markup out: letter markup, braces, citations, sense marks; whitespace collapsed."""
    text = _CHAR_MARKUP.sub(_char, text)
    tags_removed = _tags_and_text(text)[1]
    text = _DERIVED_FORMS.sub("", " ".join(tags_removed.replace("{", "").replace("}", "").split()))
    text = _CITATION.sub("", text)
    text = _LEADING_MARK.sub("", text)
    text = _INNER_MARK.sub(" ", text).strip(" ;,:")
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS].rsplit(" ", 1)[0]
    return text


def _paragraphs(body: List[str]) -> Iterator[List[str]]:
    current: List[str] = []
    for line in body:
        if line.strip():
            current.append(line)
        elif current:
            yield current
            current = []
    if current:
        yield current


def definitions(entry: str) -> List[Definition]:
    """The current senses of one entry, in the entry's order."""
    lines = entry.splitlines()
    if not lines or headword(entry) is None:
        return []
    found: List[Definition] = []
    seen = set()
    for paragraph in _paragraphs(lines[_split_header(lines) :]):
        first = paragraph[0]
        indent = len(first) - len(first.lstrip())
        if indent > MAX_INDENT or first.lstrip().startswith(_SKIP_STARTS):
            continue
        text = "\n".join(
            line for line in paragraph if len(line) - len(line.lstrip()) <= MAX_INDENT + 3
        )  # drop indented quotations
        tags = _tags_and_text(_CHAR_MARKUP.sub(_char, text))[0]
        if any(tag.strip().startswith("Obs") for tag in tags):
            continue
        cleaned = clean(text)
        if len(cleaned.split()) < 2 or not any(c.isalpha() for c in cleaned) or cleaned in seen:
            continue
        seen.add(cleaned)
        found.append(Definition(cleaned, any("WordNet" in tag for tag in tags)))
    return found
