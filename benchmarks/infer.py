"""Words per second of BERTRAM inference on the MiniLM: batched vs one word at a time.

Both runs use the same network, words and contexts (real sentences from the
embedded corpus), in one process, so the ratio is a side-by-side measurement.
The one-word-at-a-time run is how the reference implementation infers.

    python benchmarks/infer.py            # 500 words x 8 contexts
    python benchmarks/infer.py --quick    # 96 words x 8 contexts, same ordering as the full run
    python benchmarks/infer.py --sweep 1024,2048,4096,8192   # also time these token budgets

The batched run uses the device's default token budget (`network.TOKEN_BUDGETS`),
which is the budget that measured fastest with `--sweep`. Both ways are warmed
up on a full round first (allocator, thread pools), and rounds alternate which
way goes first, so a short run ranks them as a long one does.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy
import torch

from spacy_bertram import create_bertram
from spacy_bertram.project_support import DEFAULT_CONTEXTS_PER_WORD, NgramVocab, select_device
from spacy_bertram.model.inputs import EncodedContext, batch_by_token_budget
from spacy_bertram.model.network import default_token_budget

from timing import timed  # benchmarks/timing.py (scripts run from this folder)

ROOT = Path(__file__).resolve().parents[1]
WORD_RE = re.compile(r"[A-Za-z]+")
MATMUL_ROWS = 4096


def collect_items(corpus_dir: Path, n_words: int, n_contexts: int, window: int = 25) -> List[Tuple[str, List[str]]]:
    """The first n_words words (length >= 6) with n_contexts distinct windows each."""
    files = sorted(corpus_dir.glob("*.txt"))
    if not files:
        sys.exit(
            f"No corpus in {corpus_dir}: build the embedded corpus first "
            "(python scripts/build_corpus.py), or pass --corpus DIR with .txt files."
        )
    contexts: Dict[str, List[str]] = defaultdict(list)
    done: List[str] = []
    for path in files:
        with open(path, encoding="utf8") as file_:
            for line in file_:
                tokens = line.split()
                for i, token in enumerate(tokens):
                    word = token.strip(".,;:!?\"'()[]").lower()
                    if len(word) < 6 or not WORD_RE.fullmatch(word) or len(contexts[word]) >= n_contexts:
                        continue
                    snippet = " ".join(tokens[max(0, i - window) : i + window + 1])
                    if snippet not in contexts[word]:
                        contexts[word].append(snippet)
                        if len(contexts[word]) == n_contexts:
                            done.append(word)
                            if len(done) == n_words:
                                return [(w, contexts[w]) for w in done]
    return [(w, contexts[w]) for w in done]


def padded_positions(rows: Sequence[EncodedContext], token_budget: int) -> int:
    """Encoder positions, padding included, when `rows` are batched under `token_budget`.

    Shows where batching can win on a CPU: the encoder is compute-bound, so the
    gain is bounded by the padding and per-call work that batching removes.
    """
    return sum(len(b) * max(len(rows[i]) for i in b) for b in batch_by_token_budget(rows, token_budget))


def matmul_gflops(width: int, inner: int, device: torch.device, rows: int = MATMUL_ROWS, repeats: int = 20) -> float:
    """What the device reaches on one big dense matmul of the encoder's shape and dtype: the ceiling."""
    a, b = torch.randn(rows, width, device=device), torch.randn(width, inner, device=device)
    for _ in range(3):
        a @ b
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize(device)
    return 2 * rows * width * inner * repeats / (time.perf_counter() - start) / 1e9


