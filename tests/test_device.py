"""The GPU path without a GPU: named errors for bad ids (monkeypatched torch.cuda / thinc)."""

from __future__ import annotations

import pytest
import torch

from spacy_bertram import device as device_module
from spacy_bertram.device import DeviceError, check_gpu_id, select_device, use_device


def fake_cuda(monkeypatch, count: int) -> list:
    """torch.cuda that reports `count` devices; set_device calls are recorded, not made."""
    calls: list = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: calls.append(("torch", i)))
    return calls


@pytest.mark.parametrize("bad", ["gpu0", "0.5", 1.5, True, None, [0]])
def test_a_gpu_id_that_is_not_a_whole_number_is_a_named_error(bad):
    with pytest.raises(DeviceError, match=r"\[E116\] --gpu-id must be a whole number"):
        check_gpu_id(bad)


def test_negative_ids_are_the_cpu_and_none_is_a_no_op():
    assert select_device(-1) == torch.device("cpu")
    assert select_device("-1") == torch.device("cpu")
    use_device(None)
    use_device(-1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the message for a machine without CUDA")
def test_a_gpu_id_without_cuda_says_why_and_how_to_fix_it():
    with pytest.raises(DeviceError, match=r"\[E117\]") as info:
        select_device(0)
    message = str(info.value)
    assert "--gpu-id 0" in message and "--gpu-id -1" in message and "cuda12x" in message
    assert isinstance(info.value, ValueError)  # callers that catch ValueError keep working


def test_an_id_past_the_last_device_names_the_valid_ids(monkeypatch):
    calls = fake_cuda(monkeypatch, 2)
    with pytest.raises(DeviceError, match=r"\[E118\] --gpu-id 3: this machine has 2 CUDA devices \(ids 0\.\.1"):
        select_device(3)
    assert calls == []


def test_thincs_gpu_error_is_not_swallowed_but_named(monkeypatch):
    calls = fake_cuda(monkeypatch, 1)

    def no_cupy(gpu_id):
        raise ValueError("Cannot use GPU, CuPy is not installed")

    monkeypatch.setattr("thinc.api.require_gpu", no_cupy)
    with pytest.raises(
        DeviceError,
        match=r"\[E119\].*spaCy cannot use the GPU "
        r"\(Cannot use GPU, CuPy is not installed\).*cuda12x",
    ):
        select_device(0)
    with pytest.raises(DeviceError, match=r"\[E119\].*cuda12x"):
        use_device(0, what="gpu_id")
    assert calls == []
    # torch alone (thinc=False) goes on to the device
    assert select_device(0, thinc=False) == torch.device("cuda:0") and calls == [("torch", 0)]


def test_cupys_own_errors_are_named(monkeypatch):
    fake_cuda(monkeypatch, 1)

    class CUDARuntimeError(RuntimeError):  # as cupy_backends' is
        pass

    def bad_driver(gpu_id):
        raise CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    monkeypatch.setattr("thinc.api.require_gpu", bad_driver)
    with pytest.raises(
        DeviceError,
        match=r"\[E120\].*CuPy could not select CUDA device 0 "
        r".*CUDARuntimeError.*nvidia-smi",
    ):
        select_device(0)


def test_every_step_uses_the_one_helper():
    """Training, evaluation and the component all use the helpers of spacy_bertram.device."""
    from spacy_bertram.model import encoder
    from bertram_experiments.rarification import baseline
    from bertram_experiments.downstream import downstream
    from spacy_bertram.training import run

    assert run.select_device is device_module.select_device
    assert downstream.use_device is baseline.use_device is device_module.use_device
    assert not hasattr(encoder, "select_device")  # one helper, not two


def test_train_cli_with_a_bad_gpu_id_fails_with_the_named_error(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from spacy_bertram.cli import app
    from tests.util import context_store_of

    fake_cuda(monkeypatch, 1)
    store = context_store_of(tmp_path, ["a kumquat grew in the garden"] * 3)  # the input is checked first
    result = CliRunner().invoke(app, ["train", str(store), str(tmp_path / "out"), "--gpu-id", "4"])
    assert result.exit_code == 1, result.output
    assert "--gpu-id 4: this machine has 1 CUDA device" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_the_cuda_extra_is_declared_and_installed_when_nvidia_smi_finds_a_gpu():
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf8"))["project"]["optional-dependencies"]
    install = (root / "scripts" / "install.sh").read_text(encoding="utf8")
    assert extras[device_module.CUDA_EXTRA] == ["cupy-cuda12x>=13.3.0,<14.0.0"]
    assert "nvidia-smi -L" in install and f".[all,{device_module.CUDA_EXTRA}]" in install
    assert "!=2.13.0+cpu" in install  # a CUDA build of torch on a GPU machine


def test_a_worker_forked_after_cuda_or_cupy_use_is_detected(monkeypatch):
    from spacy_bertram.device import GPUForkError, check_not_forked_on_gpu, forked_after_gpu_use

    assert not forked_after_gpu_use()
    check_not_forked_on_gpu()
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: True)  # torch CUDA used before the fork
    assert forked_after_gpu_use()
    with pytest.raises(GPUForkError, match=r"\[E121\] 'bertram': nlp.pipe.*n_process=1"):
        check_not_forked_on_gpu("'bertram'")
    monkeypatch.setattr(torch.cuda, "_is_in_bad_fork", lambda: False)
    monkeypatch.setattr(device_module, "_thinc_on_gpu", lambda: True)  # CupyOps inherited by the fork
    assert forked_after_gpu_use()
    monkeypatch.setattr(device_module.multiprocessing, "get_start_method", lambda allow_none=False: "spawn")
    assert not forked_after_gpu_use()  # spawned workers start clean


# -- the encoder cache is keyed by device (the `meta` device stands in for a GPU) -------------

ITEMS = [("kumquat", ["the farmer sold a kumquat at the market", "a sweet kumquat"]), ("lemons", [])]


@pytest.fixture(scope="module")
def model_dir(tiny_bert_path, tmp_path_factory):
    from spacy_bertram import create_bertram, save_bertram
    from spacy_bertram.model.inputs import NgramVocab

    network = create_bertram(tiny_bert_path, NgramVocab.from_words(["kumquat", "lemons"] * 3, min_count=1), mode="add")
    return str(save_bertram(network, tmp_path_factory.mktemp("bertram") / "model"))


def weight_device(encoder) -> str:
    return encoder.get_input_embeddings().weight.device.type


def test_moving_one_network_leaves_the_others_encoder_alone(model_dir):
    import numpy

    from spacy_bertram import load_bertram

    a, b = load_bertram(model_dir), load_bertram(model_dir)
    assert a.encoder is b.encoder and a.device.type == "cpu"  # one CPU copy, shared
    before = b.infer(ITEMS)
    a.to("meta")
    assert a.device.type == "meta" and weight_device(a.encoder) == "meta"
    assert weight_device(b.encoder) == "cpu"  # used to be moved under b's head
    numpy.testing.assert_array_equal(b.infer(ITEMS), before)
    assert "encoder.embeddings.word_embeddings.weight" not in a.state_dict()  # not a submodule
    c = load_bertram(model_dir)
    assert c.encoder is b.encoder  # new CPU networks still share the CPU copy
    numpy.testing.assert_array_equal(c.infer(ITEMS), before)


def test_load_bertram_puts_head_and_encoder_on_one_device(model_dir, tiny_bert_path):
    from spacy_bertram import load_bertram
    from spacy_bertram.model.encoder import load_encoder

    cpu = load_bertram(model_dir)
    assert cpu.device.type == "cpu" and weight_device(cpu.encoder) == "cpu"
    meta = load_bertram(model_dir, device="meta")
    assert meta.device.type == "meta" and weight_device(meta.encoder) == "meta"
    assert load_bertram(model_dir, device="meta").encoder is meta.encoder  # one copy per device
    encoder, _ = load_encoder(tiny_bert_path, device="meta")
    assert encoder is meta.encoder and weight_device(load_encoder(tiny_bert_path)[0]) == "cpu"


# -- the fake-device guard: every tensor an op meets must be on the (fake) device ------------


class CpuTensorGuard:
    """A torch dispatch mode that records every op mixing a CPU tensor (not a 0-dim scalar)
    with a tensor on `device`. On a GPU each is an implicit host-to-device copy or an
    error; on `meta` some (indexing) pass silently, so they are caught here instead."""

    def __init__(self, device: str = "meta") -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        guard = self
        self.device, self.mixed = device, []

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
                if any(t.device.type == guard.device for t in tensors):
                    cpu = [tuple(t.shape) for t in tensors if t.device.type == "cpu" and t.dim() > 0]
                    if cpu:
                        guard.mixed.append(f"{func}: CPU tensors {cpu}")
                return func(*args, **kwargs)

        self.mode = Mode()

    def __enter__(self) -> "CpuTensorGuard":
        self.mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.mode.__exit__(*exc)


def test_the_guard_catches_a_cpu_index_that_meta_accepts():
    table = torch.zeros(4, 3, device="meta")
    with CpuTensorGuard() as guard:
        table[torch.tensor([0, 2])]  # meta (and CUDA) accept a CPU index; the guard does not
        table[torch.tensor([0, 2], device="meta")]
        table * torch.tensor(2.0)  # a 0-dim CPU scalar is fine on any device
    assert len(guard.mixed) == 1 and "index" in guard.mixed[0]


def test_wnlampro_feeds_the_model_on_its_device(tiny_bert_path):
    import copy

    import numpy
    from transformers import AutoTokenizer, BertForMaskedLM

    from bertram_experiments.intrinsic.wnlampro import build_inputs_embeds, masked_lm_logits

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_path)
    model = BertForMaskedLM.from_pretrained(tiny_bert_path, attn_implementation="eager").eval()
    meta = copy.deepcopy(model).to("meta")
    vector = {"kumquat": numpy.ones(32, dtype="float32")}
    with CpuTensorGuard() as guard:
        for mode in ("replace", "slash"):
            text = "a kumquat is a [MASK] ."
            embeds, attention, _ = build_inputs_embeds(meta, tokenizer, text, "kumquat", vector, mode)
            assert embeds.device.type == "meta" and attention.device.type == "meta"
            logits = masked_lm_logits(meta, tokenizer, "a kumquat is a [MASK] .", "kumquat", vector, mode)
            assert logits.device.type == "meta"
    assert guard.mixed == []


