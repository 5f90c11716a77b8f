"""training/run.py: resuming killed runs, restarting changed ones, bad input writing nothing."""

from __future__ import annotations

import json

import numpy

import pytest
import torch
from safetensors.numpy import load_file as load_arrays
from safetensors.torch import load_file

from spacy_bertram.model.config import BertramConfig
from spacy_bertram.model.encoder import load_encoder
from spacy_bertram.device import select_device
from spacy_bertram.training.ota import OTASettings
from spacy_bertram.training.run import _check_resume
from spacy_bertram.training.settings import TrainSettings
from spacy_bertram.training.sources import MemoryTrainingSource
from spacy_bertram.training.targets import build_targets

from tests.util import Killed, _kill_at, _train, context_store_of, corpus_lines, write_tiny_bert


def test_killed_run_resumes_and_matches(tiny_encoder_path, source, tmp_path):
    whole = _train(source, tmp_path / "whole", tiny_encoder_path, ablation=False)
    resumed_dir = tmp_path / "resumed"
    with pytest.raises(Killed):
        _train(source, resumed_dir, tiny_encoder_path, ablation=False, on_epoch_end=_kill_at("stage1-context", 1))
    assert not (resumed_dir / "model").exists()
    with pytest.raises(Killed):
        _train(source, resumed_dir, tiny_encoder_path, ablation=False, on_epoch_end=_kill_at("stage3-add", 1))
    resumed = _train(source, resumed_dir, tiny_encoder_path, ablation=False)
    for name in ("model", "stage1-context", "stage2-form", "stage3-add"):
        a = load_file(str(tmp_path / "whole" / name / "weights.safetensors"))
        b = load_file(str(resumed_dir / name / "weights.safetensors"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
    assert resumed["final"] == whole["final"]
    assert [e["loss"] for e in resumed["stages"]["stage3-add"]["epochs"]] == [
        e["loss"] for e in whole["stages"]["stage3-add"]["epochs"]
    ]
    assert not (resumed_dir / "cache").exists()
    metrics = json.loads((resumed_dir / "metrics.json").read_text())
    assert [row["model"] for row in metrics["ablation"]][0].startswith("subword mean")


def test_a_resumed_run_says_once_what_it_takes_over(tiny_bert_path, source, tmp_path):
    """A killed run, run again, names what it loads instead of computing (targets, finished stages) and the
    epoch the stage it stopped in goes on from, in one line through the run's log; a fresh run says nothing."""
    first: list = []
    with pytest.raises(Killed):
        _train(
            source, tmp_path, tiny_bert_path, ablation=False, log=first.append, on_epoch_end=_kill_at("stage3-add", 1)
        )
    again: list = []
    _train(source, tmp_path, tiny_bert_path, ablation=False, log=again.append)
    assert [line for line in first if "resum" in line] == []
    assert [line for line in again if "resum" in line] == [
        f"resuming the run in {tmp_path}: targets loaded; finished stages loaded: stage1-context, stage2-form; "
        "stage3-add from epoch 2 (its checkpoint after epoch 1)"
    ]


def test_a_changed_run_is_not_resumed_and_the_changed_settings_are_named(tiny_bert_path, source, tmp_path):
    _train(source, tmp_path / "run", tiny_bert_path, ablation=False, settings={"epochs": (1, 1, 1)})
    with pytest.raises(ValueError, match=r"\[E277\].*other settings") as err:
        _train(source, tmp_path / "run", tiny_bert_path, ablation=False, settings={"epochs": (2, 1, 1)})
    assert "(settings.epochs: [1, 1, 1] -> [2, 1, 1]); run with the same settings" in str(err.value)
    assert len(str(err.value)) < 300  # not the whole record


def test_a_record_missing_a_setting_is_not_resumed_and_names_it(tmp_path):
    """A record without a setting this version records is a changed setting: refused, naming it (as unset), not
    filled in with a value it may not have trained with."""
    settings = TrainSettings().to_dict()
    run = {"base_model": "m", "settings": settings, "min_count": 1, "device": "cpu"}
    _check_resume(tmp_path, run)  # nothing recorded: a new run
    for missing in ("max_word_pieces", "path_mix", "rank_weight"):
        recorded = {**run, "settings": {k: v for k, v in settings.items() if k != missing}}
        (tmp_path / "progress.json").write_text(json.dumps({"run": recorded, "stages": {}}))
        with pytest.raises(ValueError, match=rf"\[E277\].*\(settings\.{missing}: '\(unset\)' -> .*\); run with the"):
            _check_resume(tmp_path, run)
    (tmp_path / "progress.json").write_text(json.dumps({"run": run, "stages": {}}))
    _check_resume(tmp_path, run)  # the same settings: resumes
    with pytest.raises(ValueError, match=r"\[E277\].*\(settings\.max_contexts: 32 -> 16\); run with the same"):
        _check_resume(tmp_path, {**run, "settings": TrainSettings(BertramConfig(max_contexts=16)).to_dict()})


def test_a_killed_runs_temp_files_are_removed_at_the_next_start(tiny_bert_path, source, tmp_path):
    run = tmp_path / "run"
    with pytest.raises(Killed):
        _train(source, run, tiny_bert_path, ablation=False, on_epoch_end=_kill_at("stage1-context", 1))
    # What SIGKILL leaves mid-checkpoint (an exception cleans up after itself; a kill cannot).
    (run / "checkpoints" / ".stage1-context.k1ll3d.tmp" / "model").mkdir(parents=True)
    (run / "checkpoints" / ".stage1-context.k1ll3d.tmp" / "state.safetensors").write_bytes(b"half")
    _train(source, run, tiny_bert_path, ablation=False)
    assert not [p for p in run.rglob(".*") if p.name.endswith(".tmp")]


def test_restart_replaces_a_run_with_other_settings_and_keeps_other_files(tiny_bert_path, source, tmp_path):
    run = tmp_path / "run"
    _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (1, 1, 1)})
    (run / "notes.txt").write_text("mine")
    fresh = _train(source, tmp_path / "fresh", tiny_bert_path, ablation=False, settings={"epochs": (2, 1, 1)})
    again = _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (2, 1, 1)}, restart=True)
    assert [len(r["epochs"]) for r in again["stages"].values()] == [2, 1, 1]
    assert again["final"] == fresh["final"]  # a clean start, not a resume of the 1-epoch run
    assert (run / "notes.txt").read_text() == "mine"
    recorded = json.loads((run / "progress.json").read_text())
    assert recorded["run"]["settings"]["epochs"] == [2, 1, 1]


