"""How `prepare` and `train` grow with the corpus: seconds per stage at 1x, 2x and 4x, and a projection.

The corpus is the embedded one (assets/corpus) repeated k times (each file copied k times), so
every word's count grows k-fold: `prepare` reads k times the text, and at the project's
`--min-count` more words qualify as training words. Training is measured on the k-fold corpus's
store with k times `--words` training words (the most frequent; a fixed multiple keeps the
run short and the sizes exact): the OTA targets, the encoder-state cache (encoding each pool
row once) and the epochs (`--epochs`, reported per epoch; the project trains 60). A line fitted
through the sizes gives seconds per training word for the state cache and the epochs, per OTA
word for the targets (the most frequent words are rarely cut into pieces: OTA's share grows as
a run reaches rarer words, 597 of the project's 9,785), per corpus word for `prepare`, and the
projection to 100x the corpus and the project's training words.

`--workers 2` adds, at 1x, the same training with OTA and the state cache on a local Dask
cluster of that many worker processes (`train --workers`), side by side: its seconds against
one process's, and whether it gave the same targets and states (to 1e-5).

    python benchmarks/train_scaling.py            # sizes 1,2,4; 1,000 words at 1x; 3 epochs
    python benchmarks/train_scaling.py --quick    # sizes 1,2 of a 3% slice, 100 words at 1x (under a minute)

The last line printed is one JSON object with the headline figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy
from safetensors.numpy import load_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from bertram_experiments.assets import default_assets_dir  # noqa: E402
from spacy_bertram import RunOptions, TrainSettings, TrainingData, prepare, train  # noqa: E402
from spacy_bertram.project_support import OTASettings, optional_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: The project's `train-bertram` settings that shape the work (project.yml): 8 contexts per word, 10 OTA steps.
PROJECT_TRAINING = {"min_count": 30, "pool_contexts": 8, "max_contexts": 8, "ota_steps": 10}
#: OTA words per corpus word in the project's run (597 of 9,785).
OTA_SHARE = 0.06


def repeated_corpus(source: Path, times: int, fraction: float, directory: Path) -> Path:
    """`times` copies of each corpus file (the first `fraction` of its lines), in `directory`."""
    directory.mkdir(parents=True)
    for path in sorted(source.glob("*.txt")):
        lines = path.read_text(encoding="utf8").splitlines(keepends=True)
        text = "".join(lines[: max(1, int(len(lines) * fraction))])
        for copy in range(times):
            (directory / f"{path.stem}-{copy}.txt").write_text(text, encoding="utf8")
    return directory


def training_seconds(store: Path, output: Path, words: int, epochs: int, client: Any = None) -> Dict[str, Any]:
    """One `train` run (stage 1 only, no ablation) on `words` corpus words and, as in the project's run, about
    6% more that the encoder cuts into pieces (wordfreq's, with OTA targets): seconds of targets, state cache
    and epochs."""
    settings = TrainSettings.from_dict(
        {
            "epochs": (epochs, 0, 0),
            "pool_contexts": PROJECT_TRAINING["pool_contexts"],
            "max_contexts": PROJECT_TRAINING["max_contexts"],
        }
    )
    data = TrainingData(
        min_count=PROJECT_TRAINING["min_count"],
        max_words=words,
        multi_piece_words=round(OTA_SHARE * words),
        ota=OTASettings(steps=PROJECT_TRAINING["ota_steps"]),
    )
    started = time.perf_counter()
    metrics = train(
        store,
        output,
        settings,
        data,
        RunOptions(ablation=False, keep_cache=True, progress=False, log=lambda _: None, client=client),
    )
    stage = next(iter(metrics["stages"].values()))
    epoch_seconds = [e["seconds"] for e in stage["epochs"]]
    return {
        "words": metrics["targets"]["words"],
        "ota_words": metrics["targets"]["n_ota"],
        "rows": stage["cache"]["rows"],
        "targets_s": metrics["targets"]["seconds"],
        "state_cache_s": stage["cache"]["encode_seconds"],
        "epoch_s": round(float(numpy.median(epoch_seconds)), 2),
        "total_s": round(time.perf_counter() - started, 1),
    }


def per_word_slope(points: List[Dict[str, Any]], key: str, by: str = "words") -> float:
    """Least-squares seconds per unit of `by` (through the measured sizes)."""
    x = numpy.asarray([p[by] for p in points], dtype=float)
    y = numpy.asarray([p[key] for p in points], dtype=float)
    if len(points) > 1 and len(set(x)) > 1:
        return float(numpy.polyfit(x, y, 1)[0])
    return float(y[0] / x[0]) if x[0] else 0.0


def same_run(one: Path, other: Path) -> float:
    """The largest difference between two runs' targets and encoder states."""
    diffs = [
        float(
            numpy.abs(
                load_file(str(one / "targets" / "targets.safetensors"))["vectors"]
                - load_file(str(other / "targets" / "targets.safetensors"))["vectors"]
            ).max()
        )
    ]
    for states in sorted((one / "cache").glob("states-*.npy")):
        twin = other / "cache" / states.name
        diffs.append(float(numpy.abs(numpy.load(states) - numpy.load(twin)).max()) if twin.is_file() else float("inf"))
    return max(diffs)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1,2 of a 3%% slice of the corpus, 100 words at 1x")
    parser.add_argument("--corpus", type=Path, default=None, help="corpus directory (default: the embedded corpus)")
    parser.add_argument("--sizes", default=None, help="corpus multiples (default 1,2,4)")
    parser.add_argument("--words", type=int, default=None, help="training words at 1x (default 1,000)")
    parser.add_argument("--fraction", type=float, default=None, help="share of each corpus file's lines used")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="also at 1x: OTA and the state cache on N Dask workers")
    parser.add_argument("--project-words", type=int, default=9785, help="the training words a full run has at 1x")
    parser.add_argument("--project-ota-words", type=int, default=597, help="... and of them, OTA words")
    args = parser.parse_args(argv)
    assets = default_assets_dir()
    corpus = args.corpus or (assets if assets.is_absolute() or assets.exists() else ROOT / assets) / "corpus"
    if not any(corpus.glob("*.txt")):
        sys.exit(f"No corpus files (*.txt) in {corpus}: give --corpus or install the embedded corpus.")
    sizes = [int(s) for s in (args.sizes or ("1,2" if args.quick else "1,2,4")).split(",")]
    words = args.words or (100 if args.quick else 1000)
    fraction = args.fraction or (0.03 if args.quick else 1.0)
    points: List[Dict[str, Any]] = []
    dask: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for k in sizes:
            text = repeated_corpus(corpus, k, fraction, root / f"corpus-{k}")
            started = time.perf_counter()
            result = prepare(text, root / f"store-{k}", min_count=PROJECT_TRAINING["min_count"], progress=False)
            prepare_s = time.perf_counter() - started
            shutil.rmtree(text)
            point = {
                "corpus": k,
                "corpus_words": result.total_words,
                "prepare_s": round(prepare_s, 1),
                **training_seconds(root / f"store-{k}", root / f"train-{k}", words * k, args.epochs),
            }
            points.append(point)
            print(
                f"{k}x: {point['corpus_words']:,} corpus words, prepare {point['prepare_s']} s; {point['words']:,} "
                f"training words ({point['ota_words']} by OTA), {point['rows']:,} rows: targets "
                f"{point['targets_s']} s, state cache {point['state_cache_s']} s, {point['epoch_s']} s per epoch",
                flush=True,
            )
            if k == sizes[0] and args.workers:
                with optional_client(None, args.workers) as client:
                    spread = training_seconds(root / f"store-{k}", root / "train-dask", words * k, args.epochs, client)
                dask = {
                    "workers": args.workers,
                    "targets_s": spread["targets_s"],
                    "state_cache_s": spread["state_cache_s"],
                    "over_one_process": round(
                        (spread["targets_s"] + spread["state_cache_s"]) / (point["targets_s"] + point["state_cache_s"]),
                        3,
                    ),
                    "max_difference": same_run(root / f"train-{k}", root / "train-dask"),
                }
                dask["same_model"] = dask["max_difference"] <= 1e-5
                print(
                    f"  on {args.workers} Dask workers: targets {dask['targets_s']} s, state cache "
                    f"{dask['state_cache_s']} s ({dask['over_one_process']}x one process's), largest "
                    f"difference {dask['max_difference']:.2e}",
                    flush=True,
                )
    slopes = {stage: per_word_slope(points, stage) for stage in ("state_cache_s", "epoch_s")}
    slopes["targets_s"] = per_word_slope(points, "targets_s", by="ota_words")
    slopes["prepare_s"] = per_word_slope(points, "prepare_s", by="corpus_words")
    base = points[0]
    project_words = args.project_words
    projection = {
        "prepare_s": round(slopes["prepare_s"] * base["corpus_words"] / fraction * 100, 0),
        "targets_s": round(slopes["targets_s"] * args.project_ota_words * 100, 0),
        "state_cache_s": round(slopes["state_cache_s"] * project_words * 100, 0),
        "epoch_s": round(slopes["epoch_s"] * project_words * 100, 1),
    }
    print(
        "per unit: prepare {:.2f} s per million corpus words; targets {:.1f} ms per OTA word; per training "
        "word: state cache {:.2f} ms, an epoch {:.3f} ms".format(
            slopes["prepare_s"] * 1e6, 1e3 * slopes["targets_s"], 1e3 * slopes["state_cache_s"], 1e3 * slopes["epoch_s"]
        )
    )
    print(
        f"100x the corpus and {project_words * 100:,} training words ({args.project_ota_words * 100:,} by OTA; 100x "
        f"the project's): prepare "
        f"{projection['prepare_s']:.0f} s, targets {projection['targets_s']:.0f} s, state cache "
        f"{projection['state_cache_s']:.0f} s, {projection['epoch_s']:.0f} s per epoch (one process)"
    )
    print(
        json.dumps(
            {
                "benchmark": "train-scaling",
                "quick": args.quick,
                "points": points,
                "seconds_per_training_word": {k: round(slopes[k], 6) for k in ("state_cache_s", "epoch_s")},
                "targets_seconds_per_ota_word": round(slopes["targets_s"], 5),
                "prepare_seconds_per_million_words": round(slopes["prepare_s"] * 1e6, 2),
                "projection_100x": projection,
                "dask": dask or None,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
