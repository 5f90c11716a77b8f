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
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest
import spacy
import torch
from safetensors.torch import load_file

import spacy_bertram.training.store_builder as contexts_mod
import spacy_bertram.frequencies as frequencies_mod
import spacy_bertram.storage as storage_mod
import spacy_bertram.training.prepare as prepare_mod
import spacy_bertram.training.targets as targets_mod
from spacy_bertram import NgramVocab, create_bertram, load_bertram, save_bertram
from spacy_bertram.pipeline.contexts import ContextStore
from spacy_bertram.frequencies import CountTable
from spacy_bertram.training.prepare import prepare
from spacy_bertram.training.sources import MemoryContexts
from spacy_bertram.training.stages import TrainSettings, plan_stages
from tests.util import SMALL, TEXT, Killed, _train, corpus_lines, invoke, make_bertram_dir, make_nlp, same_vectors

ROOT = Path(__file__).resolve().parents[1]

CORRUPTIONS: Dict[str, Callable[[bytes], bytes]] = {
    "empty": lambda data: b"",
    "truncated": lambda data: data[: len(data) // 2],
    "junk": lambda data: bytes(random.Random(len(data)).randrange(256) for _ in range(max(64, len(data) // 3))),
}
#: The corpus is text: half a text is still a text, so it is cut inside a character instead.
CORPUS_CORRUPTIONS: Dict[str, Callable[[bytes], bytes]] = {
    "empty": CORRUPTIONS["empty"],
    "junk": CORRUPTIONS["junk"],
    "cut inside a character": lambda data: data[: data.index("é".encode()) + 1],
}

MODEL_FILES = ["config.json", "ngrams.json", "weights.safetensors", "counts.tsv"]
PIPELINE_FILES = ["bertram/cfg", "bertram/model", "bertram/frequencies", "bertram/cache"]
STORE_FILES = ["contexts.sqlite"]
TRAINING_FILES = [
    "progress.json",
    "targets/targets.json",
    "targets/targets.safetensors",
    "stage1-context/weights.safetensors",
    "checkpoints/stage3-add/trainer.json",
    "checkpoints/stage3-add/state.safetensors",
    "checkpoints/stage3-add/model/weights.safetensors",
    "cache/states-*.npy",
]
SAVE_LIMITS = [1, 4096, 60_000]  # bytes a file may grow to while the component saves
TRAIN_KILLS = ["while saving the targets", "after a random epoch", "after a later random epoch",
               "while saving the model"]
#: Command-line values that once did the wrong thing silently, hung, or failed late: (name, argv, error).
#: {model}, {store}, {corpus}, {pairs} are the artifacts; {out} must not exist afterwards.
BAD_VALUES = [
    ("prepare --workers -1", ["prepare", "{corpus}", "{out}", "--workers", "-1"], "--workers must be 0 or more"),
    ("vectors --workers -1", ["vectors", "{model}", "{store}", "{out}", "--workers", "-1"],
     "--workers must be 0 or more"),
    ("vectors --token-budget -4", ["vectors", "{model}", "{store}", "{out}", "--workers", "0", "--token-budget", "-4"],
     "--token-budget must be 0"),
    ("prepare --context-window 0", ["prepare", "{corpus}", "{out}", "--context-window", "0"],
     "--context-window must be at least 1"),
    ("prepare with only one path", ["prepare", "{corpus}"], "prepare needs the corpus and the output directory"),
    ("similarity --max-contexts -3", ["similarity", "{pairs}", "{store}", "{model}", "--output", "{out}/m.json",
                                      "--max-contexts", "-3"], "--max-contexts must be at least 1"),
    ("train --max-words 2", ["train", "{store}", "{out}", "--max-words", "2", "--no-progress"],
     "--max-words 2 is below the 20 training words"),
    ("train --epochs 1 1 --no-progress", ["train", "{store}", "{out}", "--epochs", "1", "1", "--no-progress"],
     "--epochs takes 3 values"),
    ("rare-words --lang zz", ["rare-words", "{model}", "a kumquat", "--lang", "zz"],
     "--lang 'zz' is not a language spaCy knows"),
    ("ner-folds --lang zz", ["ner-folds", "wnut16", "{out}", "--lang", "zz"], "--lang 'zz' is not a language"),
    ("vectors --gpu-id 99", ["vectors", "{model}", "{store}", "{out}", "--workers", "0", "--gpu-id", "99"],
     "--gpu-id 99"),
    ("rare-words --max-zipf nan", ["rare-words", "{model}", "a kumquat", "--max-zipf", "nan"],
     "--max-zipf must be a Zipf value above 0 and at most 9"),
    ("evaluate --max-zipf inf", ["evaluate", "{model}", "{corpus}", "{out}", "--max-zipf", "inf"],
     "--max-zipf must be a Zipf value"),
    ("evaluate-originals --max-zipf nan", ["evaluate-originals", "{model}", "{corpus}", "{out}", "--bertram", "{model}",
                                           "--max-zipf", "nan"], "--max-zipf must be a Zipf value"),
    ("assemble --max-zipf nan", ["assemble", "{model}", "{model}", "{out}", "--max-zipf", "nan"],
     "--max-zipf must be a Zipf value"),
    ("rarify --max-zipf nan", ["rarify", "{model}", "{corpus}", "{out}", "--counts", "{store}", "--max-zipf", "nan"],
     "--max-zipf must be a Zipf value"),
    ("train --lr nan", ["train", "{store}", "{out}", "--lr", "nan", "0.01", "0.01", "--no-progress"],
     "--lr must be a finite number, got nan"),
    ("train --held-out nan", ["train", "{store}", "{out}", "--held-out", "nan"], "--held-out must be a finite number"),
    ("train --warmup 1", ["train", "{store}", "{out}", "--warmup", "1"], "--warmup must be in [0, 1), got 1.0"),
    ("targets --ota-batch 0", ["targets", "{store}", "{out}", "--ota-batch", "0"], "--ota-batch must be at least 1"),
    ("split --dev-fraction nan", ["split", "{corpus}/c.txt", "{out}", "--dev-fraction", "nan"],
     "--dev-fraction must be a finite number"),
    ("evaluate-originals --bootstrap-resamples -1", ["evaluate-originals", "{model}", "{corpus}", "{out}",
                                                     "--bertram", "{model}", "--bootstrap-resamples", "-1"],
     "--bootstrap-resamples must be at least 1, got -1"),
    ("evaluate --bootstrap-resamples 0", ["evaluate", "{model}", "{corpus}", "{out}", "--bootstrap-resamples", "0"],
     "--bootstrap-resamples must be at least 1, got 0"),
    ("pool --bootstrap-resamples 0", ["pool", "{corpus}", "--output", "{out}", "--bootstrap-resamples", "0"],
     "--bootstrap-resamples must be at least 1, got 0"),
    ("intrinsic --bootstrap 0", ["intrinsic", "{model}", "--output", "{out}/m.json", "--bootstrap", "0"],
     "--bootstrap must be at least 1, got 0"),
    ("ner-evaluate --bootstrap-resamples 0", ["ner-evaluate", "{corpus}", "{corpus}", "{out}",
                                              "--bootstrap-resamples", "0"], "--bootstrap-resamples must be at least 1"),
    ("train-baseline --learn-rate 0", ["train-baseline", "{corpus}", "{out}", "--learn-rate", "0"],
     "--learn-rate must be above 0, got 0.0"),
    ("train-baseline without a split", ["train-baseline", "{corpus}/missing", "{out}"],
     "does not exist: it is the output of `split`"),
    ("rarify without a split", ["rarify", "{model}", "{corpus}/missing", "{out}", "--counts", "{store}"],
     "SPLITS_DIR"),
    ("evaluate-originals without a split", ["evaluate-originals", "{model}", "{corpus}/missing", "{out}",
                                            "--bertram", "{model}"], "it is the output of `split`"),
    ("evaluate without a rarified set", ["evaluate", "{model}", "{corpus}", "{out}", "--bertram", "{model}"],
     "has no test.jsonl: it is the output of `rarify`"),
    ("synonym-recovery --max-zipf nan", ["synonym-recovery", "{model}", "--wordnet", "--output", "{out}/m.json",
                                         "--max-zipf", "nan"], "--max-zipf must be a Zipf value"),
    ("synonym-recovery without a rarified set", ["synonym-recovery", "{model}", "--rarified", "{corpus}",
                                                 "--output", "{out}/m.json"], "has no test.jsonl"),
    ("ner-train without folds", ["ner-train", "{corpus}", "{out}", "--bertram", "{model}"],
     "has no folds.json: it is the output of `ner-folds`"),
]
PREPARE_KILLS = ["while counting", "while collecting contexts", "while writing the store",
                 "while writing counts.tsv", "while writing prepare.json"]


def corrupt_cases() -> List[Tuple[str, str, str]]:
    """(kind, file, corruption) of every damaged-file case."""
    cases = []
    for kind, files in (("model", MODEL_FILES), ("pipeline", PIPELINE_FILES), ("store", STORE_FILES),
                        ("training", TRAINING_FILES)):
        cases += [(kind, name, how) for name in files for how in CORRUPTIONS]
    cases += [("corpus", "corpus/c.txt", how) for how in CORPUS_CORRUPTIONS]
    return cases


def bad_inputs_tried() -> int:
    return len(corrupt_cases()) + len(SAVE_LIMITS) + len(TRAIN_KILLS) + len(PREPARE_KILLS) + len(BAD_VALUES)


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
    network = create_bertram(tiny_bert_path, NgramVocab.from_words(["kumquat", "garden", "quokka"], min_count=1),
                             max_seq_length=32, max_contexts=8)
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
    directory = {"model": "model", "pipeline": "pipeline", "store": "store", "training": "training",
                 "corpus": "."}[kind]
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


# -- bad command-line values: refused, by name, before anything is written ------------------


@pytest.mark.parametrize("name, argv, error", BAD_VALUES, ids=[case[0] for case in BAD_VALUES])
def test_a_bad_value_is_refused_before_anything_is_written(artifacts, tmp_path, name, argv, error):
    corpus = tmp_path / "corpus"
    shutil.copytree(artifacts / "corpus", corpus)
    before = sorted(p.name for p in corpus.iterdir())
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("word1\tword2\tscore\nmarket\tkumquat\t3.5\ngarden\tkumquat\t1.0\n", encoding="utf8")
    paths = {"model": artifacts / "model", "store": artifacts / "store" / "contexts.sqlite", "corpus": corpus,
             "pairs": pairs, "out": tmp_path / "out"}
    result = invoke(*[arg.format(**paths) for arg in argv])
    assert result.exit_code != 0, result.output
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
    a, b = load_file(str(tmp_path / "whole" / "model" / "weights.safetensors")), load_file(str(out / "model" / "weights.safetensors"))
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
        "while collecting contexts": (contexts_mod, "tokenize_spans",
                                      after(rng.randrange(1, 1200), contexts_mod.tokenize_spans)),
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