def test_a_users_files_in_trains_directories_survive_a_rerun_a_restart_and_force(tiny_bert_path, source, tmp_path):
    """train writes model/, the stages' model directories, targets/ and cache/: a file a user keeps in any of
    them stays through the same command again, --restart and --force; a model directory whose files this package
    did not save is refused before any work, and --force replaces only the model's files."""
    run = tmp_path / "run"
    _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (1, 1, 1)}, keep_cache=True)
    mine = [
        run / "notes.txt",
        run / "model" / "README_mine.txt",
        run / "targets" / "notes.txt",
        run / "cache" / "notes.txt",
        *(d / "notes.txt" for d in sorted(run.glob("stage*"))),
    ]
    assert len(mine) == 7
    for path in mine:
        path.write_text(f"mine: {path.parent.name}")
    _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (1, 1, 1)})  # the finished run again
    _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (2, 1, 1)}, restart=True)
    assert all(path.read_text() == f"mine: {path.parent.name}" for path in mine)
    _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (2, 1, 1)}, force=True)
    assert all(path.read_text() == f"mine: {path.parent.name}" for path in mine)
    (run / "model" / "digests.json").unlink()  # as if the user had put the model files there
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with pytest.raises(
        ValueError,
        match=r"\[E007\] train: .*model' holds config.json \(not written by train, or "
        r"changed since\), counts.tsv .*--force",
    ):
        _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (2, 1, 1)})
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before
    _train(source, run, tiny_bert_path, ablation=False, settings={"epochs": (2, 1, 1)}, force=True)
    assert (run / "model" / "digests.json").is_file() and (run / "model" / "README_mine.txt").is_file()


