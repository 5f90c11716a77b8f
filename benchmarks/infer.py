"""Words per second of BERTRAM inference on the MiniLM: batched vs one word at a time.

Both runs use the same network, words and contexts (real sentences from the
embedded corpus), in one process, so the ratio is a side-by-side measurement.
The one-word-at-a-time run is how the reference implementation infers.

    python benchmarks/infer.py            # 500 words x 8 contexts
    python benchmarks/infer.py --quick    # 24 words x 8 contexts
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Tuple

import numpy
import torch

from spacy_bertram import NgramVocab, create_bertram

ROOT = Path(__file__).resolve().parents[1]
WORD_RE = re.compile(r"[A-Za-z]+")


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


def timed(fn):
    """Result, wall seconds and CPU seconds (all threads of this process).

    CPU time is reported beside wall time because on a shared machine other
    processes stretch wall time but not the work this process does.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="24 words instead of 500")
    parser.add_argument("--words", type=int, default=500)
    parser.add_argument("--contexts", type=int, default=8)
    parser.add_argument("--corpus", type=Path, default=ROOT / "assets" / "corpus")
    parser.add_argument("--base-model", default="default")
    parser.add_argument("--mode", default="add")
    parser.add_argument("--token-budget", type=int, default=4096)
    parser.add_argument("--round-words", type=int, default=100, help="words per interleaved round")
    args = parser.parse_args()
    n_words = 24 if args.quick else args.words
    items = collect_items(args.corpus, n_words, args.contexts)
    print(f"{len(items)} words x {args.contexts} contexts, torch threads: {torch.get_num_threads()}")
    vocab = NgramVocab.from_words([w for w, _ in items], min_count=2)
    network = create_bertram(args.base_model, ngram_vocab=vocab, mode=args.mode)
    network.infer(items[:4])  # warm-up: allocator, thread pools

    # Interleave the two ways round by round, so that load drifting on a shared
    # machine affects both alike; each round still batches 100 words at once.
    batched_s = single_s = batched_cpu = single_cpu = 0.0
    max_diff = 0.0
    for start in range(0, len(items), args.round_words):
        chunk = items[start : start + args.round_words]
        batched_out, seconds, cpu = timed(lambda: network.infer(chunk, token_budget=args.token_budget))
        batched_s, batched_cpu = batched_s + seconds, batched_cpu + cpu
        single_out, seconds, cpu = timed(lambda: numpy.vstack([network.infer([item]) for item in chunk]))
        single_s, single_cpu = single_s + seconds, single_cpu + cpu
        max_diff = max(max_diff, float(numpy.abs(batched_out - single_out).max()))
    batched, single = len(items) / batched_s, len(items) / single_s
    print(f"batched (token budget {args.token_budget}): {batched:8.1f} words/s")
    print(f"one word at a time:                  {single:8.1f} words/s")
    print(f"CPU seconds: batched {batched_cpu:.1f}, one at a time {single_cpu:.1f}")
    print(f"max |batched - single|: {max_diff:.2e}")
    print(json.dumps({
        "words": len(items), "contexts_per_word": args.contexts, "mode": args.mode,
        "batched_words_per_s": round(batched, 1), "single_words_per_s": round(single, 1),
        "speedup": round(batched / single, 2), "cpu_speedup": round(single_cpu / batched_cpu, 2),
        "max_abs_diff": max_diff,
    }))


if __name__ == "__main__":
    main()
