"""Running English prose from Debian packages (project side), for the corpus's optional prose part.

Half of the embedded corpus is WordNet glosses, so BERTRAM learns many words from definitions
rather than from text. Debian ships three more sources of natural prose that these machines can
download, each in the format of the program it was packaged for; `build_corpus.py --prose` adds
them to the corpus:

- `r-cran-janeaustenr`: Jane Austen's six novels as R character vectors (one hard-wrapped line
  each) in R's lazy-load database (data/Rdata.rdx + Rdata.rdb), read with the `rdata` package;
- `sword-text-web`: the World English Bible, a SWORD module (compressed OSIS), read with `pysword`;
- `fortunes`: the fortune(6) cookie files, entries separated by lines holding "%".

Each reader takes the folder a .deb was extracted into and yields one paragraph (or verse, or
fortune) per line, whitespace normalised.
"""

from __future__ import annotations

import gzip
import re
import warnings
import zlib
from pathlib import Path
from typing import Any, Iterator, List

from spacy_bertram.training.text_cleaning import normalise_space

AUSTEN_DEB = "r-cran-janeaustenr"
WEB_BIBLE_DEB = "sword-text-web"
FORTUNES_DEB = "fortunes"

_AUSTEN_DATA = "usr/lib/R/site-library/janeaustenr/data"
_SWORD_ROOT = "usr/share/sword"
_WEB_MODULE = "engWEB2015eb"
_FORTUNE_DIR = "usr/share/games/fortunes"
#: Pictures, not prose.
_FORTUNE_SKIP = {"art", "ascii-art"}
#: Chapter and volume headings of the novels ("CHAPTER XII", "VOLUME I", "Chapter 3").
_HEADING = re.compile(r"^(chapter|volume)\s+[\divxlc]+\.?$", re.I)
#: A fortune's attribution line ("-- Mark Twain") and numbered list items stay; overstruck
#: characters (backspace sequences) and tabs do not.
_OVERSTRIKE = re.compile(r".\x08")
_NOTE = re.compile(r"<note\b.*?</note>", re.S)
_MARKUP = re.compile(r"<[^>]+>")
#: A fortune needs this many words and this share of letters to count as text.
_MIN_WORDS = 5
_MIN_LETTER_SHARE = 0.6


def _paragraphs(lines: List[str]) -> Iterator[str]:
    """Hard-wrapped lines joined into paragraphs at blank lines."""
    current: List[str] = []
    for line in lines + [""]:
        if line.strip():
            current.append(line)
            continue
        paragraph = normalise_space(" ".join(current))
        current = []
        if paragraph and not _HEADING.match(paragraph):
            yield paragraph


def austen_lines(root: Path) -> Iterator[str]:
    """The six novels, a paragraph per line (R's lazy-load database: a gzip'd index naming each
    object's offset and length in the .rdb, each object zlib-compressed after a 4-byte length)."""
    folder = Path(root) / _AUSTEN_DATA
    index = _r_object(gzip.decompress((folder / "Rdata.rdx").read_bytes()))
    database = (folder / "Rdata.rdb").read_bytes()
    for name in sorted(index["variables"], key=lambda n: int(index["variables"][n][0])):
        offset, length = (int(v) for v in index["variables"][name])
        lines = [str(line) for line in _r_object(zlib.decompress(database[offset + 4 : offset + length]))]
        yield from _paragraphs(lines)


def _r_object(serialized: bytes) -> Any:
    """One object of R's serialization format, as Python (a lazy-load entry has no RDS header, which
    rdata says in a warning each time)."""
    import rdata

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Unknown file type: assumed RDS")
        return rdata.conversion.convert(rdata.parser.parse_data(serialized))


def web_bible_lines(root: Path) -> Iterator[str]:
    """The World English Bible, a verse per line, footnotes dropped (they sit between words)."""
    from pysword.modules import SwordModules

    modules = SwordModules(str(Path(root) / _SWORD_ROOT))
    modules.parse_modules()
    bible = modules.get_bible_from_module(_WEB_MODULE)
    for verse in bible.get(clean=False, join="\n").split("\n"):
        text = osis_text(verse)
        if text:
            yield text


def osis_text(markup: str) -> str:
    """A verse's words without its OSIS markup; a footnote sits between two words, so it leaves a space."""
    return normalise_space(_MARKUP.sub("", _NOTE.sub(" ", markup)))


def _is_prose(text: str) -> bool:
    letters = sum(c.isalpha() for c in text)
    return len(text.split()) >= _MIN_WORDS and letters >= _MIN_LETTER_SHARE * len(text.replace(" ", ""))


def fortune_lines(root: Path) -> Iterator[str]:
    """Each fortune of every cookie file (not the pictures) on one line."""
    folder = Path(root) / _FORTUNE_DIR
    for path in sorted(folder.iterdir()):
        if path.suffix or path.is_symlink() or path.name in _FORTUNE_SKIP:
            continue  # .dat indexes, .u8 links
        text = _OVERSTRIKE.sub("", path.read_bytes().decode("utf8", errors="replace"))
        for entry in re.split(r"^%$", text, flags=re.M):
            entry = normalise_space(entry)
            if _is_prose(entry):
                yield entry
