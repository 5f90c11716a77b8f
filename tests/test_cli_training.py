"""training/commands.py: the train and targets commands, their shared options, training from a store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest
import typer.main
from safetensors.numpy import load_file
from typer.testing import CliRunner

from spacy_bertram.cli import app
from spacy_bertram.model.config import BertramConfig
from spacy_bertram.training.settings import TrainingData, TrainSettings

from tests.util import context_store_of, corpus_lines, invoke, tiny_train_argv


def test_cli_trains_from_a_context_store(tiny_encoder_path, tmp_path, capsys):
    from spacy_bertram.training.prepare import prepare

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(300, seed=1)) + "\n", encoding="utf8")
    prepare([corpus], tmp_path / "store", min_count=20, progress=False)
    args = tiny_train_argv(tmp_path / "store", tmp_path / "out", tiny_encoder_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(summary) == {"baseline", "final", "model"}
    assert (Path(summary["model"]) / "weights.safetensors").is_file()
    assert (tmp_path / "out" / "ablation-stage3-add").is_dir()
    # The corpus counts go into the model, so the component's "auto" rule uses them.
    from spacy_bertram.context_store import ContextStore
    from spacy_bertram.rarity.frequencies import CountTable

    with ContextStore.open(tmp_path / "store" / "contexts.sqlite") as store:
        expected = dict(store.counts())
    assert CountTable.from_model_dir(summary["model"]).counts == expected
    result = CliRunner().invoke(
        app, ["train", str(tmp_path / "nothing"), str(tmp_path / "out2"), "--base-model", tiny_encoder_path]
    )
    assert result.exit_code == 1
    assert "error:" in result.stderr and not (tmp_path / "out2").exists()


def test_prepare_with_one_path_proposes_a_command_that_keeps_the_corpus_a_corpus(tmp_path, monkeypatch):
    """`prepare lee_news.txt` proposed `prepare assets/corpus lee_news.txt`: the user's corpus as the output."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lee_news.txt").write_text("the farmer sold a kumquat\n", encoding="utf8")
    result = invoke("prepare", "lee_news.txt")
    assert result.exit_code == 1 and "[E206]" in result.output, result.output
    assert "e.g. `prepare lee_news.txt lee_news_prepared`" in result.output, result.output
    result = invoke("prepare", "out")  # no such path: the output, the corpus left out
    assert "e.g. `prepare assets/corpus out`" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lee_news.txt"]  # nothing written


def test_train_refuses_epochs_that_train_no_stage_before_any_work(tmp_path):
    """`train --epochs 0 0 0` ran for minutes and wrote the untrained network as its model, exit 0; inplace
    trains stage 1 alone, so its 0 there is the same. The refusal names --epochs and what to give."""
    store = context_store_of(tmp_path, ["a kumquat grew in the garden"] * 3)
    for epochs, mode, stages in [
        (["0", "0", "0"], "add", "stages 1, 2 and 3"),
        (["0", "20", "30"], "inplace", "stage 1 alone: the first value"),
    ]:
        result = invoke("train", store, tmp_path / "out", "--epochs", *epochs, "--mode", mode, "--no-progress")
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert (
            f"[E294] --epochs {' '.join(epochs)} trains none of the stages the '{mode}' mode runs ({stages}), "
            "so the model would be the untrained network: give one of them 1 or more epochs (the default: "
            "--epochs 100 20 30)"
        ) in " ".join(result.output.split()), result.output
        assert not (tmp_path / "out").exists()