# -- item 6: deterministic mode on CUDA, the device in every resume key -------------------


@pytest.fixture
def torch_backend_flags():
    """Restores torch's global backend flags by value after the test.

    Not monkeypatch.setattr: these flags are served by module __getattr__ hooks
    (cuBLASModule), which pytest versions record differently (pytest 9.2 records them
    as unset and then deletes them at teardown, which torch refuses).
    """
    flags = [(torch.backends.cudnn, name) for name in ("benchmark", "deterministic", "allow_tf32")]
    flags.append((torch.backends.cuda.matmul, "allow_tf32"))
    saved = [(owner, name, getattr(owner, name)) for owner, name in flags]
    yield
    for owner, name, value in saved:
        setattr(owner, name, value)


def test_deterministic_mode_is_set_for_cuda_only(monkeypatch, torch_backend_flags):
    from spacy_bertram.device import make_deterministic

    calls = []
    monkeypatch.setattr(
        torch, "use_deterministic_algorithms", lambda mode, warn_only=False: calls.append((mode, warn_only))
    )
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    assert make_deterministic("cpu")["deterministic_algorithms"] is False and calls == []
    record = make_deterministic("cuda:0")
    assert calls == [(True, True)] and record["cublas_workspace_config"] == ":4096:8"
    import os

    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
    assert not torch.backends.cuda.matmul.allow_tf32


