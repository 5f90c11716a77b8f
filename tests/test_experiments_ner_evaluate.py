"""The NER workflows end to end on a tiny BERT: folds, both trainings, the systems, metrics, report; ner-full's
variants, seeds and checkpoints; the runs trained at once on Dask."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import List

import numpy as np
import pytest
import spacy

from bertram_experiments.ner.data import parse_iob, tagged_doc
from bertram_experiments.ner.evaluate import evaluate_ner
from bertram_experiments.ner.folds import write_folds
from bertram_experiments.ner.predict import share_vector_caches
from bertram_experiments.ner.full import evaluate_full, seed_dir
from bertram_experiments.ner.systems import SYSTEMS, NerTraining, load_systems, train_folds
from tests.util import tiny_iob

ROOT = Path(__file__).parent.parent


@pytest.mark.slow
def test_the_workflow_runs_on_tiny_data(tmp_path, tiny_bert_path, bertram_assets):
    nlp = spacy.blank("en")
    docs = [tagged_doc(nlp.vocab, t) for t in parse_iob(tiny_iob().splitlines(), "tiny")]
    write_folds(docs, tmp_path / "folds", k=2, seed=0, dev_share=0.2, source="tiny")
    settings = NerTraining(
        str(ROOT / "configs" / "ner_minilm.cfg"),
        str(ROOT / "configs" / "ner_minilm_bertram.cfg"),
        tiny_bert_path,
        max_steps=3,
        eval_frequency=3,
        batch_size=200,
        learn_rate=1e-3,
    )
    summary = train_folds(
        tmp_path / "folds", tmp_path / "train", bertram_assets["model"], bertram_assets["store"], settings
    )
    assert [(r["fold"], r["system"]) for r in summary["runs"]] == [
        (0, "stock"),
        (0, "bertram"),
        (1, "stock"),
        (1, "bertram"),
    ]
    systems = load_systems(tmp_path / "train", 0)
    assert systems["bertram_test_time"].pipe_names == ["bertram", "transformer", "ner"]
    assert (
        systems["bertram_test_time"].get_pipe("bertram").word_sources.rule
        == systems["bertram"].get_pipe("bertram").word_sources.rule
    )
    metrics = evaluate_ner(tmp_path / "folds", tmp_path / "train", tmp_path / "out", n_resamples=50)
    rows = [json.loads(line) for p in sorted((tmp_path / "out").glob("fold-*.jsonl")) for line in p.open()]
    assert sorted(r["id"] for r in rows) == list(range(24))
    assert all(set(r["pred"]) == set(SYSTEMS) for r in rows)
    assert any("kumquat" in [r["words"][i] for i in r["rare"]] for r in rows)  # the component's rule, from counts
    assert metrics["pooled"]["systems"]["stock"]["subsets"]["all"]["n_gold"] == sum(len(d.ents) for d in docs)
    assert (tmp_path / "out" / "f1_by_rarity.png").stat().st_size > 1000
    assert "### Pooled over folds" in (tmp_path / "out" / "report.md").read_text(encoding="utf8")
    again = train_folds(
        tmp_path / "folds", tmp_path / "train", bertram_assets["model"], bertram_assets["store"], settings
    )  # finished folds are skipped, not retrained
    assert [r["seconds"] for r in again["runs"]] == [r["seconds"] for r in summary["runs"]]
    changed = train_folds(
        tmp_path / "folds",
        tmp_path / "train",
        bertram_assets["model"],
        bertram_assets["store"],
        replace(settings, max_steps=2),
    )  # another setting retrains every run
    assert all(
        json.loads((tmp_path / "train" / f"fold-{r['fold']}" / f"{r['system']}.ner_run.json").read_text())["settings"][
            "max_steps"
        ]
        == 2
        for r in changed["runs"]
    )


@pytest.mark.slow
def test_ner_full_pools_variants_seeds_and_checkpoints(tmp_path, tiny_bert_path, bertram_assets):
    nlp = spacy.blank("en")
    docs = [tagged_doc(nlp.vocab, t) for t in parse_iob(tiny_iob().splitlines(), "tiny")]
    write_folds(docs, tmp_path / "folds", k=2, seed=0, dev_share=0.2, source="tiny")
    base = NerTraining(
        str(ROOT / "configs" / "ner_minilm.cfg"),
        str(ROOT / "configs" / "ner_minilm_bertram.cfg"),
        tiny_bert_path,
        max_steps=4,
        eval_frequency=2,
        batch_size=200,
        learn_rate=1e-3,
    )
    runs = {
        ("tuned", 0): replace(base, freeze=False, checkpoints=(2,)),
        ("tuned", 1): replace(base, freeze=False, seed=1),
        ("frozen", 0): base,
    }
    for (variant, seed), settings in runs.items():
        summary = train_folds(
            tmp_path / "folds",
            seed_dir(tmp_path / "train", variant, seed),
            bertram_assets["model"],
            bertram_assets["store"],
            settings,
        )
        drifts = [r["embedding_drift"] for r in summary["runs"]]
        assert all(d > 0 for d in drifts) if variant == "tuned" else drifts == [0.0] * 4  # fine-tuned: they moved
    assert (
        seed_dir(tmp_path / "train", "tuned", 0) / "fold-1" / "bertram" / "checkpoints" / "step-2" / "config.cfg"
    ).is_file()
    seeds = [load_systems(seed_dir(tmp_path / "train", "tuned", s), 0) for s in (0, 1)]
    assert seeds[0]["bertram_without"].pipe_names == ["transformer", "ner"]
    caches = {}
    share_vector_caches([*seeds[0].values(), *seeds[1].values()], caches)  # one BERTRAM model: one cache
    assert len(caches) == 1 and all(
        nlp.get_pipe("bertram").cache is next(iter(caches.values()))
        for systems in seeds
        for nlp in systems.values()
        if "bertram" in nlp.pipe_names
    )
    metrics = evaluate_full(tmp_path / "folds", tmp_path / "train", tmp_path / "out", n_resamples=50)
    tuned = metrics["variants"]["tuned"]
    assert tuned["seed_list"] == [0, 1] and tuned["seeds"] == 2 and metrics["variants"]["frozen"]["seeds"] == 1
    n_entities = sum(len(d.ents) for d in docs)
    assert tuned["systems"]["stock"]["subsets"]["all"]["n_gold"] == 2 * n_entities  # counts summed over seeds
    gain = tuned["delta_f1"]["bertram"]["rare"]
    assert len(gain["per_seed"]) == 2 and set(gain) >= {"texts", "texts_and_seeds"}
    assert [p["step"] for p in tuned["curve"]["points"]] == [2, 4] and metrics["variants"]["frozen"]["curve"] is None
    assert tuned["curve"]["points"][-1]["model"] == "model-best"
    gradients = tuned["listener_gradient"]["systems"]
    assert set(gradients) == {"stock", "bertram"} and all(g["n_rare"] + g["n_other"] > 0 for g in gradients.values())
    assert all(g["other"] > 0 for g in gradients.values())  # the NER's loss reaches the tokens through the listener
    assert (tmp_path / "out" / "tuned" / "seed-0" / "step-2" / "fold-0.jsonl").is_file()
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf8")
    assert "embeddings fine-tuned" in report and "ΔF1 [95% CI: texts and seeds]" in report
    assert (tmp_path / "out" / "learning_curve.png").stat().st_size > 1000


def trained_weights(training_dir: Path, fold: int, system: str) -> List[np.ndarray]:
    nlp = spacy.load(training_dir / f"fold-{fold}" / system / "model-best")
    return [
        node.get_param(name)
        for pipe in ("transformer", "ner")
        for node in nlp.get_pipe(pipe).model.walk()
        for name in node.param_names
        if node.has_param(name)
    ]


@pytest.mark.slow
def test_runs_train_at_once_on_a_local_dask_cluster(tmp_path, tiny_bert_path, bertram_assets):
    """Two worker processes train the four runs as this process does one after the other: the same
    trainings (seed, data, config) up to float noise, each run marked done, a rerun skips them.

    Noise only: BLAS sums in another order with another thread count, and Adam turns a near-zero
    gradient's last bits into a step of the learning rate, so weights agree to a few such steps
    (a wrong seed would differ by the NER layers' initial scale, ~0.1)."""
    pytest.importorskip("distributed")
    from spacy_bertram.training.distributed import open_client

    nlp = spacy.blank("en")
    docs = [tagged_doc(nlp.vocab, t) for t in parse_iob(tiny_iob().splitlines(), "tiny")]
    write_folds(docs, tmp_path / "folds", k=2, seed=0, dev_share=0.2, source="tiny")
    settings = NerTraining(
        str(ROOT / "configs" / "ner_minilm.cfg"),
        str(ROOT / "configs" / "ner_minilm_bertram.cfg"),
        tiny_bert_path,
        max_steps=3,
        eval_frequency=3,
        batch_size=200,
        learn_rate=1e-3,
        freeze=False,
    )
    model, store = bertram_assets["model"], bertram_assets["store"]
    here = train_folds(tmp_path / "folds", tmp_path / "here", model, store, settings)
    client, close = open_client(None, 2, ())
    try:
        there = train_folds(
            tmp_path / "folds", tmp_path / "dask", model, store, settings, client=client, torch_threads=1
        )
        again = train_folds(tmp_path / "folds", tmp_path / "dask", model, store, settings, client=client)
    finally:
        close()
    assert [(r["fold"], r["system"]) for r in there["runs"]] == [(r["fold"], r["system"]) for r in here["runs"]]
    assert [r["embedding_drift"] for r in there["runs"]] == pytest.approx(
        [r["embedding_drift"] for r in here["runs"]], rel=0.05
    )
    assert [r["seconds"] for r in again["runs"]] == [r["seconds"] for r in there["runs"]]  # skipped, not retrained
    for fold in (0, 1):
        for system in ("stock", "bertram"):
            assert (tmp_path / "dask" / f"fold-{fold}" / f"{system}.ner_run.json").is_file()
            pairs = zip(
                trained_weights(tmp_path / "here", fold, system), trained_weights(tmp_path / "dask", fold, system)
            )
            assert all(np.allclose(a, b, atol=2 * settings.max_steps * settings.learn_rate) for a, b in pairs)
