"""Cleaning the registry corpora's raw text: Wikipedia wikitext to paragraphs, and
speeches to lines (used by scripts/registry_data.py when it builds the embedded corpus).
"""

from __future__ import annotations

import bz2
import html
import io
import re
from typing import Iterator, List, Tuple
from xml.etree import ElementTree


def normalise_space(text: str) -> str:
    """Runs of whitespace as one space, none at the ends: the form corpus lines and their digests compare in."""
    return " ".join(text.split())


_WIKI_DROP_SECTIONS = {
    "see also",
    "references",
    "notes",
    "external links",
    "further reading",
    "bibliography",
    "sources",
    "citations",
    "footnotes",
    "notes and references",
    "works cited",
}
_LINK_NAMESPACES = {"file", "image", "category", "media", "template", "help", "portal", "wikipedia", "wp"}
_WIKI_SUBS = [
    (re.compile(r"<!--.*?-->", re.S), ""),
    (re.compile(r"<ref[^>/]*/>", re.I), ""),
    (re.compile(r"<ref[^>]*>.*?</ref>", re.I | re.S), ""),
    (
        re.compile(
            r"<(math|gallery|timeline|source|syntaxhighlight|pre|score|chem|imagemap|table)\b.*?</\1>", re.I | re.S
        ),
        "",
    ),
    (re.compile(r"<[^<>]{0,300}>"), ""),
]
_TEMPLATE = re.compile(r"\{\{[^{}]*\}\}")
_TABLE = re.compile(r"\{\|[^{}]*?\|\}", re.S)
_INNER_LINK = re.compile(r"\[\[([^\[\]]*)\]\]")
_EXT_LINK = re.compile(r"\[(?:https?:)?//[^\s\]]+\s*([^\]]*)\]")
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$")


def _replace_link(match: "re.Match[str]") -> str:
    parts = match.group(1).split("|")
    target = parts[0].strip()
    prefix = target.split(":", 1)[0].strip().lower() if ":" in target else ""
    if prefix in _LINK_NAMESPACES or re.fullmatch(r"[a-z]{2,3}(-[a-z]+)?", prefix):
        return ""
    text = parts[-1] if len(parts) > 1 else target
    return text.split(":", 1)[1] if ":" in text and prefix else text


def _remove_nested(pattern: "re.Pattern[str]", text: str, repl="") -> str:
    """Apply `pattern` until nothing changes (innermost first: handles nesting)."""
    while True:
        new = pattern.sub(repl, text)
        if new == text:
            return text
        text = new


def strip_wikitext(text: str, min_words: int = 5) -> List[str]:
    """Plain-text paragraphs of a wikitext article (markup, tables, refs, lists of
    references and link-only lines removed)."""
    for pattern, repl in _WIKI_SUBS:
        text = pattern.sub(repl, text)
    text = _remove_nested(_TEMPLATE, text)
    text = _remove_nested(_TABLE, text)
    text = _remove_nested(_INNER_LINK, text, _replace_link)
    text = _EXT_LINK.sub(lambda m: m.group(1), text)
    text = html.unescape(text.replace("'''", "").replace("''", ""))
    paragraphs: List[str] = []
    dropping = False
    for raw in text.split("\n"):
        line = raw.strip()
        heading = _HEADING.match(line)
        if heading:
            dropping = heading.group(2).strip().lower() in _WIKI_DROP_SECTIONS
            continue
        if dropping or not line or line[0] in "{|!}" or "{{" in line or "}}" in line:
            continue
        line = normalise_space(re.sub(r"^[*#:;]+", "", line).replace("()", ""))
        if len(line.split()) >= min_words:
            paragraphs.append(line)
    return paragraphs


def wikipedia_articles(bz2_bytes: bytes) -> Iterator[Tuple[str, str]]:
    """(title, wikitext) of main-namespace, non-redirect pages of a dump."""
    title = ns = text = None
    redirect = False
    with bz2.open(io.BytesIO(bz2_bytes)) as stream:
        for _, elem in ElementTree.iterparse(stream, events=("end",)):
            tag = elem.tag.rsplit("}", 1)[-1]
            if tag == "title":
                title = elem.text
            elif tag == "ns":
                ns = elem.text
            elif tag == "redirect":
                redirect = True
            elif tag == "text":
                text = elem.text or ""
            elif tag == "page":
                if ns == "0" and not redirect and text and not text.lstrip().upper().startswith("#REDIRECT"):
                    yield title or "", text
                title = ns = text = None
                redirect = False
                elem.clear()


_STAGE = re.compile(
    r"\((?:[A-Z][A-Z ,.'\-]*\)|(?:applause|laughter|cheers|boos|crosstalk|inaudible|ph)\b[^()\n]*?(?:\)|\.(?=[A-Z])|$))"
    r"|\[[^\]]*\]",
    re.I | re.M,
)


def speech_lines(text: str) -> Iterator[str]:
    """Paragraphs of a speech without stage directions like (APPLAUSE)."""
    for para in _STAGE.sub(" ", text).split("\n"):
        para = normalise_space(para)
        if para:
            yield para
