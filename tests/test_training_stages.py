"""training/stages.py: the three training stages on the tiny encoder: schedule, plan, parameters, reused states,
inplace, path mix, ranking term."""

from __future__ import annotations

import json
import math

import numpy

import pytest
import torch
from safetensors.torch import load_file

from spacy_bertram.model.config import BertramConfig
from spacy_bertram.model.encoder import load_encoder
from spacy_bertram.training.ota import OTASettings
from spacy_bertram.training.stages import (
    StageSpec,
    TrainingRun,
    TrainSettings,
    combined_init,
    group_keys,
    lr_factor,
    plan_stages,
)
from spacy_bertram.training.targets import build_targets

from tests.util import Killed, SMALL, _kill_at, _train


@pytest.fixture(scope="module")
def tiny_run(tiny_encoder_path, source):
    encoder, tokenizer = load_encoder(tiny_encoder_path)
    targets = build_targets(
        source,
        encoder,
        tokenizer,
        tiny_encoder_path,
        min_count=20,
        held_out_fraction=0.1,
        ota=OTASettings(steps=2),
        progress=False,
    )
    contexts = [source.contexts(w, 6) for w in targets.words]

    def make(**overrides):
        settings = TrainSettings.from_dict({**SMALL, **overrides, "base_model": tiny_encoder_path})
        return TrainingRun(targets, contexts, encoder, tokenizer, settings, None, progress=False, log=lambda _: None)

    return make


def test_lr_schedule_warms_up_then_decays():
    factors = [lr_factor(step, 100, 0.1) for step in range(100)]
    assert factors[0] == pytest.approx(0.1) and factors[9] == pytest.approx(1.0)
    assert max(factors) == 1.0 and factors[99] == pytest.approx(1 / 90)
    assert all(a >= b for a, b in zip(factors[9:], factors[10:]))


def plan(mode: str) -> list:
    return plan_stages(TrainSettings(BertramConfig(mode=mode)))


def test_stage_plan_follows_the_paper():
    specs = plan("add")
    assert [(s.mode, s.groups) for s in specs] == [
        ("context", ("context",)),
        ("form", ("form",)),
        ("add", ("context",)),
    ]
    assert specs[0].states_fixed and specs[2].states_fixed  # ADD with frozen form: reuse states
    shallow, replace = plan("shallow")[2], plan("replace")[2]
    assert shallow.groups == ("form", "context", "gate") and shallow.states_fixed
    assert replace.groups == ("form", "context") and not replace.states_fixed
    assert len(plan("form")) == 2


@pytest.mark.parametrize("mode", ["add", "shallow", "replace"])
def test_each_stage_trains_only_its_parameters(tiny_run, mode):
    run = tiny_run(mode=mode)
    encoder_before = {k: v.clone() for k, v in run.encoder.state_dict().items()}
    results = {}
    for spec in plan_stages(run.settings):
        if spec.index == 1 and mode != "add":
            spec = StageSpec(1, "context", ("context",), 1, spec.lr, spec.batch_words, True)
        init = combined_init(results[1], results[2]) if spec.index == 3 else None
        before_net = run.network(spec.mode, spec.use_subword_mean, spec.index)
        if init is not None:
            before_net.load_state_dict(init, strict=False)
        before = {k: v.clone() for k, v in before_net.bertram_state_dict().items()}
        results[spec.index] = result = run.stage(spec, init)
        after = result.network.bertram_state_dict()
        trained = set(group_keys(result.network, spec.groups))
        assert trained, spec
        for key in before:
            if key in trained:
                continue
            assert torch.equal(before[key], after[key]), (spec.name, key)
        for group in spec.groups:
            changed = [k for k in group_keys(result.network, (group,)) if not torch.equal(before[k], after[k])]
            assert changed, (spec.name, group)
    for key, value in run.encoder.state_dict().items():
        assert torch.equal(value, encoder_before[key]), key


def test_reused_encoder_states_give_the_same_losses(tiny_run):
    spec = StageSpec(1, "context", ("context",), 3, 1e-2, 8, True)
    reuse = tiny_run(reuse_states=True).stage(spec).metrics
    again = tiny_run(reuse_states=False).stage(spec).metrics
    assert reuse["cache"]["rows"] > 0 and again["cache"] is None
    for a, b in zip(reuse["epochs"], again["epochs"]):
        assert a["loss"] == pytest.approx(b["loss"], abs=1e-5)


