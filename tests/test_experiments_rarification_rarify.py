"""bertram_experiments/rarification/rarify.py: the rarified set's writers (DocBins and test.jsonl, atomically) and
reader. The masking procedure, on a toy classifier and end to end, is tested in
test_experiments_rarification_masking.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bertram_experiments.rarification import rarify as R
from bertram_experiments.rarification.records import UnknownLabelError, as_records, drop_empty, make_docbin

LABELS = ["neg", "pos"]
#: What `rarify` makes of "a great and fun film" (pos) and "an awful fun plot" (neg).
ITEMS = [
    R.RarifiedItem(
        "g",
        "pos",
        "a great and fun film",
        "a [MASK] and [MASK] film",
        "a superb and amusive film",
        [
            R.Substitution(1, "great", "superb", R.SYNONYM, "NN", 7.0),
            R.Substitution(3, "fun", "amusive", R.SYNONYM, "NN", 7.0),
        ],
        0.94,
        0.44,
    ),
    R.RarifiedItem(
        "a",
        "neg",
        "an awful fun plot",
        "an [MASK] fun plot",
        "an afulx fun plot",
        [R.Substitution(1, "awful", "afulx", R.MISSPELLING, "NN", 0.0)],
        0.78,
        0.32,
    ),
]


def test_split_and_writers(tmp_path: Path):
    import spacy
    from spacy.tokens import DocBin

    data = [(f"text number {i}", LABELS[i % 2]) for i in range(20)] + [("", "pos")]
    with pytest.warns(UserWarning):
        items, n_empty = drop_empty(as_records(data))
    train, dev, test = items[6:], items[4:6], items[:4]
    assert (len(train), len(dev), len(test), n_empty) == (14, 2, 4, 1)
    paths = R.write_rarified_dataset(tmp_path / "out", train, dev, ITEMS, LABELS)
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(paths["test"]).get_docs(nlp.vocab))
    assert [d.text for d in docs] == [it.text for it in ITEMS]
    assert docs[0].cats == {"neg": 0.0, "pos": 1.0} and docs[0].user_data["id"] == "g"
    assert len(list(DocBin().from_disk(paths["train"]).get_docs(nlp.vocab))) == 14
    records = R.read_substitutions_jsonl(paths["substitutions"])
    assert records[0]["substitutions"][0]["original"] == "great"
    assert records[0]["substitutions"][0]["kind"] == "synonym"
    json.dumps(records)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "dev.spacy",
        "test.jsonl",
        "test.spacy",
        "train.spacy",
    ]  # no temp files left
    assert [R.substitution_kinds(record) for record in records] == [{"synonym"}, {"misspelling"}]
    with pytest.raises(UnknownLabelError, match=r"\[E370\].*'sports'"):
        make_docbin([("text", "sports")], LABELS)
