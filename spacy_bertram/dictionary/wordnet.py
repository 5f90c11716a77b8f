"""WordNet 3.0 for NLTK, prepared from the Debian package `wordnet-base`.

Rarification (synonyms) and the dictionary's WordNet glosses need WordNet, and the only WordNet these machines can
install is Debian's `wordnet-base` (files in /usr/share/wordnet). NLTK 3.10 cannot
read that directory as it is: it wants `<nltk_data>/corpora/wordnet/` holding
real copies of the files (not symlinks) plus a `lexnames` file that the
Debian package does not ship. `prepare_wordnet` builds that layout once in a
cache directory, atomically, so that concurrent processes never see half a
copy; `load_wordnet` returns a ready `WordNetCorpusReader`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import threading
import warnings
from pathlib import Path
from typing import Dict, Iterable, List, Optional
from ..errors import Errors
from ..fileio import atomic_directory
from ..types import PathLike


#: Environment variable naming a directory with the WordNet 3.0 dict files.
WORDNET_DIR_ENV = "SPACY_BERTRAM_WORDNET_DIR"
#: Environment variable overriding the cache directory of the NLTK layout.
CACHE_DIR_ENV = "SPACY_BERTRAM_CACHE"
#: Where Debian's `wordnet-base` puts the dict files.
DEBIAN_WORDNET_DIRS = ("/usr/share/wordnet",)

#: Files that must be present for NLTK's reader (lexnames is generated).
REQUIRED_FILES = (
    "index.noun",
    "index.verb",
    "index.adj",
    "index.adv",
    "data.noun",
    "data.verb",
    "data.adj",
    "data.adv",
    "noun.exc",
    "verb.exc",
    "adj.exc",
    "adv.exc",
)
#: Optional files copied when present (sense counts; sense index).
OPTIONAL_FILES = ("cntlist.rev", "index.sense", "cntlist", "sentidx.vrb", "sents.vrb")

#: WordNet 3.0's lexicographer files (lexnames(5WN)): number, name, POS number.
LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact "
    "noun.attribute noun.body noun.cognition noun.communication noun.event "
    "noun.feeling noun.food noun.group noun.location noun.motive noun.object "
    "noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time "
    "verb.body verb.change verb.cognition verb.communication verb.competition "
    "verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_POS_NUMBER = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


class WordNetMissingError(RuntimeError):
    """WordNet is not installed; the message says how to install it."""


def lexnames_text() -> str:
    """The `lexnames` file NLTK reads: "NN<TAB>name<TAB>pos-number" per line."""
    lines = []
    for i, name in enumerate(LEXNAMES):
        lines.append(f"{i:02d}\t{name}\t{_POS_NUMBER[name.split('.')[0]]}")
    return "\n".join(lines) + "\n"


def default_cache_dir() -> Path:
    """`~/.cache/spacy-bertram/nltk_data` unless $SPACY_BERTRAM_CACHE is set."""
    base = os.environ.get(CACHE_DIR_ENV)
    if base:
        return Path(base) / "nltk_data"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "spacy-bertram" / "nltk_data"


def is_wordnet_dir(path: Path) -> bool:
    """Whether `path` holds WordNet 3.0's database files (the one test, for the package and the project's scripts)."""
    return path.is_dir() and all((path / name).is_file() for name in REQUIRED_FILES)


def _is_complete_layout(path: Path) -> bool:
    return is_wordnet_dir(path) and all((path / name).is_file() for name in ("lexnames", "index.sense"))


def _candidate_dirs(wordnet_dir: Optional[PathLike]) -> Iterable[Path]:
    if wordnet_dir is not None:
        yield Path(wordnet_dir)
        return
    env = os.environ.get(WORDNET_DIR_ENV)
    if env:
        yield Path(env)
    for d in DEBIAN_WORDNET_DIRS:
        yield Path(d)


def find_wordnet_source(wordnet_dir: Optional[PathLike] = None) -> Path:
    """Directory with the WordNet 3.0 dict files, or WordNetMissingError.

    An explicit `wordnet_dir` is the only candidate when given (a wrong path
    should fail loudly, not fall back silently); otherwise $SPACY_BERTRAM_WORDNET_DIR
    and then Debian's /usr/share/wordnet are tried. A directory that already has
    the NLTK layout (`.../corpora/wordnet` or its parent) is accepted too.
    """
    tried: List[str] = []
    for cand in _candidate_dirs(wordnet_dir):
        for path in (cand, cand / "corpora" / "wordnet", cand / "dict"):
            if is_wordnet_dir(path):
                return path
        tried.append(str(cand))
    raise WordNetMissingError(Errors.E388.format(env=WORDNET_DIR_ENV, tried=", ".join(tried)))


#: Every file `_copy_layout` writes: what the cache's swap replaces.
LAYOUT_FILES = (*REQUIRED_FILES, *OPTIONAL_FILES, "lexnames", "index.sense")


def _copy_layout(source: Path, target: Path, nltk_root: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in REQUIRED_FILES + OPTIONAL_FILES:
        src = source / name
        if src.is_file():
            # copyfile dereferences links: NLTK 3.10 will not read linked files.
            shutil.copyfile(src, target / name)
    lexnames = source / "lexnames"
    if lexnames.is_file():
        shutil.copyfile(lexnames, target / "lexnames")
    else:
        (target / "lexnames").write_text(lexnames_text(), encoding="utf8")
    if not (target / "index.sense").is_file():
        _write_index_sense(target, nltk_root)


def _reader_class():
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class DebianWordNetReader(WordNetCorpusReader):
        """NLTK's reader without the WordNet-version mapping.

        NLTK maps synsets of the "wordnet" package onto the loaded version at
        start-up, which reads `index.sense` (not in `wordnet-base`) through the
        global data path. We load WordNet 3.0 itself, so there is nothing to map.
        """

        def map_wn(self, version="wordnet"):
            return None

    return DebianWordNetReader


def _open_reader(directory: Path, nltk_root: Path):
    register_nltk_data(nltk_root)  # NLTK 3.10 refuses roots outside its data path
    with warnings.catch_warnings():
        # We do not ship the multilingual (OMW) data; NLTK warns about it.
        warnings.simplefilter("ignore")
        return _reader_class()(str(directory), None)


def _write_index_sense(directory: Path, nltk_root: Path) -> None:
    """Generate `index.sense` (sense key, offset, sense number, tag count).

    `wordnet-base` lacks it (it is in `wordnet-sense-index`), but NLTK's global
    `nltk.corpus.wordnet` reads it at start-up and for `lemma_from_key`. The
    sense keys come from NLTK's own parsing of the data files; this takes about
    10-20 s once per cache.
    """
    reader = _open_reader(directory, nltk_root)
    tag_counts: Dict[str, str] = {}
    cntlist = directory / "cntlist.rev"  # "sense_key sense_number tag_count" per line
    if cntlist.is_file():
        for line in cntlist.read_text(encoding="utf8").splitlines():
            fields = line.split()
            if len(fields) == 3:  # keys may carry adjective markers: preceding(a)
                tag_counts[re.sub(r"\((a|p|ip)\)", "", fields[0])] = fields[2]
    entries: Dict[str, str] = {}
    for synset in reader.all_synsets():
        for lemma in synset.lemmas():
            key = lemma.key().lower()
            if key in entries:
                continue  # "A" and "a" in one synset share a sense key
            offsets = reader._lemma_pos_offset_map[lemma.name().lower()]
            # satellites are numbered among all adjective senses (index.adj)
            pos_offsets = offsets.get("a" if synset.pos() == "s" else synset.pos(), [])
            number = pos_offsets.index(synset.offset()) + 1 if synset.offset() in pos_offsets else 1
            entries[key] = f"{key} {synset.offset():08d} {number} {tag_counts.get(key, 0)}\n"
    lines = [entries[k] for k in sorted(entries)]
    (directory / "index.sense").write_text("".join(lines), encoding="utf8")


def prepare_wordnet(wordnet_dir: Optional[PathLike] = None, cache_dir: Optional[PathLike] = None) -> Path:
    """Build `<cache_dir>/corpora/wordnet/` for NLTK and return `<cache_dir>`.

    The copy is made in a temporary sibling directory and swapped into place,
    so a reader never sees a partial layout; an existing complete layout is
    reused. `cache_dir` defaults to `default_cache_dir()`.
    """
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    final = root / "corpora" / "wordnet"
    # An explicit source is checked even when a cached copy exists: a wrong path
    # should fail loudly.
    source = find_wordnet_source(wordnet_dir) if wordnet_dir is not None else None
    if _is_complete_layout(final):
        return root
    if source is None:
        source = find_wordnet_source()
    # The copy is swapped in whole (`fileio.atomic_directory`): an older, incomplete copy goes, and anything
    # else found in the folder (not a file of this layout) is carried over, never deleted.
    with atomic_directory(final, LAYOUT_FILES) as tmp:
        _copy_layout(source, tmp, root)
    return root


def register_nltk_data(nltk_data_dir: PathLike) -> None:
    """Put the directory first on NLTK's search path ($NLTK_DATA and nltk.data.path)."""
    import nltk

    path = str(nltk_data_dir)
    current = os.environ.get("NLTK_DATA", "")
    parts = [p for p in current.split(os.pathsep) if p]
    if path not in parts:
        os.environ["NLTK_DATA"] = os.pathsep.join([path] + parts)
    if path in nltk.data.path:
        nltk.data.path.remove(path)
    nltk.data.path.insert(0, path)


