"""NERO's annotation rows become IOB texts: kept types only, mentions found as token runs, longer spans
first, sentences with a mention that cannot be found left out; read out of the wheel once."""

from __future__ import annotations

import zipfile

import spacy

from bertram_experiments.ner.data import load_ner_docs
from bertram_experiments.ner.nero import nero_iob, sentence_tags
from tests.util import load_script

rd = load_script("registry_data")
HEADER = "\t".join(f"c{i}" for i in range(31))


def row(mention: str, label: str, sentence: str, procset: str = "manualset3") -> str:
    cells = [""] * 31
    cells[8], cells[9], cells[29], cells[30] = mention, label, sentence, procset
    return "\t".join(cells)


ROWS = [
    HEADER,
    row("kumquat extract", "Chemical", "the kumquat extract cured gout in mice"),
    row("kumquat", "Organism", "the kumquat extract cured gout in mice"),
    row("gout", "Disease", "the kumquat extract cured gout in mice"),
    row("mice", "Organism", "the kumquat extract cured gout in mice"),
    row("cured", "Process", "the kumquat extract cured gout in mice"),  # not a kept type
    row("insulin receptor", "Protein", "binding to the insulin-receptor was weak"),  # not a token run
    row("TNF", "Protein", "TNF rose", procset="bind"),  # another set
    row("p53", "Protein", "p53 \r was mutated"),
]


def test_mentions_become_iob_tags_the_longer_span_first():
    tags = sentence_tags(
        "the kumquat extract cured gout in mice",
        [("kumquat", "Organism"), ("kumquat extract", "Chemical"), ("cured", "Process")],
    )
    assert tags == [
        ("the", "O"),
        ("kumquat", "B-Chemical"),
        ("extract", "I-Chemical"),
        ("cured", "O"),
        ("gout", "O"),
        ("in", "O"),
        ("mice", "O"),
    ]
    assert sentence_tags("a b c", [("b d", "Protein")]) is None


def test_nero_rows_become_iob_texts_of_the_kept_sentences():
    text = nero_iob([line.encode("utf8") for line in ROWS])
    texts = [block.splitlines() for block in text.strip().split("\n\n")]
    assert [len(t) for t in texts] == [7, 3]  # the insulin sentence is left out, the 'bind' set too
    assert texts[0][1:3] == ["kumquat\tB-Chemical", "extract\tI-Chemical"]
    assert texts[0][4] == "gout\tB-Disease" and texts[0][6] == "mice\tB-Organism"
    assert texts[1] == ["p53\tB-Protein", "was\tO", "mutated\tO"]
    assert nero_iob([line.encode("utf8") for line in ROWS], max_texts=1).count("\n\n") == 0


def test_nero_is_read_out_of_the_wheel_once_and_ner_folds_reads_it(tmp_path):
    (tmp_path / "downloads").mkdir()
    with zipfile.ZipFile(tmp_path / "downloads" / "NERO_nlp-0.0.8-py3-none-any.whl", "w") as wheel:
        wheel.writestr(rd.NERO_MEMBER, "\n".join(ROWS) + "\n")
    path = rd.fetch_nero(tmp_path)
    assert path == tmp_path / "ner" / "nero_pubmed.txt"
    docs = load_ner_docs(str(path), spacy.blank("en").vocab)
    assert [[(e.text, e.label_) for e in doc.ents] for doc in docs] == [
        [("kumquat extract", "Chemical"), ("gout", "Disease"), ("mice", "Organism")],
        [("p53", "Protein")],
    ]
    (tmp_path / "downloads" / "NERO_nlp-0.0.8-py3-none-any.whl").unlink()
    assert rd.fetch_nero(tmp_path) == path  # written once, never fetched again