def test_targets_and_train_share_their_word_options(monkeypatch, tmp_path):
    """Declared once for both: the same parameters, in the same order, and `train` passes them on."""
    import spacy_bertram.training.run as run

    context_store_of(tmp_path, ["a kumquat grew in the garden"] * 3)  # c.sqlite: the input is checked first
    monkeypatch.chdir(tmp_path)
    commands = typer.main.get_command(app).commands
    shared = [(p.name, p.default) for p in commands["targets"].params if p.name != "from_targets"]
    assert shared == [(p.name, p.default) for p in commands["train"].params][: len(shared)]
    assert [name for name, _ in shared][:2] == ["contexts", "output"] and len(shared) == 17  # --force included
    assert {"scheduler", "workers"} <= {name for name, _ in shared}
    seen = []
    monkeypatch.setattr(run, "train", lambda *a: seen.extend(a) or {"baseline": 1, "final": 2, "model": "m"})
    result = invoke(
        "train",
        "c.sqlite",
        "out",
        "--min-count",
        "7",
        "--held-out",
        "0.25",
        "--seed",
        "3",
        "--ota-steps",
        "11",
        "--ota-neighbours",
        "2",
        "--no-progress",
        "--epochs",
        "1",
        "2",
        "3",
        "--base-model",
        "an-encoder",
        "--max-contexts",
        "5",
        "--multi-piece-words",
        "40",
        "--multi-piece-min-zipf",
        "3.5",
    )
    assert result.exit_code == 0, result.output
    contexts, output, settings, data, options = seen
    assert (contexts, output) == (Path("c.sqlite"), Path("out")) and data.min_count == 7
    assert data.held_out_fraction == 0.25 and options.progress is False and settings.seed == 3
    assert (data.ota.steps, data.ota.neighbours, data.ota.seed) == (11, 2, 3)
    assert settings.epochs == (1, 2, 3) and data.max_words is None
    assert (data.multi_piece_words, data.multi_piece_min_zipf) == (40, 3.5)
    assert (settings.network.base_model, settings.network.max_contexts) == ("an-encoder", 5)
    assert settings.path_mix == (0.25, 0.25, 0.5) and settings.rank_weight == 0.0
    assert options.client is None  # no --workers or --scheduler: one process
    seen.clear()
    result = invoke("train", "c.sqlite", "out", "--no-path-mix", "--rank-weight", "0.01", "--rank-negatives", "8")
    assert result.exit_code == 0, result.output
    settings = seen[2]
    assert settings.path_mix is None and (settings.rank_weight, settings.rank_negatives) == (0.01, 8)
    seen.clear()
    result = invoke("train", "c.sqlite", "out", "--path-mix", "0.2", "0.2", "0.6")
    assert result.exit_code == 0 and seen[2].path_mix == (0.2, 0.2, 0.6) and seen[2].path_phases is False
    seen.clear()
    result = invoke("train", "c.sqlite", "out", "--path-phases")
    assert result.exit_code == 0 and seen[2].path_phases is True
    result = invoke("train", "c.sqlite", "out", "--path-mix", "0.5", "0.5", "0.5")
    assert result.exit_code != 0 and "[E288]" in result.output and "Traceback" not in result.output


def test_train_options_default_to_the_network_settings_defaults():
    """One default per setting: `train --help` shows BertramConfig's and TrainSettings' own."""
    params = {p.name: p.default for p in typer.main.get_command(app).commands["train"].params}
    network, settings = BertramConfig(), TrainSettings()
    for name in (
        "mode",
        "read_layer",
        "subword_share",
        "own_embedding_for_one_piece",
        "max_contexts",
        "max_seq_length",
    ):
        assert params[name] == getattr(network, name), name
    assert (params["mode"], params["read_layer"], params["subword_share"]) == ("inplace", -2, 0.15)
    assert tuple(params["epochs"]) == settings.epochs and params["inplace_mask_fraction"] == 0.5
    assert tuple(params["path_mix"]) == settings.path_mix and params["rank_weight"] == settings.rank_weight
    assert params["path_phases"] is settings.path_phases is False
    data = TrainingData()
    assert (params["min_count"], params["held_out"], params["definitions_per_word"]) == (
        data.min_count,
        data.held_out_fraction,
        data.definitions_per_word,
    )