def test_a_cpu_run_is_not_resumed_on_a_gpu(tmp_path):
    import json

    from spacy_bertram.training.run import _check_resume

    run = {"base_model": "m", "settings": {}, "min_count": 1, "device": "cpu"}
    (tmp_path / "progress.json").write_text(json.dumps({"run": run, "stages": {}}))
    _check_resume(tmp_path, run)  # same device: resumes
    with pytest.raises(ValueError, match=r"\[E276\].*training run on cpu, and this one is on cuda.*--gpu-id -1"):
        _check_resume(tmp_path, {**run, "device": "cuda"})
    without_device = {k: v for k, v in run.items() if k != "device"}
    (tmp_path / "progress.json").write_text(json.dumps({"run": without_device, "stages": {}}))
    with pytest.raises(ValueError, match=r"\[E277\].*\(device: '\(unset\)' -> 'cpu'\)"):
        _check_resume(tmp_path, run)  # a record without the device is a changed setting


def test_a_checkpoint_resumes_only_on_its_device(model_dir, tmp_path):
    import numpy

    from spacy_bertram import load_bertram
    from spacy_bertram.training.checkpoint import load_checkpoint, save_checkpoint

    network = load_bertram(model_dir)
    optimizer = torch.optim.Adam(network.parameters())
    save_checkpoint(tmp_path / "ckpt", network, optimizer, numpy.random.default_rng(0), {"epoch": 1, "history": []})
    rng = numpy.random.default_rng(1)
    info = load_checkpoint(tmp_path / "ckpt", load_bertram(model_dir), optimizer, rng)
    assert info["epoch"] == 1 and "device" not in info
    on_meta = load_bertram(model_dir, device="meta")  # stands in for a CUDA run
    with pytest.raises(ValueError, match=r"\[E205\].*written on cpu and this run is on meta.*--gpu-id -1"):
        load_checkpoint(tmp_path / "ckpt", on_meta, torch.optim.Adam(on_meta.parameters()), rng)


