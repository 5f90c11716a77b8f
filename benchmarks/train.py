"""Stage-1 seconds per epoch on the MiniLM: encoder states reused vs recomputed every epoch.

In stage 1 (context only) the frozen encoder's state at the mask depends on no
trained parameter. With reuse, every pool context is encoded once (in epoch 1)
and later epochs train only the attentive-mimicking head; without it, every
step encodes its sampled contexts again. Both runs use the same words,
contexts, seeds and context samples, in one process, so their losses agree
(to float rounding: the encoder sees different batches) and their times
compare side by side.

    python benchmarks/train.py            # 400 words x 16 contexts, 3 epochs
    python benchmarks/train.py --quick    # 60 words x 8 contexts (under a minute)

Contexts come from the context store (`corpus/bertram`, from `prepare`), or,
when there is none, from lines of the embedded corpus in assets/corpus.
The last line printed is one JSON object with the headline figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import torch

from spacy_bertram import TrainSettings, open_context_store
from spacy_bertram.project_support import (
    MemoryTrainingSource,
    OTASettings,
    build_targets,
    load_encoder,
    make_deterministic,
    select_device,
)
from spacy_bertram.training.stages import StageSpec, TrainingRun

ROOT = Path(__file__).resolve().parents[1]


def context_source(store: Path, corpus: Path, max_lines: int):
    if store.exists():
        return open_context_store(store), f"context store {store}"
    files = sorted(corpus.glob("*.txt"))
    if not files:
        sys.exit(
            f"No context store at {store} and no corpus in {corpus}: run `python -m spacy_bertram "
            "prepare` (or scripts/build_corpus.py) first, or pass --store / --corpus."
        )
    per_file = max_lines // len(files)

    def lines():
        for path in files:
            with open(path, encoding="utf8") as file_:
                yield from itertools.islice(file_, per_file)

    return MemoryTrainingSource.from_lines(
        lines(), max_contexts=64
    ), f"{per_file} lines from each of {len(files)} files in {corpus}"


def stage1(run_settings: TrainSettings, targets, contexts, encoder, tokenizer, epochs: int, device=None):
    run = TrainingRun(
        targets,
        contexts,
        encoder,
        tokenizer,
        run_settings,
        None,
        device=device,
        progress=False,
        log=lambda line: print("  " + line, flush=True),
    )
    spec = StageSpec(1, "context", ("context",), epochs, run_settings.lr[0], run_settings.batch_words[0], True)
    run.pools(run.network("context", True, 1))  # tokenising is the same for both: keep it out of the timing
    metrics = run.stage(spec, validate=False).metrics
    seconds = [e["seconds"] for e in metrics["epochs"]]
    if metrics["cache"] is not None:
        seconds[0] += metrics["cache"]["seconds"]  # encoding the pool once is part of epoch 1
    return seconds, [e["loss"] for e in metrics["epochs"]], metrics


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="60 words x 8 contexts")
    parser.add_argument("--words", type=int, default=None)
    parser.add_argument("--contexts", type=int, default=None, help="contexts per word (pool)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--store", type=Path, default=ROOT / "corpus" / "bertram")
    parser.add_argument("--corpus", type=Path, default=ROOT / "assets" / "corpus")
    parser.add_argument(
        "--gpu-id", type=int, default=-1, help="-1: CPU; N: CUDA device N (deterministic mode, as train)"
    )
    args = parser.parse_args()
    device = select_device(args.gpu_id)
    make_deterministic(device)
    n_words = args.words or (60 if args.quick else 400)
    pool = args.contexts or (8 if args.quick else 16)
    started = time.perf_counter()
    encoder, tokenizer = load_encoder("default", device=device)
    source, where = context_source(args.store, args.corpus, 20_000 if args.quick else 200_000)
    min_count = 20 if isinstance(source, MemoryTrainingSource) else 100
    targets = build_targets(
        source,
        encoder,
        tokenizer,
        "default",
        min_count=min_count,
        max_words=n_words,
        ota=OTASettings(steps=5),
        device=device,
        progress=False,
    )
    contexts = [source.contexts(w, pool) for w in targets.words]
    settings = dict(pool_contexts=pool, max_contexts=pool, min_contexts=min(4, pool), lr=(1e-2, 1e-2, 1e-2))
    print(
        f"{len(targets.indices(False))} training words x up to {pool} contexts ({where}); "
        f"torch threads {torch.get_num_threads()}",
        flush=True,
    )
    print("reusing encoder states:", flush=True)
    reuse_s, reuse_loss, reuse = stage1(
        TrainSettings.from_dict({**settings, "reuse_states": True}),
        targets,
        contexts,
        encoder,
        tokenizer,
        args.epochs,
        device,
    )
    print("recomputing encoder states every epoch:", flush=True)
    again_s, again_loss, _ = stage1(
        TrainSettings.from_dict({**settings, "reuse_states": False}),
        targets,
        contexts,
        encoder,
        tokenizer,
        args.epochs,
        device,
    )
    print(f"{'epoch':>5} {'reuse s':>9} {'recompute s':>12} {'reuse loss':>12} {'recompute loss':>15}")
    for i, (a, b, la, lb) in enumerate(zip(reuse_s, again_s, reuse_loss, again_loss), 1):
        print(f"{i:>5} {a:>9.2f} {b:>12.2f} {la:>12.7f} {lb:>15.7f}")
    last = min(3, args.epochs) - 1
    diff = abs(reuse_loss[1] - again_loss[1]) if args.epochs >= 2 else abs(reuse_loss[0] - again_loss[0])
    result = {
        "benchmark": "train-stage1-reuse",
        "quick": args.quick,
        "words": len(targets.indices(False)),
        "pool_contexts": pool,
        "rows": reuse["cache"]["rows"],
        "reuse_epoch_seconds": [round(s, 2) for s in reuse_s],
        "recompute_epoch_seconds": [round(s, 2) for s in again_s],
        f"speedup_epoch{last + 1}": round(again_s[last] / reuse_s[last], 1),
        f"speedup_cumulative_{last + 1}_epochs": round(sum(again_s[: last + 1]) / sum(reuse_s[: last + 1]), 2),
        "loss_abs_diff_epoch2": diff,
        "seconds_total": round(time.perf_counter() - started, 1),
    }
    ok = diff <= 1e-5 and again_s[last] >= 3 * reuse_s[last]
    result["ok"] = ok
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