def test_targets_from_targets_writes_a_smaller_set_without_recomputing(bertram_assets, tiny_bert_path, tmp_path):
    from spacy_bertram.training.targets import TargetSet

    store = str(bertram_assets["store"])
    whole = tmp_path / "whole"
    result = invoke(
        "targets",
        store,
        str(whole),
        "--base-model",
        tiny_bert_path,
        "--min-count",
        "2",
        "--multi-piece-words",
        "30",
        "--ota-steps",
        "1",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    built = TargetSet.load(whole)
    assert built.info["multi_piece_words"] == 30 and built.info["n_ota"] >= 30
    result = invoke(
        "targets",
        store,
        str(tmp_path / "small"),
        "--from-targets",
        str(whole),
        "--max-words",
        "20",
        "--multi-piece-words",
        "4",
    )
    assert result.exit_code == 0, result.output
    small = TargetSet.load(tmp_path / "small")
    assert (
        sum(not h for h in small.held_out)
        == min(20, built.info["n_corpus"] - sum(built.held_out[: built.info["n_corpus"]])) + 4
    )
    assert json.loads(result.output.strip().splitlines()[-1])["words"] == len(small)
    assert 0 < small.info["n_with_contexts"] <= len(small)


@pytest.mark.slow
def test_targets_on_a_local_cluster_of_processes_give_the_one_process_targets(tiny_bert_path, tmp_path):
    """`targets --workers 2`: worker processes (the arguments pickled, the encoder loaded there) give the same
    OTA targets as one process; with --gpu-id it is a named error before anything is written."""
    store = context_store_of(tmp_path, corpus_lines())
    common = [
        str(store),
        "--base-model",
        tiny_bert_path,
        "--min-count",
        "20",
        "--multi-piece-words",
        "12",
        "--ota-steps",
        "3",
        "--ota-batch",
        "4",
        "--no-progress",
    ]
    runner = CliRunner()
    alone = runner.invoke(app, ["targets", str(store), str(tmp_path / "alone"), *common[1:]])
    assert alone.exit_code == 0, alone.output
    spread = runner.invoke(app, ["targets", str(store), str(tmp_path / "dask"), *common[1:], "--workers", "2"])
    assert spread.exit_code == 0, spread.output
    vectors = [load_file(str(tmp_path / run / "targets.safetensors"))["vectors"] for run in ("alone", "dask")]
    infos = [json.loads((tmp_path / run / "targets.json").read_text())["info"] for run in ("alone", "dask")]
    assert infos[0]["n_ota"] >= 12 and infos[1]["ota"] == infos[0]["ota"]  # the same OTA words, fit and losses
    assert numpy.abs(vectors[0] - vectors[1]).max() < 1e-5
    refused = runner.invoke(
        app, ["targets", str(store), str(tmp_path / "gpu"), *common[1:], "--workers", "2", "--gpu-id", "0"]
    )
    assert refused.exit_code == 1 and "[E290]" in refused.output and not (tmp_path / "gpu").exists()


def test_targets_refuses_to_replace_a_set_made_with_other_settings(bertram_assets, tiny_bert_path, tmp_path):
    """As train and vectors do: targets run again with the same settings redoes the set; with others (a seed, the
    OTA's steps, another selection) it is refused before any work, naming what changed, unless --force."""
    store, out = str(bertram_assets["store"]), tmp_path / "targets"
    argv = ["targets", store, str(out), "--base-model", tiny_bert_path, "--min-count", "2", "--ota-steps", "1"]
    assert invoke(*argv, "--no-progress").exit_code == 0
    again = invoke(*argv, "--no-progress")
    assert again.exit_code == 0, again.output
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    refused = invoke(*argv, "--seed", "1", "--ota-steps", "2")
    assert refused.exit_code == 1 and "[E092] targets: " in refused.output, refused.output
    said = " ".join(refused.output.split())
    assert "ota.seed: 0 -> 1; ota.steps: 1 -> 2; seed: 0 -> 1, by its targets.json" in said and "--force" in said
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    small = tmp_path / "small"
    select = ["targets", store, str(small), "--from-targets", str(out), "--multi-piece-words", "0"]
    assert invoke(*select, "--max-words", "20").exit_code == 0
    refused = invoke(*select, "--max-words", "21")
    assert refused.exit_code == 1 and "selected.max_corpus_words: 20 -> 21" in " ".join(refused.output.split())
    forced = invoke(*argv, "--seed", "1", "--no-progress", "--force")
    assert forced.exit_code == 0, forced.output
    assert json.loads((out / "targets.json").read_text())["info"]["seed"] == 1
