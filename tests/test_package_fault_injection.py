"""Fault injection: saves and runs killed midway, and a damaged file of every kind the package reads.

Every case must end in a named error (the file, the limit that was hit, or the
command-line value and its fix) and lose nothing saved before; a bad value is
refused before anything is written; a killed run, run again, must give what an
uninterrupted one gives. The README states how many bad inputs are tried
(`test_the_readme_counts_the_bad_inputs`).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import resource
import shutil
import signal
import sqlite3
import warnings
from pathlib import Path
from typing import List

import numpy
import pytest
import spacy
import torch
from safetensors.torch import load_file

import spacy_bertram.training.store_builder as contexts_mod
import spacy_bertram.rarity.frequencies as frequencies_mod
import spacy_bertram.model.storage as storage_mod
import spacy_bertram.training.prepare as prepare_mod
import spacy_bertram.training.targets as targets_mod
from spacy_bertram import NgramVocab, create_bertram, load_bertram, save_bertram
from spacy_bertram.context_store import ContextStore
from spacy_bertram.rarity.frequencies import CountTable
from spacy_bertram.training.prepare import prepare
from spacy_bertram.training.sources import MemoryContexts
from spacy_bertram.training.stages import TrainSettings, plan_stages
from tests.fault_cases import (
    BAD_VALUES,
    CORPUS_CORRUPTIONS,
    CORRUPTIONS,
    MODEL_DAMAGES,
    PREPARE_KILLS,
    SAVE_LIMITS,
    bad_inputs_tried,
    corrupt_cases,
)
from tests.util import (
    SMALL,
    TEXT,
    TINY_CLI_DATA,
    Killed,
    _train,
    corpus_lines,
    invoke,
    make_bertram_dir,
    make_nlp,
    same_vectors,
    tiny_train_argv,
)

ROOT = Path(__file__).resolve().parents[1]
ITEMS = [("kumquat", ["the farmer sold a kumquat at the market"]), ("quokka", [])]


def test_the_readme_counts_the_bad_inputs():
    readme = (ROOT / "README.md").read_text(encoding="utf8").lower()
    assert f"bad inputs tried: {bad_inputs_tried()}; all named errors, nothing lost" in readme


# -- the things that get damaged -----------------------------------------------------------


@pytest.fixture(scope="module")
def source():
    return MemoryContexts.from_lines(corpus_lines())


@pytest.fixture(scope="module")
def artifacts(tiny_bert_path, source, tmp_path_factory) -> Path:
    """A model directory, a saved pipeline, a context store and a killed training run."""
    root = tmp_path_factory.mktemp("artifacts")
    torch.manual_seed(0)
    network = create_bertram(
        tiny_bert_path,
        NgramVocab.from_words(["kumquat", "garden", "quokka"], min_count=1),
        max_seq_length=32,
        max_contexts=8,
    )
    save_bertram(network, root / "model", counts={"the": 1000, "garden": 50, "kumquat": 1})
    nlp = make_nlp(str(root / "model"), tiny_bert_path, save_cache=True)
    nlp(TEXT)
    nlp.to_disk(root / "pipeline")
    (root / "corpus").mkdir()
    lines = [f"the farmer {i} sold a kumquat at the market in the café" for i in range(50)]
    (root / "corpus" / "c.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    prepare(root / "corpus", root / "store", min_count=2, progress=False)
    with pytest.raises(Killed):
        _train(source, root / "training", tiny_bert_path, ablation=False, on_epoch_end=kill_at("stage3-add", 1))
    return root


def kill_at(stage: str, epoch: int):
    def hook(name, done):
        if (name, done) == (stage, epoch):
            raise Killed(f"{name} {done}")

    return hook


def _load(kind: str, root: Path, tiny: str, source) -> None:
    if kind == "model":
        load_bertram(root / "model")
        CountTable.from_model_dir(root / "model")
    elif kind == "pipeline":
        spacy.load(root / "pipeline")
    elif kind == "store":
        ContextStore.open(root / "store" / "contexts.sqlite")
    elif kind == "training":
        _train(source, root / "training", tiny, ablation=False)
    elif kind == "corpus":
        prepare(root / "corpus", root / "store-again", min_count=2, progress=False)


@pytest.mark.parametrize("kind, name, how", corrupt_cases())
def test_a_damaged_file_is_a_named_error(artifacts, tiny_bert_path, source, tmp_path, kind, name, how):
    directory = {"model": "model", "pipeline": "pipeline", "store": "store", "training": "training", "corpus": "."}[
        kind
    ]
    copy = tmp_path / "copy"
    for part in {"model", "pipeline", "store", "training", "corpus"}:
        shutil.copytree(artifacts / part, copy / part)
    base = copy / directory
    paths = sorted(base.glob(name))  # a pattern: every encoder-state cache of the run
    assert paths
    for path in paths:
        path.write_bytes((CORPUS_CORRUPTIONS if kind == "corpus" else CORRUPTIONS)[how](path.read_bytes()))
    with pytest.raises(ValueError) as err:
        _load(kind, copy, tiny_bert_path, source)
    assert any(str(path) in str(err.value) for path in paths), str(err.value)  # the full path


@pytest.mark.parametrize("name, damage, file_name, message", MODEL_DAMAGES, ids=[case[0] for case in MODEL_DAMAGES])
def test_a_damaged_model_directory_is_refused_naming_the_file(artifacts, tmp_path, name, damage, file_name, message):
    """Each damage once loaded and served wrong vectors (or none); now it is refused by name, and only
    a directory saved before digests were written loads, with a warning, giving the vectors it gave."""
    model = tmp_path / "model"
    shutil.copytree(artifacts / "model", model)
    damage(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if file_name is None:
            vectors = load_bertram(model).infer(ITEMS)
        else:
            with pytest.raises(ValueError) as err:
                load_bertram(model)
    about_digests = [w for w in caught if "has no digests.json" in str(w.message)]
    assert len(about_digests) == (0 if (model / "digests.json").exists() else 1), [str(w.message) for w in caught]
    if file_name is None:
        assert numpy.array_equal(vectors, load_bertram(artifacts / "model").infer(ITEMS))
    else:
        assert re.match(r"\(spacy-bertram\) \[E0\d\d\]", str(err.value)) and message in str(err.value), str(err.value)
        assert str(model / file_name) in str(err.value), str(err.value)  # the full path


# -- bad command-line values: refused, by name, before anything is written ------------------


@pytest.mark.parametrize("name, argv, error", BAD_VALUES, ids=[case[0] for case in BAD_VALUES])
def test_a_bad_value_is_refused_before_anything_is_written(artifacts, tiny_bert_path, tmp_path, name, argv, error):
    corpus = tmp_path / "corpus"
    shutil.copytree(artifacts / "corpus", corpus)
    before = sorted(p.name for p in corpus.iterdir())
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("word1\tword2\tscore\nmarket\tkumquat\t3.5\ngarden\tkumquat\t1.0\n", encoding="utf8")
    paths = {
        "model": artifacts / "model",
        "store": artifacts / "store" / "contexts.sqlite",
        "corpus": corpus,
        "pairs": pairs,
        "out": tmp_path / "out",
        "tiny": tiny_bert_path,
    }
    result = invoke(*[arg.format(**paths) for arg in argv])
    assert result.exit_code != 0, result.output
    error = error.replace("{tiny}", tiny_bert_path)
    assert isinstance(result.exception, SystemExit), result.exception  # a message, no traceback
    assert "Traceback" not in result.output
    assert error in " ".join(result.output.split()), result.output  # the value, named (rich wraps lines)
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in corpus.iterdir()) == before  # nothing written into the corpus


# -- saving the component under a real file-size limit --------------------------------------


@pytest.mark.parametrize("limit", SAVE_LIMITS)
def test_a_save_cut_off_by_a_file_size_limit_keeps_the_previous_pipeline(tiny_bert_path, tmp_path, limit):
    old = make_nlp(make_bertram_dir(tmp_path / "m0", tiny_bert_path), tiny_bert_path, save_cache=True)
    docs = list(old.pipe([TEXT, "A quokka."]))
    old.to_disk(tmp_path / "p")
    before = {f.name: f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir()}
    new = make_nlp(make_bertram_dir(tmp_path / "m1", tiny_bert_path, seed=1), tiny_bert_path, save_cache=True)
    new(TEXT)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the process
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
        with pytest.raises(OSError, match="File too large"):
            new.get_pipe("bertram").to_disk(tmp_path / "p" / "bertram")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)
    assert {f.name: f.read_bytes() for f in (tmp_path / "p" / "bertram").iterdir()} == before
    loaded = spacy.load(tmp_path / "p")
    assert all(same_vectors(a, b) for a, b in zip(docs, loaded.pipe([TEXT, "A quokka."])))


# -- train and prepare killed midway, then run again ----------------------------------------


def test_train_killed_at_random_points_resumes_to_the_same_model(tiny_bert_path, source, tmp_path, monkeypatch):
    whole = _train(source, tmp_path / "whole", tiny_bert_path, ablation=False)
    epochs = [(spec.name, e) for spec in plan_stages(TrainSettings.from_dict(SMALL)) for e in range(1, spec.epochs + 1)]
    first, later = sorted(random.Random(7).sample(range(len(epochs) - 1), 2))
    out = tmp_path / "resumed"
    save_file = targets_mod.save_file

    def dies_while_writing(tensors, filename, *args, **kwargs):
        Path(filename).write_bytes(b"\x00" * 10)  # a partial file, then the process is gone
        raise Killed(filename)

    with monkeypatch.context() as patch:
        patch.setattr(targets_mod, "save_file", dies_while_writing)
        with pytest.raises(Killed):
            _train(source, out, tiny_bert_path, ablation=False)
    assert not (out / "targets").exists() and targets_mod.save_file is save_file
    for point in (first, later):
        with pytest.raises(Killed):
            _train(source, out, tiny_bert_path, ablation=False, on_epoch_end=kill_at(*epochs[point]))
    real_save = storage_mod.save_file

    def dies_on_the_final_model(tensors, filename, *args, **kwargs):
        if Path(filename).parent.name.startswith(".model."):
            dies_while_writing(tensors, filename)
        return real_save(tensors, filename, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(storage_mod, "save_file", dies_on_the_final_model)
        with pytest.raises(Killed):
            _train(source, out, tiny_bert_path, ablation=False)
    assert not (out / "model").exists()
    resumed = _train(source, out, tiny_bert_path, ablation=False)
    a = load_file(str(tmp_path / "whole" / "model" / "weights.safetensors"))
    b = load_file(str(out / "model" / "weights.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    for name in ("config.json", "ngrams.json", "counts.tsv"):
        assert (out / "model" / name).read_bytes() == (tmp_path / "whole" / "model" / name).read_bytes(), name
    assert resumed["final"] == whole["final"]


def _store_content(path: Path) -> List[list]:
    with sqlite3.connect(str(path)) as conn:
        return [sorted(conn.execute(f"SELECT * FROM {table}")) for table in ("meta", "words", "contexts")]


def _outputs(directory: Path) -> tuple:
    info = json.loads((directory / "prepare.json").read_text(encoding="utf8"))
    info = {k: v for k, v in info.items() if k not in ("seconds", "store", "counts", "info")}
    return _store_content(directory / "contexts.sqlite"), (directory / "counts.tsv").read_bytes(), info


def test_prepare_killed_at_random_points_then_rerun_gives_the_same_outputs(tmp_path, monkeypatch):
    rng = random.Random(3)
    words = "the a farmer sold kumquat market garden quokka sweet sour fruit tree".split()
    (tmp_path / "corpus").mkdir()
    for n in range(3):
        lines = [" ".join(rng.choice(words) for _ in range(10)) for _ in range(400)]
        (tmp_path / "corpus" / f"{n}.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    settings = dict(min_count=5, max_contexts=4, rare_max_contexts=2, progress=False)
    expected = _outputs(Path(prepare(tmp_path / "corpus", tmp_path / "whole", **settings).info).parent)

    def after(n_calls: int, function):
        calls = {"n": 0}

        def dies(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] > n_calls:
                raise Killed(function.__name__)
            return function(*args, **kwargs)

        return dies

    def dies_before_rename(real):
        @contextlib.contextmanager
        def atomic_path(path, *args, **kwargs):
            with real(path, *args, **kwargs) as tmp:
                yield tmp
                raise Killed(str(path))  # the temp file is written, the rename never happens

        return atomic_path

    flush = contexts_mod._Reservoirs.flush
    kills = {
        "while counting": (contexts_mod, "tokenize", after(rng.randrange(1, 1200), contexts_mod.tokenize)),
        "while collecting contexts": (
            contexts_mod,
            "tokenize_spans",
            after(rng.randrange(1, 1200), contexts_mod.tokenize_spans),
        ),
        "while writing the store": (contexts_mod._Reservoirs, "flush", after(0, flush)),
        "while writing counts.tsv": (frequencies_mod, "atomic_path", dies_before_rename(frequencies_mod.atomic_path)),
        "while writing prepare.json": (prepare_mod, "atomic_path", dies_before_rename(prepare_mod.atomic_path)),
    }
    assert list(kills) == PREPARE_KILLS
    out = tmp_path / "killed"
    for what, (owner, attribute, replacement) in kills.items():
        with monkeypatch.context() as patch:
            patch.setattr(owner, attribute, replacement)
            with pytest.raises(Killed):
                prepare(tmp_path / "corpus", out, **settings)
        assert not any(re.match(r"\..*\.tmp$", p.name) for p in out.glob("*")), what  # no temp file left
    prepare(tmp_path / "corpus", out, **settings)
    assert _outputs(out) == expected


# -- a user's files in every output directory ----------------------------------------------------------


def _plant(directory: Path) -> Path:
    mine = directory / "notes_mine.txt"
    mine.write_text(f"mine: {directory.name}", encoding="utf8")
    return mine


def test_a_users_file_in_every_output_directory_survives_every_writer(tiny_bert_path, tmp_path):
    """Every command of the package (prepare, targets, train, vectors) and every public save function
    (save_bertram, save_pipeline, the component's to_disk) run again over their own output, with a user's file
    in each directory they write, run again with --restart and --force: no file of the user's is lost or
    changed, and nothing is left half-written. (Inside a pipeline save, each component's directory is what
    that component writes, as `nlp.to_disk` has it: a user's files belong beside them.)"""
    from spacy_bertram import save_pipeline

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "c.txt").write_text("\n".join(corpus_lines(300, seed=1)) + "\n", encoding="utf8")
    store, targets, run, table = tmp_path / "store", tmp_path / "targets", tmp_path / "run", tmp_path / "table"

    def train_args(first_epochs: int) -> list:
        return [
            *tiny_train_argv(store, run, tiny_bert_path, epochs=(first_epochs, 1, 1)),
            "--no-ablation",
            "--keep-cache",
        ]

    commands = {
        "prepare": ["prepare", tmp_path / "corpus", store, "--min-count", "2"],
        "targets": ["targets", store, targets, "--base-model", tiny_bert_path, *TINY_CLI_DATA],
        "train": train_args(1),
        "vectors": ["vectors", run / "model", store, table, "--workers", "0", "--no-progress"],
    }
    for name, argv in commands.items():
        result = invoke(*argv)
        assert result.exit_code == 0, (name, result.output)
    nlp = make_nlp(str(run / "model"), tiny_bert_path)
    nlp(TEXT)
    save_pipeline(nlp, tmp_path / "pipeline")
    nlp.get_pipe("bertram").to_disk(tmp_path / "component")
    save_bertram(load_bertram(run / "model"), tmp_path / "model")
    written = [
        store,
        targets,
        run,
        run / "model",
        run / "targets",
        run / "cache",
        *sorted(run.glob("stage*")),
        table,
        tmp_path / "pipeline",
        tmp_path / "component",
        tmp_path / "model",
    ]
    mine = [_plant(directory) for directory in written]
    assert len(mine) == 13
    for force, epochs in (([], 1), (["--force"], 2)):  # the finished run again, then another with --restart
        again = {**commands, "train": train_args(epochs), "train --restart": [*train_args(3 - epochs), "--restart"]}
        for name, argv in again.items():
            result = invoke(*argv, *force)
            assert result.exit_code == 0, (name, force, result.output)
        save_pipeline(nlp, tmp_path / "pipeline", overwrite=bool(force))
        nlp.get_pipe("bertram").to_disk(tmp_path / "component")
        save_bertram(load_bertram(run / "model"), tmp_path / "model", force=bool(force))
        lost = [str(path) for path in mine if not path.is_file() or path.read_text() != f"mine: {path.parent.name}"]
        assert not lost, (force, lost)
    spacy.load(tmp_path / "pipeline")
    load_bertram(tmp_path / "model")
    assert not [p for p in tmp_path.rglob(".*") if p.name.endswith((".tmp", ".old"))]
