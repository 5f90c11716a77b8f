"""Every script in benchmarks/ runs on a small setting, on data made here, and ends with its JSON line.

The benchmarks measure speed and memory on the real MiniLM; nothing in the library runs them, so without these
runs a change elsewhere breaks them unseen. The figures of a run this small mean nothing: what is checked is
that each script runs to its headline JSON line with the keys the docs quote, and the invariants it checks
itself (the same vectors or losses both ways).
"""

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.util import context_store_of

ROOT = Path(__file__).parent.parent
BENCHMARKS = ROOT / "benchmarks"
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if path.name != "timing.py")  # timing: a helper
COMMON = (
    "the",
    "farmer",
    "sold",
    "fruit",
    "at",
    "market",
    "garden",
    "and",
    "a",
    "morning",
    "bright",
    "people",
    "walked",
    "through",
    "village",
    "river",
    "slowly",
    "evening",
    "bought",
    "bread",
    "children",
)
RARE = (
    "kumquat",
    "quokka",
    "tarantula",
    "marzipan",
    "okapi",
    "pangolin",
    "axolotl",
    "kohlrabi",
    "tamarillo",
    "rambutan",
    "jabuticaba",
    "cassowary",
)
TWEET_TAGS = {"kumquat": "B-product", "quokka": "B-person", "okapi": "B-location"}

pytestmark = pytest.mark.slow  # each loads the MiniLM in one or more processes


def sentence(rng: random.Random, length: int) -> str:
    words = [rng.choice(RARE) if rng.random() < 0.1 else rng.choice(COMMON) for _ in range(length)]
    return " ".join(words).capitalize() + "."


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict:
    """assets/ (Rotten Tomatoes-like snippets, BBC-like articles, a corpus; no WNUT-16, as `all` leaves it),
    assets-ner/ (WNUT-16-like tweets), and a context store whose rare words occur 20-99 times."""
    root = tmp_path_factory.mktemp("benchmarks")
    rng = random.Random(0)
    assets = root / "assets"
    (assets / "datasets").mkdir(parents=True)
    with open(assets / "datasets" / "rotten_tomatoes.jsonl", "w", encoding="utf8") as file_:
        for _ in range(60):
            file_.write(json.dumps({"text": sentence(rng, 14), "label": "pos"}) + "\n")
    with open(assets / "datasets" / "bbc.jsonl", "w", encoding="utf8") as file_:
        for _ in range(6):
            file_.write(json.dumps({"text": " ".join(sentence(rng, 16) for _ in range(12)), "label": "tech"}) + "\n")
    lines = [sentence(rng, 12) for _ in range(500)]  # each rare word about 50 times, each common one 250
    (assets / "corpus").mkdir()
    (assets / "corpus" / "a.txt").write_text("\n".join(lines[:250]) + "\n", encoding="utf8")
    (assets / "corpus" / "b.txt").write_text("\n".join(lines[250:]) + "\n", encoding="utf8")
    (root / "store").mkdir()
    store = context_store_of(root / "store", lines)
    ner = root / "assets-ner" / "ner"
    ner.mkdir(parents=True)
    tweets = []
    for _ in range(60):
        words = sentence(rng, 10).rstrip(".").split()
        tweets.append("\n".join(f"{word}\t{TWEET_TAGS.get(word.lower(), 'O')}" for word in words))
    (ner / "wnut16_train.txt").write_text("\n\n".join(tweets) + "\n", encoding="utf8")
    return {"assets": assets, "corpus": assets / "corpus", "store": store, "ner_assets": root / "assets-ner"}


def run_script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCHMARKS / name), *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


