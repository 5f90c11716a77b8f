"""The bad inputs the package is tried with: damaged files, model-directory damages, kills and bad
command-line values. `test_package_fault_injection.py` runs them; the README states how many there are
(`bad_inputs_tried`)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from spacy_bertram import load_bertram, save_bertram
from spacy_bertram.rarity.frequencies import CountTable, write_counts

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
TRAIN_KILLS = [
    "while saving the targets",
    "after a random epoch",
    "after a later random epoch",
    "while saving the model",
]
#: Command-line values that once did the wrong thing silently, hung, or failed late: (name, argv, error).
#: {model}, {store}, {corpus}, {pairs} are the artifacts; {out} must not exist afterwards.
BAD_VALUES = [
    ("prepare --workers -1", ["prepare", "{corpus}", "{out}", "--workers", "-1"], "Invalid value for '--workers'"),
    (
        "vectors --workers -1",
        ["vectors", "{model}", "{store}", "{out}", "--workers", "-1"],
        "Invalid value for '--workers'",
    ),
    (
        "vectors --token-budget -4",
        ["vectors", "{model}", "{store}", "{out}", "--workers", "0", "--token-budget", "-4"],
        "Invalid value for '--token-budget'",
    ),
    (
        "prepare --context-words 0",
        ["prepare", "{corpus}", "{out}", "--context-words", "0"],
        "Invalid value for '--context-words'",
    ),
    ("prepare with only one path", ["prepare", "{corpus}"], "prepare needs the corpus and the output directory"),
    (
        "similarity --max-contexts -3",
        ["similarity", "{pairs}", "{store}", "{model}", "--output", "{out}/m.json", "--max-contexts", "-3"],
        "Invalid value for '--max-contexts'",
    ),
    (
        "train --max-words 2",
        ["train", "{store}", "{out}", "--max-words", "2", "--no-progress"],
        "--max-words 2 is below the 20 training words",
    ),
    (
        "train --epochs 1 1 --no-progress",
        ["train", "{store}", "{out}", "--epochs", "1", "1", "--no-progress"],
        "--epochs takes 3 values",
    ),
    (
        "train --read-layer 99",
        ["train", "{store}", "{out}", "--base-model", "{tiny}", "--read-layer", "99", "--no-progress"],
        "read_layer 99 (train's --read-layer) is out of range: the base model '{tiny}' has 2 layers, so read_layer "
        "must be in -3..2",
    ),
    (
        "train --epochs 0 0 0",
        ["train", "{store}", "{out}", "--epochs", "0", "0", "0", "--no-progress"],
        "--epochs 0 0 0 trains none of the stages the 'inplace' mode runs",
    ),
    (
        "train --base-model /nonexistent/enc",
        ["train", "{store}", "{out}", "--base-model", "/nonexistent/enc", "--no-progress"],
        "--base-model '/nonexistent/enc' is neither a directory here nor a Hugging Face model name",
    ),
    (
        "targets --base-model /nonexistent/enc",
        ["targets", "{store}", "{out}", "--base-model", "/nonexistent/enc", "--no-progress"],
        "--base-model '/nonexistent/enc' is neither a directory here nor a Hugging Face model name",
    ),
    (
        "prepare --min-count -5",
        ["prepare", "{corpus}", "{out}", "--min-count", "-5"],
        "Invalid value for '--min-count'",
    ),
    ("prepare with a missing corpus", ["prepare", "{corpus}/missing", "{out}"], "Corpus path does not exist"),
    (
        "vectors --words missing",
        ["vectors", "{model}", "{store}", "{out}", "--workers", "0", "--words", "{corpus}/missing.txt"],
        "Cannot read the word list",
    ),
    (
        "rare-words --lang zz",
        ["rare-words", "{model}", "a kumquat", "--lang", "zz"],
        "--lang 'zz' is not a language spaCy knows",
    ),
    ("ner-folds --lang zz", ["ner-folds", "wnut16", "{out}", "--lang", "zz"], "--lang 'zz' is not a language"),
    (
        "vectors --gpu-id 99",
        ["vectors", "{model}", "{store}", "{out}", "--workers", "0", "--gpu-id", "99"],
        "--gpu-id 99",
    ),
    (
        "rare-words --max-zipf nan",
        ["rare-words", "{model}", "a kumquat", "--max-zipf", "nan"],
        "--max-zipf must be a Zipf value above 0 and at most 9",
    ),
    (
        "evaluate --max-zipf inf",
        ["evaluate", "{model}", "{corpus}", "{out}", "--max-zipf", "inf"],
        "--max-zipf must be a Zipf value",
    ),
    (
        "evaluate-originals --max-zipf nan",
        ["evaluate-originals", "{model}", "{corpus}", "{out}", "--bertram", "{model}", "--max-zipf", "nan"],
        "--max-zipf must be a Zipf value",
    ),
    (
        "assemble --max-zipf nan",
        ["assemble", "{model}", "{model}", "{out}", "--max-zipf", "nan"],
        "--max-zipf must be a Zipf value",
    ),
    (
        "rarify --max-zipf nan",
        ["rarify", "{model}", "{corpus}", "{out}", "--counts", "{store}", "--max-zipf", "nan"],
        "--max-zipf must be a Zipf value",
    ),
    (
        "train --lr nan",
        ["train", "{store}", "{out}", "--lr", "nan", "0.01", "0.01", "--no-progress"],
        "Invalid value for '--lr': must be a finite number above 0, got nan",
    ),
    (
        "train --held-out nan",
        ["train", "{store}", "{out}", "--held-out", "nan"],
        "'--held-out': must be a finite number",
    ),
    (
        "train --warmup 1",
        ["train", "{store}", "{out}", "--warmup", "1"],
        "'--warmup': must be a finite number at least 0 and below 1, got 1",
    ),
    ("targets --ota-batch 0", ["targets", "{store}", "{out}", "--ota-batch", "0"], "Invalid value for '--ota-batch'"),
    (
        "split --dev-fraction nan",
        ["split", "{corpus}/c.txt", "{out}", "--dev-fraction", "nan"],
        "Invalid value for '--dev-fraction': must be a finite number",
    ),
    (
        "evaluate-originals --bootstrap-resamples -1",
        ["evaluate-originals", "{model}", "{corpus}", "{out}", "--bertram", "{model}", "--bootstrap-resamples", "-1"],
        "Invalid value for '--bootstrap-resamples'",
    ),
    (
        "evaluate --bootstrap-resamples 0",
        ["evaluate", "{model}", "{corpus}", "{out}", "--bootstrap-resamples", "0"],
        "Invalid value for '--bootstrap-resamples'",
    ),
    (
        "pool --bootstrap-resamples 0",
        ["pool", "{corpus}", "--output", "{out}", "--bootstrap-resamples", "0"],
        "Invalid value for '--bootstrap-resamples'",
    ),
    (
        "intrinsic --bootstrap 0",
        ["intrinsic", "{model}", "--output", "{out}/m.json", "--bootstrap", "0"],
        "Invalid value for '--bootstrap'",
    ),
    (
        "ner-evaluate --bootstrap-resamples 0",
        ["ner-evaluate", "{corpus}", "{corpus}", "{out}", "--bootstrap-resamples", "0"],
        "Invalid value for '--bootstrap-resamples'",
    ),
    (
        "train-baseline --learn-rate 0",
        ["train-baseline", "{corpus}", "{out}", "--learn-rate", "0"],
        "Invalid value for '--learn-rate': must be a finite number above 0, got 0",
    ),
    (
        "train-baseline without a split",
        ["train-baseline", "{corpus}/missing", "{out}"],
        "does not exist: it is the output of `split`",
    ),
    ("rarify without a split", ["rarify", "{model}", "{corpus}/missing", "{out}", "--counts", "{store}"], "SPLITS_DIR"),
    (
        "evaluate-originals without a split",
        ["evaluate-originals", "{model}", "{corpus}/missing", "{out}", "--bertram", "{model}"],
        "it is the output of `split`",
    ),
    (
        "evaluate without a rarified set",
        ["evaluate", "{model}", "{corpus}", "{out}", "--bertram", "{model}"],
        "has no test.jsonl: it is the output of `rarify`",
    ),
    (
        "synonym-recovery --max-zipf nan",
        ["synonym-recovery", "{model}", "--wordnet", "--output", "{out}/m.json", "--max-zipf", "nan"],
        "--max-zipf must be a Zipf value",
    ),
    (
        "synonym-recovery without a rarified set",
        ["synonym-recovery", "{model}", "--rarified", "{corpus}", "--output", "{out}/m.json"],
        "has no test.jsonl",
    ),
    (
        "ner-train without folds",
        ["ner-train", "{corpus}", "{out}", "--bertram", "{model}"],
        "has no folds.json: it is the output of `ner-folds`",
    ),
]
PREPARE_KILLS = [
    "while counting",
    "while collecting contexts",
    "while writing the store",
    "while writing counts.tsv",
    "while writing prepare.json",
]


def _weights_bytes(directory: Path, change: Callable[[bytearray, int, random.Random], None]) -> None:
    """Change the tensor bytes of weights.safetensors in place (its header, in front, stays readable)."""
    path = directory / "weights.safetensors"
    data = bytearray(path.read_bytes())
    change(data, 8 + int.from_bytes(data[:8], "little"), random.Random(0))
    path.write_bytes(bytes(data))


def _flip_one_percent(data: bytearray, start: int, rng: random.Random) -> None:
    for i in rng.sample(range(start, len(data)), (len(data) - start) // 100):
        data[i] ^= rng.randrange(1, 256)


def _zero(data: bytearray, start: int, rng: random.Random) -> None:
    data[start:] = bytes(len(data) - start)


def _saved_with(value: float, tensors: Optional[str] = None) -> Callable[[Path], None]:
    """Weights set to `value` (a diverged training run), saved by save_bertram: the digests match."""

    def damage(directory: Path) -> None:
        network = load_bertram(directory)
        with torch.no_grad():
            for name, weight in network.named_parameters():
                if tensors in (None, name):
                    weight.fill_(value)
        save_bertram(network, directory, counts=CountTable.from_model_dir(directory).counts)

    return damage


def _edit_config(key: str, value, digests: bool = True) -> Callable[[Path], None]:
    def damage(directory: Path) -> None:
        path = directory / "config.json"
        path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf8")), key: value}), encoding="utf8")
        if not digests:
            (directory / "digests.json").unlink()

    return damage


def _recorded_and_edited(key: str, value) -> Callable[[Path], None]:
    """config.json and the fields recorded with the weights edited alike, digests.json deleted."""

    def damage(directory: Path) -> None:
        path = directory / "weights.safetensors"
        with safe_open(str(path), framework="pt") as file_:
            metadata = dict(file_.metadata())
        metadata["spacy-bertram"] = json.dumps({**json.loads(metadata["spacy-bertram"]), key: value}, sort_keys=True)
        save_file(load_file(str(path)), str(path), metadata=metadata)
        _edit_config(key, value, digests=False)(directory)

    return damage


def _without_recorded_fields(directory: Path) -> None:
    """The weights written again without the config fields recorded with them, digests.json deleted."""
    path = directory / "weights.safetensors"
    save_file(load_file(str(path)), str(path), metadata={"format": "spacy-bertram"})
    (directory / "digests.json").unlink()


def _counts_added_later(directory: Path) -> None:
    counts = CountTable.from_model_dir(directory).counts
    save_bertram(load_bertram(directory), directory)
    write_counts(directory / "counts.tsv", counts)


#: Damaged model directories: (name, damage, the file the error names (None: loads, with a warning), message).
MODEL_DAMAGES = [
    (
        "1% of the weights' bytes flipped",
        lambda d: _weights_bytes(d, _flip_one_percent),
        "weights.safetensors",
        "does not match its digest",
    ),
    ("weights zeroed", lambda d: _weights_bytes(d, _zero), "weights.safetensors", "does not match its digest"),
    ("NaN weights saved", _saved_with(float("nan")), "weights.safetensors", "NaN"),
    (
        "infinite weights saved",
        _saved_with(float("inf"), "projection.weight"),
        "weights.safetensors",
        "'projection.weight' in",
    ),
    ("mode edited in config.json", _edit_config("mode", "add"), "config.json", "does not match its digest"),
    (
        "mode edited in config.json, digests.json deleted",
        _edit_config("mode", "add", digests=False),
        "config.json",
        "sets mode = 'add', but the weights",
    ),
    (
        "a width edited in config.json",
        _edit_config("encoder_hidden_width", 64),
        "config.json",
        "does not match its digest",
    ),
    (
        "a width edited in config.json, digests.json deleted",
        _edit_config("encoder_hidden_width", 64, digests=False),
        "config.json",
        "sets encoder_hidden_width = 64, but the weights",
    ),
    (
        "a width edited in config.json and in the fields recorded with the weights",
        _recorded_and_edited("encoder_hidden_width", 64),
        "config.json",
        "are 32 wide",
    ),
    (
        "weights without the recorded config fields",
        _without_recorded_fields,
        "weights.safetensors",
        "does not record the config fields its weights depend on",
    ),
    (
        "read_layer 99 in config.json, digests.json deleted",
        _edit_config("read_layer", 99, digests=False),
        "config.json",
        "read_layer 99",
    ),
    ("counts.tsv deleted", lambda d: (d / "counts.tsv").unlink(), "counts.tsv", "is missing"),
    ("counts.tsv added after the save", _counts_added_later, "counts.tsv", "is not among the files"),
    (
        "digests.json damaged",
        lambda d: (d / "digests.json").write_text("{", encoding="utf8"),
        "digests.json",
        "Corrupt digest list",
    ),
    ("digests.json deleted", lambda d: (d / "digests.json").unlink(), None, ""),
]


def corrupt_cases() -> List[Tuple[str, str, str]]:
    """(kind, file, corruption) of every damaged-file case."""
    cases = []
    for kind, files in (
        ("model", MODEL_FILES),
        ("pipeline", PIPELINE_FILES),
        ("store", STORE_FILES),
        ("training", TRAINING_FILES),
    ):
        cases += [(kind, name, how) for name in files for how in CORRUPTIONS]
    cases += [("corpus", "corpus/c.txt", how) for how in CORPUS_CORRUPTIONS]
    return cases


def bad_inputs_tried() -> int:
    return (
        len(corrupt_cases())
        + len(SAVE_LIMITS)
        + len(TRAIN_KILLS)
        + len(PREPARE_KILLS)
        + len(BAD_VALUES)
        + len(MODEL_DAMAGES)
    )