def test_inplace_trains_one_stage_on_rare_like_spellings_and_resumes(tiny_run, tiny_encoder_path, source, tmp_path):
    """One stage (attentive mimicking + projection) on cached states; some rows read the mask."""
    assert [(s.mode, s.groups) for s in plan("inplace")] == [("inplace", ("context",))]
    run = tiny_run(mode="inplace", inplace_mask_fraction=0.5)
    spec = plan_stages(run.settings)[0]
    network = run.network(spec.mode, spec.use_subword_mean, spec.index)
    rows = run.pools(network).rows
    mask_id = network.inputs.mask_id
    masked = [r for r in rows if r.input_ids[r.mask_position] == mask_id]
    assert 0.3 < len(masked) / len(rows) < 0.7 and all(r.span == 1 for r in masked)
    spelled = [r for r in rows if r.input_ids[r.mask_position] != mask_id]
    for r in spelled:  # the rare-like pieces stand where the word was
        rare_like = run.targets.rare_like[r.word_index]
        assert list(r.input_ids[r.mask_position : r.mask_position + r.span]) == rare_like
    before = {k: v.clone() for k, v in network.bertram_state_dict().items()}
    result = run.stage(spec)
    after = result.network.bertram_state_dict()
    trained = set(group_keys(result.network, ("context",)))
    assert any(not torch.equal(before[k], after[k]) for k in trained)
    assert all(torch.equal(before[k], after[k]) for k in before if k not in trained)
    assert result.metrics["cache"]["rows"] == len(rows)
    settings = {"mode": "inplace", "subword_share": 0.5}
    whole = _train(source, tmp_path / "whole", tiny_encoder_path, ablation=False, settings=settings)
    with pytest.raises(Killed):
        _train(
            source,
            tmp_path / "resumed",
            tiny_encoder_path,
            ablation=False,
            settings=settings,
            on_epoch_end=_kill_at("stage1-inplace", 1),
        )
    resumed = _train(source, tmp_path / "resumed", tiny_encoder_path, ablation=False, settings=settings)
    assert resumed["final"] == whole["final"]
    a = load_file(str(tmp_path / "whole" / "model" / "weights.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "model" / "weights.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)
    saved = json.loads((tmp_path / "whole" / "model" / "config.json").read_text())
    assert (saved["mode"], saved["subword_share"], saved["read_layer"]) == ("inplace", 0.5, -2)
    assert saved["own_embedding_for_one_piece"] is True  # BertramConfig's default, written for inference
    names = [row["model"] for row in whole["ablation"]]
    assert names[1] == "INPLACE (subword share 0.5)" and names[2] == "INPLACE, BERTRAM's own vector (share 0)"
    assert whole["ablation"][1]["cosine"] != whole["ablation"][2]["cosine"]


def test_inplace_trains_words_without_contexts_from_their_pieces(tiny_encoder_path, source, tmp_path):
    """wordfreq's multi-piece words without a corpus context are trained on their bare row (the
    word's pieces alone, as inference reads every word), and the run reports their share."""
    encoder, tokenizer = load_encoder(tiny_encoder_path)
    targets = build_targets(
        source,
        encoder,
        tokenizer,
        tiny_encoder_path,
        min_count=20,
        held_out_fraction=0.1,
        ota=OTASettings(steps=1),
        progress=False,
        multi_piece_words=25,
    )
    contexts = [source.contexts(w, 6) for w in targets.words]
    settings = TrainSettings.from_dict({**SMALL, "mode": "inplace", "base_model": tiny_encoder_path})
    run = TrainingRun(targets, contexts, encoder, tokenizer, settings, None, progress=False, log=lambda _: None)
    network = run.network("inplace", True, 1)
    pools = run.pools(network)
    bare = [i for i in run.train_ids if not contexts[i]]
    assert bare and set(bare) <= set(run.context_word_ids(network))
    for i in bare:
        (row,) = pools.rows[pools.starts[i] : pools.ends[i]]
        assert row == network.inputs.bare(i, targets.rare_like[i])
    metrics = _train(
        source,
        tmp_path / "run",
        tiny_encoder_path,
        ablation=False,
        settings={"mode": "inplace"},
        data={"multi_piece_words": 25},
    )
    info = metrics["targets"]
    assert info["n_with_contexts"] < info["words"] and info["multi_piece_share"] > 0.3
    final = metrics["final"]  # held-out scores by kind of target too, which make up the whole
    assert final["words_row"] + final["words_ota"] == final["words"]
    assert final["cosine"] == pytest.approx(
        (final["cosine_row"] * final["words_row"] + final["cosine_ota"] * final["words_ota"]) / final["words"], abs=1e-5
    )
    recorded = json.loads((tmp_path / "run" / "progress.json").read_text())["run"]
    assert recorded["multi_piece_words"] == {"words": 25, "min_zipf": 3.0}


def test_path_mix_draws_each_word_as_inference_reads_it(tiny_run):
    """spelling: the bare row alone; contexts: masked rows alone; both: spelled rows and the bare row."""
    from spacy_bertram.training.pools import BARE, MASKED, PATHS, SPELLED

    run = tiny_run(mode="inplace", inplace_mask_fraction=0.5)
    network = run.network("inplace", True, 1)
    pools = run.pools(network)
    mask_id = network.inputs.mask_id
    for r, kind in zip(pools.rows, pools.kinds):
        assert (kind == MASKED) == (r.input_ids[r.mask_position] == mask_id and r.span == 1)
        assert (kind == BARE) == (len(r.input_ids) == r.span + 2 and r.mask_position == 1)
    words = [
        i
        for i in run.context_word_ids(network)
        if {MASKED, SPELLED} <= set(pools.kinds[pools.starts[i] : pools.ends[i]].tolist())
    ]
    assert len(words) > 5
    for path, share in zip(PATHS, numpy.eye(3)):
        rows, local = pools.sample(words, numpy.random.default_rng(0), 2, 4, share)
        for position, word in enumerate(words):
            kinds = sorted(pools.kinds[rows[local.numpy() == position]].tolist())
            assert all(pools.starts[word] <= r < pools.ends[word] for r in rows[local.numpy() == position])
            if path == "spelling":
                assert kinds == [BARE]
            elif path == "contexts":
                assert 1 <= len(kinds) <= 4 and set(kinds) == {MASKED}
            else:
                assert kinds[-1] == BARE and kinds.count(BARE) == 1 and set(kinds[:-1]) == {SPELLED}
    mixed_rows, mixed_local = pools.sample(words * 20, numpy.random.default_rng(1), 2, 4, (0.2, 0.3, 0.5))
    alone = [sorted(pools.kinds[mixed_rows[mixed_local.numpy() == p]].tolist()) for p in range(len(words) * 20)]
    spelling_share = sum(k == [BARE] for k in alone) / len(alone)
    contexts_share = sum(set(k) == {MASKED} for k in alone) / len(alone)
    assert abs(spelling_share - 0.2) < 0.06 and abs(contexts_share - 0.3) < 0.07


def test_path_phases_train_the_paths_in_the_papers_order(tiny_run, monkeypatch):
    """Each step of a phased stage samples the path of its third: contexts, spelling, then both."""
    from spacy_bertram.training.pools import ContextPools

    drawn = []
    sample = ContextPools.sample

    def spy(self, words, rng, min_contexts, max_contexts, path_mix=None):
        drawn.append(path_mix)
        return sample(self, words, rng, min_contexts, max_contexts, path_mix)

    monkeypatch.setattr(ContextPools, "sample", spy)
    run = tiny_run(mode="inplace", path_phases=True)
    spec = plan_stages(run.settings)[0]
    phased = run.stage(spec, validate=False).metrics["epochs"]
    total = len(drawn)
    phases = [(0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)]
    assert total >= 6 and drawn == sorted(drawn, key=phases.index)  # in the paper's order
    assert all(abs(drawn.count(phase) - total / 3) <= 1 for phase in phases)
    drawn.clear()
    mixed = tiny_run(mode="inplace").stage(spec, validate=False).metrics["epochs"]
    assert set(drawn) == {run.settings.path_mix}
    assert [e["loss"] for e in phased] != [e["loss"] for e in mixed]


def test_ranking_term_is_low_when_the_prediction_is_its_target_and_trains(tiny_run):
    run = tiny_run(mode="inplace", rank_weight=0.5, rank_negatives=4)
    ranking = run.ranking
    assert ranking.nearest.shape == (len(run.targets), 5)
    index = torch.as_tensor(run.train_ids[:16])
    rng = numpy.random.default_rng(0)
    exact = ranking.loss(run.vectors[index], index, rng)
    shuffled = ranking.loss(run.vectors[index.flip(0)], index, numpy.random.default_rng(0))
    assert float(exact) < float(shuffled)
    rows = [i for i in run.train_ids if run.targets.kinds[i] == "row"]
    own = torch.as_tensor(rows[:8])  # a one-piece word's own row is its target, never its negative: else the
    # loss could not fall below log 2 (the positive tied with the same row among the negatives)
    assert float(ranking.loss(run.vectors[own], own, numpy.random.default_rng(0))) < 0.5 * math.log(2)
    spec = plan_stages(run.settings)[0]
    plain = tiny_run(mode="inplace").stage(spec).metrics["epochs"]
    ranked = run.stage(spec).metrics["epochs"]
    assert [e["loss"] for e in ranked] != [e["loss"] for e in plain]


@pytest.mark.parametrize(
    "settings",
    [{"path_mix": (0.5, 0.5, 0.5)}, {"path_mix": (1.0, 0.0)}, {"rank_temperature": 0.0}, {"rank_weight": -1.0}],
)
def test_path_mix_and_ranking_settings_are_checked(settings):
    with pytest.raises(ValueError, match="path_mix|ranking term"):
        TrainSettings(**settings)