_LOCK = threading.Lock()
_READERS: dict = {}


def check_nltk(command: str = "load_wordnet") -> None:
    """NLTK, WordNet's reader, is the `[dictionary]` extra: a command that reads WordNet checks it before any work,
    and the error names that command and the extra (found without importing NLTK, which takes a second)."""
    try:
        found = importlib.util.find_spec("nltk") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise WordNetMissingError(Errors.E389.format(command=command))


def load_wordnet(
    wordnet_dir: Optional[PathLike] = None, cache_dir: Optional[PathLike] = None, *, command: str = "load_wordnet"
):
    """A (cached) NLTK `WordNetCorpusReader` over WordNet 3.0.

    Raises WordNetMissingError with install instructions when WordNet or NLTK is absent (`command`: who asked,
    in the message).
    """
    check_nltk(command)
    key = (str(wordnet_dir), str(cache_dir))
    with _LOCK:
        if key not in _READERS:
            root = prepare_wordnet(wordnet_dir, cache_dir)
            _READERS[key] = _open_reader(root / "corpora" / "wordnet", root)
        return _READERS[key]


def wordnet_available(wordnet_dir: Optional[PathLike] = None) -> bool:
    """True when `load_wordnet` can succeed (used by tests to skip)."""
    try:
        find_wordnet_source(wordnet_dir)
    except WordNetMissingError:
        return _is_complete_layout(default_cache_dir() / "corpora" / "wordnet")
    return True