def synchronize(device: torch.device) -> None:
    """Wait for queued CUDA work, so that a wall clock around it measures it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def encoder_flops_per_position(config, length: float) -> float:
    """Dense FLOPs per encoder position: Q, K, V, O and the feed-forward, plus attention scores."""
    hidden, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return 2.0 * layers * (4 * hidden * hidden + 2 * hidden * inner + 2 * length * hidden)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="96 words instead of 500")
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--contexts", type=int, default=DEFAULT_CONTEXTS_PER_WORD)
    parser.add_argument("--corpus", type=Path, default=ROOT / "assets" / "corpus")
    parser.add_argument("--base-model", default="default")
    parser.add_argument("--mode", default="add")
    parser.add_argument("--token-budget", type=int, default=0, help="0: the device's default")
    parser.add_argument("--sweep", default="", help="comma-separated token budgets to time as well")
    parser.add_argument("--round-words", type=int, default=100, help="words per interleaved round (quick: 48)")
    parser.add_argument("--gpu-id", type=int, default=-1, help="-1: CPU; N: CUDA device N")
    args = parser.parse_args()
    device = select_device(args.gpu_id)
    n_words = 96 if args.quick else args.words
    if args.quick:
        args.round_words = 48
    items = collect_items(args.corpus, n_words, args.contexts)
    print(f"{len(items)} words x {args.contexts} contexts, torch threads: {torch.get_num_threads()}")
    vocab = NgramVocab.from_words([w for w, _ in items], min_count=2)
    network = create_bertram(args.base_model, ngram_vocab=vocab, mode=args.mode).to(device)
    args.token_budget = args.token_budget or default_token_budget(network.device)
    sweep = [int(b) for b in args.sweep.split(",") if b.strip() and int(b) != args.token_budget]
    # Warm-up of both ways on a full round: allocator, thread pools, the largest shapes.
    network.infer(items[: args.round_words], token_budget=args.token_budget)
    for item in items[:8]:
        network.infer([item])

    # Interleave the ways round by round, alternating which goes first, so that
    # load drifting on a shared machine affects all alike.
    batched_s = single_s = batched_cpu = single_cpu = 0.0
    max_diff = 0.0
    ratios: List[float] = []
    swept: Dict[int, float] = {b: 0.0 for b in sweep}
    for k, start in enumerate(range(0, len(items), args.round_words)):
        chunk = items[start : start + args.round_words]
        runs = {
            "batched": lambda: network.infer(chunk, token_budget=args.token_budget),
            "single": lambda: numpy.vstack([network.infer([item]) for item in chunk]),
        }
        runs.update({b: (lambda b: lambda: network.infer(chunk, token_budget=b))(b) for b in sweep})
        outs, walls = {}, {}
        for name in list(runs) if k % 2 == 0 else list(runs)[::-1]:
            outs[name], walls[name], cpu = timed(runs[name])
            if name == "batched":
                batched_cpu += cpu
            elif name == "single":
                single_cpu += cpu
        batched_s, single_s = batched_s + walls["batched"], single_s + walls["single"]
        for b in sweep:
            swept[b] += walls[b]
        ratios.append(walls["single"] / walls["batched"])
        max_diff = max(max_diff, float(numpy.abs(outs["batched"] - outs["single"]).max()))
    # Each (word, context) row encodes the same whether alone or in a batch: tokenise once.
    item_rows = [network.prepare([w], [c]).rows for w, c in items]
    real = sum(len(r) for rows in item_rows for r in rows)
    single_padded = sum(padded_positions(rows, args.token_budget) for rows in item_rows)
    batched_padded = sum(
        padded_positions([r for rows in item_rows[start : start + args.round_words] for r in rows], args.token_budget)
        for start in range(0, len(items), args.round_words)
    )
    batched, single = len(items) / batched_s, len(items) / single_s
    print(f"batched (token budget {args.token_budget}): {batched:8.1f} words/s")
    for b in sweep:
        print(f"batched (token budget {b}): {len(items) / swept[b]:8.1f} words/s")
    print(f"one word at a time:                  {single:8.1f} words/s")
    print(
        f"batched vs one at a time: {batched / single:.2f}x on total time, "
        f"{statistics.median(ratios):.2f}x median of {len(ratios)} paired rounds"
    )
    print(f"CPU seconds: batched {batched_cpu:.1f}, one at a time {single_cpu:.1f}")
    print(f"max |batched - single|: {max_diff:.2e}")
    print(
        f"encoder positions: {real} real; padded to {batched_padded} batched ({batched_padded / real:.3f}x), "
        f"{single_padded} one at a time ({single_padded / real:.3f}x)"
    )
    print(
        f"real encoder tokens per CPU second: batched {real / batched_cpu:.0f}, one at a time {real / single_cpu:.0f}"
    )
    config = network.encoder.config
    n_rows = sum(len(rows) for rows in item_rows)
    per_position = encoder_flops_per_position(config, batched_padded / max(n_rows, 1))
    ceiling = matmul_gflops(config.hidden_size, config.intermediate_size, network.device)
    batched_gflops = batched_padded * per_position / batched_s / 1e9
    single_gflops = single_padded * per_position / single_s / 1e9
    print(
        f"encoder GFLOP/s: batched {batched_gflops:.0f}, one at a time {single_gflops:.0f}; "
        f"a {MATMUL_ROWS}x{config.hidden_size} @ {config.hidden_size}x{config.intermediate_size} matmul: {ceiling:.0f} "
        f"(batched at {100 * batched_gflops / ceiling:.0f}% of it)"
    )
    print(
        f"encoder's share of the matmul rate: batched {batched_gflops / ceiling:.0%}, "
        f"one at a time {single_gflops / ceiling:.0%}"
    )
    # Best case for any batching: no padding at all, at the matmul's rate.
    bound = (single_padded / real) * (ceiling / single_gflops)
    print(f"upper bound on the batched speed-up here (no padding, matmul rate): {bound:.2f}x")
    peak_gpu_mib = None
    if network.device.type == "cuda":
        peak_gpu_mib = round(torch.cuda.max_memory_allocated(network.device) / 2**20, 1)
        print(f"peak GPU memory allocated by torch: {peak_gpu_mib} MiB ({torch.cuda.get_device_name(network.device)})")
    print(
        json.dumps(
            {
                "words": len(items),
                "device": str(network.device),
                "peak_gpu_mib": peak_gpu_mib,
                "contexts_per_word": args.contexts,
                "mode": args.mode,
                "batched_words_per_s": round(batched, 1),
                "single_words_per_s": round(single, 1),
                "speedup": round(batched / single, 2),
                "cpu_speedup": round(single_cpu / batched_cpu, 2),
                "max_abs_diff": max_diff,
                "padding_batched": round(batched_padded / real, 3),
                "padding_single": round(single_padded / real, 3),
                "matmul_gflops": round(ceiling, 1),
                "batched_gflops": round(batched_gflops, 1),
                "single_gflops": round(single_gflops, 1),
                "speedup_upper_bound": round(bound, 2),
                "token_budget": args.token_budget,
                "speedup_median_rounds": round(statistics.median(ratios), 2),
                "encoder_share_of_matmul": round(batched_gflops / ceiling, 3),
                "single_share_of_matmul": round(single_gflops / ceiling, 3),
                "sweep_words_per_s": {str(b): round(len(items) / t, 1) for b, t in swept.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