def test_bad_input_is_a_clear_error_and_writes_nothing(tiny_bert_path, source, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match=r"\[E258\] Only 0 alphabetic words"):
        _train(MemoryTrainingSource({}, {}), out, tiny_bert_path)
    with pytest.raises(ValueError, match=r"\[E258\].*Lower the minimum count"):
        _train(MemoryTrainingSource.from_lines(corpus_lines(20)), out, tiny_bert_path)
    with pytest.raises(ValueError, match=r"\[E295\] --base-model '.*no-such-encoder' is neither a directory"):
        _train(source, out, str(tmp_path / "no-such-encoder"))  # told from the path, before the encoder loads
    with pytest.raises(ValueError, match=r"\[E110\] Context store not found|No context store"):
        _train(tmp_path / "missing.sqlite", out, tiny_bert_path)
    assert not out.exists()
    encoder, tokenizer = load_encoder(tiny_bert_path)
    targets = build_targets(
        source, encoder, tokenizer, tiny_bert_path, min_count=20, ota=OTASettings(steps=1), progress=False
    )
    targets.save(tmp_path / "targets32")
    wider = str(write_tiny_bert(tmp_path / "tiny48", hidden=48))
    with pytest.raises(ValueError, match=r"\[E250\].*width 32.*width 48"):
        _train(source, out, wider, data={"targets": tmp_path / "targets32"})
    assert not out.exists()
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"\[E117\].*no CUDA"):
            select_device(0)


@pytest.mark.parametrize("mode", ["inplace", "add"])  # add: the state cache carries the form vectors as slots
def test_training_with_a_client_gives_the_one_process_model(tiny_bert_path, dask_client, tmp_path, mode):
    store = context_store_of(tmp_path, corpus_lines())
    settings = {"mode": mode, "epochs": (2, 1, 1)}
    data = {"multi_piece_words": 12}
    alone = _train(store, tmp_path / "alone", tiny_bert_path, settings, data, ablation=False, keep_cache=True)
    spread = _train(
        store, tmp_path / "dask", tiny_bert_path, settings, data, ablation=False, keep_cache=True, client=dask_client
    )
    assert alone["targets"]["n_ota"] > 0 and spread["targets"]["n_ota"] == alone["targets"]["n_ota"]
    caches = {
        run: [numpy.load(path) for path in sorted((tmp_path / run / "cache").glob("states-*.npy"))]
        for run in ("alone", "dask")
    }
    assert caches["alone"] and len(caches["alone"]) == len(caches["dask"])
    for states in caches["alone"]:  # add's stage-3 cache is keyed by the form vectors too, which round alike
        same_shape = [other for other in caches["dask"] if other.shape == states.shape]
        assert min(numpy.abs(states - other).max() for other in same_shape) < 1e-4
    targets = [
        load_arrays(str(tmp_path / run / "targets" / "targets.safetensors"))["vectors"] for run in ("alone", "dask")
    ]
    assert numpy.abs(targets[0] - targets[1]).max() < 1e-5
    weights = [load_arrays(str(tmp_path / run / "model" / "weights.safetensors")) for run in ("alone", "dask")]
    assert weights[0].keys() == weights[1].keys()
    assert max(numpy.abs(weights[0][k] - weights[1][k]).max() for k in weights[0]) < 1e-4
    assert json.loads((tmp_path / "dask" / "metrics.json").read_text())["final"]["cosine"] == pytest.approx(
        alone["final"]["cosine"], abs=1e-4
    )


def test_the_reference_implementations_network_trains_and_loads_with_its_settings(tiny_bert_path, source, tmp_path):
    """PAPER_SETTINGS and the reference's n-gram table through `train`: the saved model keeps them."""
    from spacy_bertram import load_bertram
    from spacy_bertram.model.config import PAPER_SETTINGS

    settings = {**PAPER_SETTINGS, "ngram_style": "reference"}
    _train(source, tmp_path / "paper", tiny_bert_path, settings=settings, ablation=False)
    model = load_bertram(tmp_path / "paper" / "model")
    assert (model.config.mimicking, model.config.context_rows, model.config.use_subword_mean) == (
        "linear",
        "reference",
        False,
    )
    assert model.ngram_vocab.style == "reference" and model.ngram_vocab.itos[:2] == ["UNK", "PAD"]
    vectors = model.infer([("kumquat", ["the farmer sold a kumquat at the market"]), ("kumquat", [])])
    assert numpy.isfinite(vectors).all() and not numpy.allclose(vectors[0], vectors[1])


def test_an_unknown_ngram_style_is_refused_by_name():
    with pytest.raises(ValueError, match=r"\[E298\].*ngram_style"):
        TrainSettings(ngram_style="fasttext")