def test_the_state_cache_key_holds_a_non_cpu_device(model_dir):
    from spacy_bertram import load_bertram
    from spacy_bertram.training.state_cache import fingerprint

    cpu = load_bertram(model_dir)
    rows = cpu.prepare(*zip(*[(w, c) for w, c in ITEMS])).rows
    assert rows and fingerprint(cpu, rows, None) == fingerprint(load_bertram(model_dir), rows, None)
    assert fingerprint(load_bertram(model_dir, device="meta"), rows, None) != fingerprint(cpu, rows, None)


# -- the network, layer, injection and training paths on the fake device ------------------


@pytest.fixture(autouse=True)
def mask_without_its_values(monkeypatch):
    """transformers 5 skips the attention mask when `padding_mask.all()`, a question of the data, which a `meta`
    tensor does not have: the tests that run the encoder on `meta` have the mask always built (4.x asks nothing)."""
    import transformers

    masking = getattr(transformers, "masking_utils", None)
    if masking is not None and hasattr(masking, "_ignore_bidirectional_mask_sdpa"):
        monkeypatch.setattr(masking, "_ignore_bidirectional_mask_sdpa", lambda *args, **kwargs: False)


def eager_attention(encoder) -> None:
    """transformers' SDPA mask shortcut asks `torch.all(mask == 1)` of the data: `meta` has none."""
    encoder.attn_implementation = "eager"
    encoder.config._attn_implementation = "eager"


def test_network_forward_makes_every_tensor_on_its_device(model_dir):
    from spacy_bertram import load_bertram

    network = load_bertram(model_dir, device="meta")
    eager_attention(network.encoder)
    batch = network.prepare(*zip(*ITEMS))
    with CpuTensorGuard() as guard:
        vectors = network(batch, token_budget=64)
        network.train()
        network(batch, token_budget=64).sum().backward()  # training mode: n-gram dropout, gradients
    assert vectors.device.type == "meta" and tuple(vectors.shape) == (2, network.width)
    assert guard.mixed == []


def test_layer_feeds_the_network_on_its_device(model_dir):
    from spacy_bertram import load_bertram
    from spacy_bertram.architectures import Bertram_v1
    from spacy_bertram.model.layers import convert_inputs, set_bertram_network

    layer = Bertram_v1(model_path=model_dir, token_budget=64)
    network = load_bertram(model_dir, device="meta")
    eager_attention(network.encoder)
    set_bertram_network(layer, network)
    args, _ = convert_inputs(layer, ITEMS, False)
    with CpuTensorGuard() as guard:
        out = network(*args.args, **args.kwargs)
    assert out.device.type == "meta" and guard.mixed == []


