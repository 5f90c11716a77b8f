"""Words per second of a MiniLM spaCy pipeline: stock, and with `bertram` (cold and warm cache).

One run, one process, the same texts (real Rotten Tomatoes snippets from the
embedded assets) through three pipelines built on the same MiniLM weights:

- stock:   tokenizer -> transformer (spacy-transformers.TransformerModel.v3)
- cold:    tokenizer -> bertram -> transformer (spacy-bertram.TransformerModel.v1,
           slash injection), the vector cache emptied before the texts
- warm:    the same pipeline on the same texts again, every vector cached

The texts go in rounds (default 100 texts); each round runs all three, in an
order that alternates between rounds, so load drift on a shared machine hits
all of them alike. The warm-cache overhead is the median over rounds of the
paired warm/stock time ratio (robust to bursts of load from other
processes); the ratio of total wall and of CPU times are printed beside it. The cold-cache cost per rare word is (cold - warm) seconds
divided by the number of vectors BERTRAM inferred (one per rare word form per
document). Speed does not depend on the weights, so without --bertram an
untrained network of the trained shape is used (n-grams from the texts).

    python benchmarks/pipeline.py            # 2,000 texts
    python benchmarks/pipeline.py --quick    # 200 texts, under a minute
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import spacy
import torch
from spacy.tokens import Doc

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory)
from spacy_bertram import NgramVocab, create_bertram, save_bertram
from spacy_bertram.pipeline.device import use_device
from spacy_bertram.training.corpus import tokenize
from spacy_bertram.encoder import resolve_base_model
from spacy_bertram.training.registry_data import default_assets_dir

from timing import timed  # benchmarks/timing.py (scripts run from this folder)

ROOT = Path(__file__).resolve().parents[1]
MAX_OVERHEAD = 0.15


def load_texts(assets: Path, n: int) -> List[str]:
    """The first n Rotten Tomatoes snippets: labelled set if built, else the corpus file."""
    jsonl = assets / "datasets" / "rotten_tomatoes.jsonl"
    if jsonl.is_file():
        with open(jsonl, encoding="utf8") as file_:
            texts = [json.loads(line)["text"] for line, _ in zip(file_, range(n))]
    else:
        plain = assets / "corpus" / "rotten_tomatoes.txt"
        if not plain.is_file():
            sys.exit(f"No Rotten Tomatoes texts under {assets}: run python scripts/build_corpus.py first.")
        with open(plain, encoding="utf8") as file_:
            texts = [line.strip() for line, _ in zip(file_, range(n))]
    if len(texts) < n:
        sys.exit(f"Only {len(texts)} texts in {assets}, {n} wanted")
    return texts


def untrained_model(texts: Sequence[str], directory: Path, base_model: str) -> str:
    """A BERTRAM directory of the trained shape on `base_model` (timing does not need training)."""
    words = [w for text in texts for w in tokenize(text)]
    network = create_bertram(base_model, NgramVocab.from_words(words, min_count=2))
    save_bertram(network, directory)
    return str(directory)


def build(
    encoder: str, bertram: Optional[str], base_model: str, contexts: str, store: Optional[str], injection: str
) -> spacy.Language:
    nlp = spacy.blank("en")
    arch = "spacy-transformers.TransformerModel.v3"
    if bertram:
        settings = {"model": {"model_path": bertram, "base_model": base_model}, "contexts": contexts}
        if store:
            settings["context_store"] = store
        nlp.add_pipe("bertram", config=settings)
        arch = "spacy-bertram.TransformerModel.v1"
    model = {
        "@architectures": arch,
        "name": encoder,
        "tokenizer_config": {"use_fast": True},
        "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": 128, "stride": 96},
    }
    if bertram:
        model["injection"] = injection
    nlp.add_pipe("transformer", config={"model": model})
    nlp.initialize()
    return nlp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 texts instead of 2,000")
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--round", type=int, default=100, help="texts per interleaved round (quick: 50)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--assets", type=Path, default=None, help="assets dir (default: $SPACY_BERTRAM_ASSETS or ./assets)")
    parser.add_argument("--bertram", default=None, help="trained BERTRAM directory (default: untrained, same shape)")
    parser.add_argument("--base-model", default="default")
    parser.add_argument("--contexts", default="doc", choices=["doc", "store", "both"])
    parser.add_argument("--store", default=None, help="context store for --contexts store/both")
    parser.add_argument("--injection", default="slash", choices=["slash", "replace", "none"])
    parser.add_argument("--gpu-id", type=int, default=-1)
    args = parser.parse_args()
    use_device(args.gpu_id)  # a named error for a bad id or a missing CuPy
    n = 200 if args.quick else args.texts
    round_size = 50 if args.quick else args.round
    assets = args.assets or default_assets_dir()
    if not assets.is_absolute() and not assets.exists():
        assets = ROOT / assets
    texts = load_texts(assets, n)
    encoder = resolve_base_model(args.base_model)

    with tempfile.TemporaryDirectory() as tmp:
        bertram = args.bertram or untrained_model(texts, Path(tmp) / "bertram", args.base_model)
        stock = build(encoder, None, args.base_model, args.contexts, args.store, args.injection)
        with_bertram = build(encoder, bertram, args.base_model, args.contexts, args.store, args.injection)
        component = with_bertram.get_pipe("bertram")
        warmup = texts[:16]
        list(stock.pipe(warmup)), list(with_bertram.pipe(warmup))

        rounds: List[Dict[str, Tuple[float, float]]] = []
        n_words = n_rare_tokens = n_inferred = 0
        for k, start in enumerate(range(0, n, round_size)):
            chunk = texts[start : start + round_size]
            runs: Dict[str, Callable[[], List[Doc]]] = {
                "stock": lambda: list(stock.pipe(chunk, batch_size=args.batch_size)),
                "cold": lambda: list(with_bertram.pipe(chunk, batch_size=args.batch_size)),
                "warm": lambda: list(with_bertram.pipe(chunk, batch_size=args.batch_size)),
            }
            order = ["stock", "cold", "warm"] if k % 2 == 0 else ["cold", "warm", "stock"]
            component.cache.clear()
            times: Dict[str, Tuple[float, float]] = {}
            for name in order:
                docs, wall, cpu = timed(runs[name])
                times[name] = (wall, cpu)
                if name == "warm":
                    n_words += sum(1 for doc in docs for t in doc if not t.is_space)
                    n_rare_tokens += sum(len(doc._.bertram) for doc in docs)
            n_inferred += component.cache.misses
            rounds.append(times)

    seconds = {name: sum(r[name][0] for r in rounds) for name in ("stock", "cold", "warm")}
    cpu_seconds = {name: sum(r[name][1] for r in rounds) for name in ("stock", "cold", "warm")}
    wps = {name: n_words / s for name, s in seconds.items()}
    # Paired per-round ratios, median: robust to bursts of load from other processes.
    overhead = statistics.median(r["warm"][0] / r["stock"][0] for r in rounds) - 1.0
    overhead_total = seconds["warm"] / seconds["stock"] - 1.0
    overhead_cpu = cpu_seconds["warm"] / cpu_seconds["stock"] - 1.0
    cold_ms = 1000.0 * (seconds["cold"] - seconds["warm"]) / max(1, n_inferred)
    print(f"{n} texts, {n_words} words, {n_rare_tokens} rare tokens ({100.0 * n_rare_tokens / n_words:.1f}%), "
          f"{n_inferred} vectors inferred; torch threads {torch.get_num_threads()}; "
          f"bertram model: {args.bertram or 'untrained (same shape)'}; contexts: {args.contexts}; "
          f"injection: {args.injection}")
    for name, label in (("stock", "stock transformer"), ("cold", "bertram, cold cache"), ("warm", "bertram, warm cache")):
        print(f"{label:22s} {wps[name]:8.1f} words/s  ({seconds[name]:.1f} s)")
    verdict = "ok" if overhead <= MAX_OVERHEAD else f"ABOVE the {MAX_OVERHEAD:.0%} budget"
    print(f"warm-cache overhead vs stock: {overhead:+.1%} ({verdict}; median of {len(rounds)} paired rounds; "
          f"total wall time {overhead_total:+.1%}, CPU time {overhead_cpu:+.1%})")
    print(f"cold-cache cost: {cold_ms:.1f} ms per inferred rare word")
    print(json.dumps({
        "benchmark": "pipeline", "texts": n, "words": n_words, "rare_tokens": n_rare_tokens,
        "vectors_inferred": n_inferred, "stock_wps": round(wps["stock"], 1),
        "bertram_cold_wps": round(wps["cold"], 1), "bertram_warm_wps": round(wps["warm"], 1),
        "warm_overhead": round(overhead, 4), "warm_overhead_total": round(overhead_total, 4),
        "warm_overhead_cpu": round(overhead_cpu, 4), "cold_ms_per_rare_word": round(cold_ms, 2),
        "contexts": args.contexts, "injection": args.injection, "trained": bool(args.bertram),
    }))


if __name__ == "__main__":
    main()
