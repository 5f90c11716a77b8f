"""The NER workflow end to end on a tiny BERT: folds, both trainings, three systems, metrics, report."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import spacy

from spacy_bertram.evaluation.ner.data import parse_iob, tagged_doc
from spacy_bertram.evaluation.ner.evaluate import evaluate_ner
from spacy_bertram.evaluation.ner.folds import write_folds
from spacy_bertram.evaluation.ner.systems import SYSTEMS, NerTraining, load_systems, train_folds

ROOT = Path(__file__).parent.parent
SENTENCES = [
    "the farmer sold a kumquat at the market", "she ate a sweet orange", "the old dog ran down the road",
    "a kumquat is a small fruit", "the farmer had a red car", "people like the green garden",
]


def tiny_iob(n: int = 24) -> str:
    """Texts whose capitalised-looking words are entities: 'kumquat' a product, 'farmer' a person."""
    types = {"kumquat": "product", "farmer": "person", "market": "facility", "dog": "person"}
    blocks = []
    for i in range(n):
        words = SENTENCES[i % len(SENTENCES)].split()
        blocks.append("\n".join(f"{w}\t{'B-' + types[w] if w in types else 'O'}" for w in words))
    return "\n\t\n".join(blocks) + "\n"


@pytest.mark.slow
def test_the_workflow_runs_on_tiny_data(tmp_path, tiny_bert_path, bertram_assets):
    nlp = spacy.blank("en")
    docs = [tagged_doc(nlp.vocab, t) for t in parse_iob(tiny_iob().splitlines(), "tiny")]
    write_folds(docs, tmp_path / "folds", k=2, seed=0, dev_share=0.2, source="tiny")
    settings = NerTraining(str(ROOT / "configs" / "ner_minilm.cfg"), str(ROOT / "configs" / "ner_minilm_bertram.cfg"),
                           tiny_bert_path, max_steps=3, eval_frequency=3, batch_size=200, learn_rate=1e-3)
    summary = train_folds(tmp_path / "folds", tmp_path / "train", bertram_assets["model"], bertram_assets["store"],
                          settings)
    assert [(r["fold"], r["system"]) for r in summary["runs"]] == [(0, "stock"), (0, "bertram"), (1, "stock"),
                                                                   (1, "bertram")]
    systems = load_systems(tmp_path / "train", 0)
    assert systems["bertram_test_time"].pipe_names == ["bertram", "transformer", "ner"]
    assert systems["bertram_test_time"].get_pipe("bertram").rule == systems["bertram"].get_pipe("bertram").rule
    metrics = evaluate_ner(tmp_path / "folds", tmp_path / "train", tmp_path / "out", n_resamples=50)
    rows = [json.loads(line) for p in sorted((tmp_path / "out").glob("fold-*.jsonl")) for line in p.open()]
    assert sorted(r["id"] for r in rows) == list(range(24))
    assert all(set(r["pred"]) == set(SYSTEMS) for r in rows)
    assert any("kumquat" in [r["words"][i] for i in r["rare"]] for r in rows)  # the component's rule, from counts
    assert metrics["pooled"]["systems"]["stock"]["subsets"]["all"]["n_gold"] == sum(len(d.ents) for d in docs)
    assert (tmp_path / "out" / "f1_by_rarity.png").stat().st_size > 1000
    assert "### Pooled over folds" in (tmp_path / "out" / "report.md").read_text(encoding="utf8")
    again = train_folds(tmp_path / "folds", tmp_path / "train", bertram_assets["model"], bertram_assets["store"],
                        settings)  # finished folds are skipped, not retrained
    assert [r["seconds"] for r in again["runs"]] == [r["seconds"] for r in summary["runs"]]
    changed = train_folds(tmp_path / "folds", tmp_path / "train", bertram_assets["model"], bertram_assets["store"],
                          replace(settings, max_steps=2))  # another setting retrains every run
    assert all(json.loads((tmp_path / "train" / f"fold-{r['fold']}" / f"{r['system']}.ner_run.json").read_text())
               ["settings"]["max_steps"] == 2 for r in changed["runs"])