def test_injection_feeds_and_maps_on_the_encoders_device(tiny_bert_path):
    import copy

    import numpy
    import spacy
    from transformers import AutoModel, AutoTokenizer
    from tests.util import plan_inputs

    import torch

    from spacy_bertram.injection.hook import EmbeddingHook
    from spacy_bertram.injection.lengthening import rebuilt_wordpieces
    from spacy_bertram.injection.mapping import map_outputs_to_stock
    from spacy_bertram.injection.plan import make_injection_plan

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_path)
    hf = copy.deepcopy(AutoModel.from_pretrained(tiny_bert_path)).to("meta")
    eager_attention(hf)
    nlp = spacy.blank("en")
    docs = [nlp.make_doc("the farmer sold kumquats at the market"), nlp.make_doc("the kumquats grew")]
    docs[0]._.bertram = {3: numpy.ones(32, dtype="float32")}
    docs[1]._.bertram = {1: numpy.ones(32, dtype="float32")}
    spans, wordpieces, align = plan_inputs(nlp, tokenizer, docs, 4, 3)
    for mode in ("slash", "replace"):
        plan = make_injection_plan(spans, wordpieces, align, mode, tokenizer, hf)
        rebuilt = rebuilt_wordpieces(plan)  # what the stock HF layer's conversion moves to the encoder's device
        kwargs = {
            "input_ids": torch.as_tensor(numpy.asarray(rebuilt.input_ids), device=hf.device),
            "attention_mask": torch.as_tensor(numpy.asarray(rebuilt.attention_mask), device=hf.device),
        }
        hook = EmbeddingHook(hf, plan)
        with CpuTensorGuard() as guard:
            output = hf(**kwargs, output_hidden_states=True)
            mapped = map_outputs_to_stock(output, plan)
        assert hook.fired and not hf.get_input_embeddings()._forward_hooks  # fired, removed itself
        assert mapped.last_hidden_state.device.type == "meta"
        assert tuple(mapped.last_hidden_state.shape[:2]) == tuple(wordpieces.input_ids.shape)
        assert all(tuple(h.shape[:2]) == tuple(wordpieces.input_ids.shape) for h in mapped.hidden_states)
        assert guard.mixed == [], mode


def test_training_steps_make_every_tensor_on_the_runs_device(tiny_bert_path):
    import numpy

    from spacy_bertram.model.encoder import load_encoder
    from spacy_bertram.training.ota import OTASettings
    from spacy_bertram.training.sources import MemoryTrainingSource
    from spacy_bertram.training.stages import StageSpec, TrainingRun, TrainSettings
    from spacy_bertram.training.targets import build_targets
    from tests.util import SMALL, corpus_lines

    source = MemoryTrainingSource.from_lines(corpus_lines())
    encoder, tokenizer = load_encoder(tiny_bert_path)
    targets = build_targets(
        source,
        encoder,
        tokenizer,
        tiny_bert_path,
        min_count=20,
        held_out_fraction=0.1,
        ota=OTASettings(steps=1),
        progress=False,
    )
    contexts = [source.contexts(w, 6) for w in targets.words]
    meta_encoder, _ = load_encoder(tiny_bert_path, device="meta")
    eager_attention(meta_encoder)
    settings = TrainSettings.from_dict({**SMALL, "reuse_states": False, "base_model": tiny_bert_path})
    run = TrainingRun(
        targets,
        contexts,
        meta_encoder,
        tokenizer,
        settings,
        None,
        device=torch.device("meta"),
        progress=False,
        log=lambda _: None,
    )
    assert run.ngram_ids.device.type == "meta" and run.subword_ids.device.type == "meta"  # moved once
    run.validator = object()  # validation scores on the CPU by design (it copies the table there)
    rng = numpy.random.default_rng(0)
    specs = [
        StageSpec(1, "context", ("context",), 1, 1e-2, 8, True),
        StageSpec(2, "form", ("form",), 1, 1e-2, 8, True),
        StageSpec(3, "add", ("context",), 1, 1e-2, 8, True),
        StageSpec(3, "replace", ("form", "context"), 1, 1e-2, 8, True),
    ]
    for spec in specs:
        network = run.network(spec.mode, spec.use_subword_mean, spec.index)
        assert network.device.type == "meta" and network.encoder is meta_encoder
        network.train()
        words = numpy.asarray(run.context_word_ids(network) if spec.traits.reads_contexts else run.train_ids)[:8]
        with CpuTensorGuard() as guard:
            loss = run._loss(network, spec, words, rng, None, 0.5)
            loss.backward()
        assert loss.device.type == "meta" and guard.mixed == [], (spec.name, guard.mixed[:3])