def headline(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_every_script_has_a_test_here():
    tested = {name for name in SCRIPTS if f"def test_{name[:-3]}" in Path(__file__).read_text(encoding="utf8")}
    assert tested == set(SCRIPTS), sorted(set(SCRIPTS) - tested)


def test_pipeline(data):
    """The default kinds on what `all` leaves: tweets (WNUT-16, not fetched by `all`) skipped with a note; the
    contexts of the doc and of the context memory, whose size it reports."""
    # --no-memory: the peak-RSS children (one MiniLM process per pipeline and kind) would double the time.
    result = run_script(
        "pipeline.py",
        "--assets",
        data["assets"],
        "--texts",
        8,
        "--long-texts",
        1,
        "--round",
        4,
        "--no-memory",
        "--contexts",
        "doc+memory",
        "--against",
        "batched_tokenising=off",
        "--first-doc-pairs",
        1,
    )
    figures = headline(result)
    first = figures["first_doc"]["short"]  # a fresh process per pipeline: building it, then its first text
    assert first["pairs"] == 1 and all(
        first[k]["stock"] > 0 and first[k]["bertram"] > 0 for k in ("load_s", "first_doc_s")
    )
    assert first["first_doc_over_stock"] > 0 and "a fresh process (1 pairs)" in result.stdout
    held = figures["memory"]["short"]  # the context memory's size: each of its rare words, a context or more
    assert 0 < held["words"] <= held["contexts"] <= 8 * held["words"] and held["bytes"] > 10 * held["contexts"]
    assert "context memory:" in result.stdout
    assert "--against, cold cache" in result.stdout  # contexts tokenised one call each, in the same rounds
    assert figures["against"]["vector_cosine_mean"]["short"] > 1 - 1e-6  # an exact path: the same vectors
    assert "skipped tweets:" in result.stdout and figures["skipped"] == ["tweets"]
    for key in ("cold_over_stock", "warm_over_stock", "ms_per_rare_word", "rare_share"):
        assert set(figures[key]) == {"short", "long"}, key
    assert figures["rare_share"]["short"] > 0
    asked = run_script("pipeline.py", "--assets", data["assets"], "--kinds", "tweets", "--tweets", 4)
    assert asked.returncode != 0 and "wnut16_train.txt" in asked.stderr  # asked for by name: an error


def test_rule(data):
    """The default kinds (tweets missing here: skipped), the same decisions with and without the table."""
    result = run_script("rule.py", "--assets", data["assets"], "--texts", 20, "--long-texts", 2, "--rounds", 2)
    figures = headline(result)
    assert figures["skipped"] == ["tweets"] and figures["same_decisions"] == {"short": True, "long": True}
    assert figures["table_forms"] > 25_000 and 0 < figures["table_share"]["short"] < 1


def test_vectors(data):
    figures = headline(
        run_script(
            "vectors.py",
            "--store",
            data["store"],
            "--assets",
            data["assets"],
            "--words",
            4,
            "--contexts",
            2,
            "--round-words",
            2,
            "--shard-size",
            2,
            "--texts",
            12,
            "--round-texts",
            6,
        )
    )
    assert figures["words"] == 4 and figures["max_abs_diff"] < 1e-4  # Dask's rows are the single process's


def test_infer(data):
    figures = headline(
        run_script("infer.py", "--corpus", data["corpus"], "--words", 6, "--contexts", 2, "--round-words", 3)
    )
    assert figures["words"] == 6


def test_train(data):
    # No store here: the corpus's lines (its words seen 20+ times; a store's words need 100), 20 words at least.
    result = run_script(
        "train.py",
        "--store",
        data["corpus"] / "no-store",
        "--corpus",
        data["corpus"],
        "--words",
        20,
        "--contexts",
        4,
        "--epochs",
        2,
    )
    figures = json.loads(result.stdout.strip().splitlines()[-1])  # exit 1 where reuse is not 3x faster: tiny runs
    assert figures["loss_abs_diff_epoch2"] <= 1e-5 and figures["words"] > 0


def test_prepare_memory(data):
    figures = headline(run_script("prepare_memory.py", "--corpus", data["corpus"], "--min-count", 2))
    assert figures["words_10x"] == 10 * figures["words_1x"]


def test_ner(data):
    figures = headline(run_script("ner.py", "--assets", data["ner_assets"], "--tweets", 12, "--round", 6))
    assert figures["texts"] == 12 and figures["benchmark"] == "ner"


def test_device_drift(data):
    """It compares a CUDA device with the CPU: without one it stops at once with a message, no traceback."""
    import torch

    if torch.cuda.is_available():
        figures = headline(
            run_script(
                "device_drift.py",
                "--gpu-id",
                0,
                "--words",
                8,
                "--texts",
                8,
                "--corpus",
                data["corpus"],
                "--assets",
                data["assets"],
            )
        )
        assert "vectors" in figures
        return
    result = run_script(
        "device_drift.py",
        "--gpu-id",
        0,
        "--words",
        8,
        "--texts",
        8,
        "--corpus",
        data["corpus"],
        "--assets",
        data["assets"],
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "--gpu-id 0" in result.stderr


def test_train_scaling(data):
    """Two corpus sizes of the small corpus: each stage's seconds, the per-word slopes and the projection."""
    result = run_script("train_scaling.py", "--corpus", data["corpus"], "--sizes", "1,2", "--words", 20, "--epochs", 1)
    figures = headline(result)
    assert [p["corpus"] for p in figures["points"]] == [1, 2] and figures["dask"] is None
    assert figures["points"][1]["corpus_words"] == 2 * figures["points"][0]["corpus_words"]
    first, second = figures["points"]  # the corpus has 33 words: 2x takes what there is
    assert 20 <= first["words"] < second["words"] and second["rows"] > first["rows"] > 0
    assert set(figures["projection_100x"]) == {"prepare_s", "targets_s", "state_cache_s", "epoch_s"}
