"""Vector tables: words/s of `vectors` on 1 and 2 local Dask workers vs one process, and the pipeline with a full
table vs stock.

Part 1, throughput. Rare words of the context store (`corpus/bertram`, from
`prepare`; count 20..99) with their store contexts, through the same code the
`vectors` command runs: `infer_words` in this process (all cores, the
single-process reference), and shards on a LocalCluster of 1 worker (all
cores as torch threads) and of 2 workers (one core each). The clusters start
once, before the rounds (their start-up is printed apart); each round runs the
three ways on its own words, in an order that alternates between rounds, and
the speed-ups are medians of the paired per-round ratios (robust to load from
other processes). The rows of every way must agree.

Part 2, the pipeline. Rotten Tomatoes snippets through the stock MiniLM
pipeline and through bertram + the injecting transformer with a vector table
holding every rare word of the texts (so nothing is inferred), with slash and
replace injection, in paired rounds as in benchmarks/pipeline.py: the
overhead is the median of the per-round time ratios minus 1 (wall time, and
CPU time of this process, which load from other processes disturbs less).
Slash's and replace's batches run the encoder in length groups (spacy_bertram/injection/groups.py),
which saves the padding the stock transformer spends; "slash in one call" runs
the same pipeline with one padded call per batch, as stock does, so the cost of
slash's two extra positions per rare word shows on its own.

Speed does not depend on the weights, so without --bertram an untrained
network of the trained shape is used (n-grams from the words).

    python benchmarks/vectors.py            # 192 words x 8 contexts; 1,000 texts
    python benchmarks/vectors.py --quick    # 32 words x 4 contexts; 200 texts
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

import numpy
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
import spacy_bertram.injection.groups as injection_module

from spacy_bertram import ContextStore, VectorTable, create_bertram, get_bertram_network, load_bertram, save_bertram
from spacy_bertram.project_support import (
    DEFAULT_CONTEXTS_PER_WORD,
    NgramVocab,
    encoder_identity,
    model_fingerprint,
    open_client,
    resolve_base_model,
    select_device,
    word_key_function,
)
from spacy_bertram.training.distributed import run_on_dask
from bertram_experiments.assets import default_assets_dir
from spacy_bertram.training.shards import JobSettings, ShardStore, infer_words

from pipeline import MissingTexts, build, load_texts  # benchmarks/pipeline.py (scripts run from this folder)
from timing import timed  # benchmarks/timing.py

ROOT = Path(__file__).resolve().parents[1]


def pick_words(store: ContextStore, n: int, min_count: int = 20, max_count: int = 100) -> List[str]:
    words = [w for w, c in store.counts(min_count) if c < max_count and w.isalpha()]
    if len(words) < n:
        sys.exit(f"Only {len(words)} words with {min_count} <= count < {max_count} in the store, {n} wanted")
    step = len(words) // n  # spread over the count range
    return [words[i * step] for i in range(n)]


def model_dir(args: argparse.Namespace, words: Sequence[str], directory: Path) -> str:
    if args.bertram:
        return args.bertram
    save_bertram(create_bertram(args.base_model, NgramVocab.from_words(list(words), min_count=1)), directory)
    return str(directory)


def throughput(args, model: str, store_path: Path, words: List[str]) -> Dict[str, object]:
    job = JobSettings(model, str(store_path.resolve()), args.contexts)
    network = load_bertram(model, device=args.device)
    model_id = model_fingerprint(model)
    store = ContextStore.open(store_path)
    infer_words(network, store, words[:4], args.contexts)  # warm-up
    clients, starts = {}, {}
    try:
        for n_workers in (1, 2):
            start = time.perf_counter()
            client, close = open_client(None, n_workers, ())
            threads = max(1, (os.cpu_count() or 1) // n_workers)
            jobs = JobSettings(job.model_path, job.store_path, job.max_contexts, torch_threads=threads)
            clients[n_workers] = (client, close, jobs)
            starts[n_workers] = time.perf_counter() - start
        ways: Dict[str, Callable[[List[str], Path], numpy.ndarray]] = {
            "single": lambda chunk, out: infer_words(network, store, chunk, args.contexts),
        }
        for n_workers, (client, _, jobs) in clients.items():
            ways[f"dask{n_workers}"] = (
                lambda c, j: lambda chunk, out: dask_rows(c, j, model_id, chunk, out, args.shard_size)
            )(client, jobs)
        for name in ("dask1", "dask2"):  # warm-up: the first task on each worker
            with tempfile.TemporaryDirectory() as tmp:
                ways[name](words[:4], Path(tmp) / "table")
        rounds: List[Dict[str, float]] = []
        max_diff = 0.0
        for k, start_i in enumerate(range(0, len(words), args.round_words)):
            chunk = words[start_i : start_i + args.round_words]
            order = ["single", "dask1", "dask2"] if k % 2 == 0 else ["dask2", "dask1", "single"]
            times, rows = {}, {}
            for name in order:
                with tempfile.TemporaryDirectory() as tmp:
                    rows[name], seconds, _ = timed(lambda: ways[name](chunk, Path(tmp) / "table"))
                times[name] = seconds
            max_diff = max(max_diff, *(float(numpy.abs(rows[n] - rows["single"]).max()) for n in ("dask1", "dask2")))
            rounds.append(times)
    finally:
        for client, close, _ in clients.values():
            close()
    total = {name: sum(r[name] for r in rounds) for name in ("single", "dask1", "dask2")}
    return {
        "words": len(words),
        "contexts_per_word": args.contexts,
        "shard_size": args.shard_size,
        "single_wps": round(len(words) / total["single"], 2),
        "dask1_wps": round(len(words) / total["dask1"], 2),
        "dask2_wps": round(len(words) / total["dask2"], 2),
        "dask1_vs_single": round(statistics.median(r["single"] / r["dask1"] for r in rounds), 3),
        "dask2_vs_single": round(statistics.median(r["single"] / r["dask2"] for r in rounds), 3),
        "cluster_start_s": {f"{n}_workers": round(s, 1) for n, s in starts.items()},
        "rounds": len(rounds),
        "max_abs_diff": max_diff,
    }


def dask_rows(client, job: JobSettings, model_id: str, words: List[str], out: Path, shard_size: int) -> numpy.ndarray:
    """Shards of `words` through `run_on_dask`, written and merged as `vectors` does."""
    shards = ShardStore.open(out, words, shard_size, {"model_id": model_id})
    run_on_dask(client, shards, shards.missing(), job, model_id, progress=False)
    return shards.merge({"model_id": model_id}).vectors


def rare_word_table(nlp, texts: Sequence[str], path: Path) -> Tuple[int, int]:
    """A table with every rare word of the texts (form vectors: cheap, and speed is what counts here)."""
    pipe = nlp.get_pipe("bertram")
    finder, network = pipe.finder, get_bertram_network(pipe.model)
    word_key = word_key_function(network)  # the form the component looks a table up by
    words = sorted({word_key(doc[i].text) for doc in map(nlp.make_doc, texts) for i in finder.find(doc)})
    rows = network.infer([(w, []) for w in words])
    VectorTable(words, rows, {"model_id": pipe.cfg["model_id"], "encoder": encoder_identity(network)}).to_disk(path)
    return len(words), network.width


def pipeline_overhead(args, model: str, table_dir: Path) -> Dict[str, object]:
    assets = args.assets or default_assets_dir()
    if not assets.is_absolute() and not assets.exists():
        assets = ROOT / assets
    try:
        texts = load_texts(assets, "short", args.texts)
    except MissingTexts as err:
        sys.exit(str(err))
    encoder = resolve_base_model(args.base_model)
    stock = build(encoder, None, args.base_model, "doc", None, "slash")
    pipelines = {"stock": stock}
    for injection in ("slash", "replace"):
        nlp = build(encoder, model, args.base_model, "doc", None, injection)
        if injection == "slash":
            n_table, _ = rare_word_table(nlp, texts, table_dir)
        nlp.get_pipe("bertram").initialize(lambda: [], nlp=nlp, vector_table=str(table_dir))
        pipelines[f"table_{injection}"] = nlp
    for nlp in pipelines.values():
        list(nlp.pipe(texts[:16]))
    # way -> (pipeline, most encoder calls per batch): "one_call" pads every row of a batch to
    # its longest, as the stock transformer does, so it shows what slash's extra positions cost.
    ways = {
        "stock": ("stock", None),
        "table_slash": ("table_slash", injection_module.MAX_GROUPS),
        "table_replace": ("table_replace", injection_module.MAX_GROUPS),
        "table_slash_one_call": ("table_slash", 1),
    }
    rounds: List[Dict[str, float]] = []
    cpu_rounds: List[Dict[str, float]] = []
    n_words = n_rare = 0
    names = list(ways)
    positions = {name: [0, 0] for name in names}  # encoder positions run: [padded, real]
    counting = {"way": ""}

    def count(module, args, kwargs) -> None:
        if counting["way"]:
            mask = kwargs["attention_mask"]
            positions[counting["way"]][0] += int(mask.numel())
            positions[counting["way"]][1] += int(mask.sum())

    for nlp in pipelines.values():
        nlp.get_pipe("transformer").model.transformer.register_forward_pre_hook(count, with_kwargs=True)
    default_groups = injection_module.MAX_GROUPS
    for k, start in enumerate(range(0, len(texts), args.round_texts)):
        chunk = texts[start : start + args.round_texts]
        times, cpu_times = {}, {}
        for name in names if k % 2 == 0 else names[::-1]:
            key, groups = ways[name]
            injection_module.MAX_GROUPS = groups or default_groups
            pipe = pipelines[key].get_pipe("bertram") if key != "stock" else None
            misses = pipe.cache.misses if pipe is not None else 0
            counting["way"] = name  # over all rounds: every text once per way
            docs, seconds, cpu = timed(lambda: list(pipelines[key].pipe(chunk, batch_size=64)))
            times[name], cpu_times[name] = seconds, cpu
            if pipe is not None:
                assert pipe.cache.misses == misses, "a rare word was inferred: the table is incomplete"
            if name == "table_slash":
                n_words += sum(1 for doc in docs for t in doc if not t.is_space)
                n_rare += sum(len(doc._.bertram) for doc in docs)
        rounds.append(times)
        cpu_rounds.append(cpu_times)
    injection_module.MAX_GROUPS = default_groups
    total = {name: sum(r[name] for r in rounds) for name in names}
    result: Dict[str, object] = {
        "texts": len(texts),
        "pipeline_words": n_words,
        "rare_tokens": n_rare,
        "table_words": n_table,
    }
    for name in names:
        result[f"{name}_wps"] = round(n_words / total[name], 1)
    for name in names[1:]:
        way = name.replace("table_", "")
        result[f"overhead_{way}"] = round(statistics.median(r[name] / r["stock"] for r in rounds) - 1, 4)
        result[f"overhead_{way}_cpu"] = round(statistics.median(r[name] / r["stock"] for r in cpu_rounds) - 1, 4)
    result["pipeline_rounds"] = len(rounds)
    result["encoder_positions"] = {name: {"padded": padded, "real": real} for name, (padded, real) in positions.items()}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="32 words x 4 contexts, 200 texts (under a minute on a quiet machine)"
    )
    parser.add_argument("--words", type=int, default=192)
    parser.add_argument("--contexts", type=int, default=DEFAULT_CONTEXTS_PER_WORD)
    parser.add_argument("--round-words", type=int, default=48, help="words per paired round (quick: 16)")
    parser.add_argument("--shard-size", type=int, default=8, help="words per Dask task")
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--round-texts", type=int, default=100, help="texts per paired round (quick: 50)")
    parser.add_argument("--store", type=Path, default=ROOT / "corpus" / "bertram" / "contexts.sqlite")
    parser.add_argument(
        "--assets", type=Path, default=None, help="assets dir (default: $SPACY_BERTRAM_ASSETS or ./assets)"
    )
    parser.add_argument("--bertram", default=None, help="trained BERTRAM directory (default: untrained, same shape)")
    parser.add_argument("--base-model", default="default")
    parser.add_argument(
        "--gpu-id",
        type=int,
        default=-1,
        help="-1: CPU; N: the single-process inference and the pipelines on CUDA device N "
        "(the Dask workers stay on the CPU)",
    )
    args = parser.parse_args()
    args.device = select_device(args.gpu_id)  # spaCy's pipelines follow (thinc on the GPU)
    if args.quick:
        args.words, args.contexts, args.round_words, args.texts, args.round_texts = 32, 4, 16, 200, 50
    if not args.store.is_file():
        sys.exit(
            f"No context store at {args.store}: run `python -m spacy_bertram prepare` (project step prepare) first."
        )
    wall = time.perf_counter()
    with ContextStore.open(args.store) as store:
        words = pick_words(store, args.words)
    with tempfile.TemporaryDirectory() as tmp:
        model = model_dir(args, words, Path(tmp) / "bertram")
        speed = throughput(args, model, args.store, words)
        print(
            f"{speed['words']} words x {args.contexts} contexts, torch threads {torch.get_num_threads()}, "
            f"{os.cpu_count()} cores; clusters started in {speed['cluster_start_s']} s"
        )
        print(f"single process (infer_words): {speed['single_wps']:7.2f} words/s")
        print(
            f"Dask, 1 worker:               {speed['dask1_wps']:7.2f} words/s ({speed['dask1_vs_single']:.2f}x, "
            "median of paired rounds)"
        )
        print(f"Dask, 2 workers:              {speed['dask2_wps']:7.2f} words/s ({speed['dask2_vs_single']:.2f}x)")
        print(f"max |Dask - single| over all rows: {speed['max_abs_diff']:.2e}")
        pipe = pipeline_overhead(args, model, Path(tmp) / "table")
    print(
        f"{pipe['texts']} texts, {pipe['pipeline_words']} words, {pipe['rare_tokens']} rare tokens, "
        f"a table of {pipe['table_words']} words (no vector inferred)"
    )
    print(f"stock transformer:      {pipe['stock_wps']:8.1f} words/s")
    print(
        f"bertram, table, slash:   {pipe['table_slash_wps']:8.1f} words/s ({pipe['overhead_slash']:+.1%} vs stock; "
        f"CPU time {pipe['overhead_slash_cpu']:+.1%})"
    )
    print(
        f"bertram, table, replace: {pipe['table_replace_wps']:8.1f} words/s ({pipe['overhead_replace']:+.1%} vs stock; "
        f"CPU time {pipe['overhead_replace_cpu']:+.1%})"
    )
    print(
        f"  slash in one call:     {pipe['table_slash_one_call_wps']:8.1f} words/s "
        f"({pipe['overhead_slash_one_call']:+.1%} vs stock; CPU time {pipe['overhead_slash_one_call_cpu']:+.1%}): "
        "every row padded to the batch's longest, as stock does"
    )
    print(
        "encoder positions over all texts (padded / real): "
        + ", ".join(f"{name} {p['padded']:,} / {p['real']:,}" for name, p in pipe["encoder_positions"].items())
    )
    print(
        f"(overheads: median of {pipe['pipeline_rounds']} paired rounds of wall / CPU time); "
        f"total {time.perf_counter() - wall:.0f} s"
    )
    print(
        json.dumps(
            {
                "benchmark": "vectors",
                **speed,
                **pipe,
                "trained": bool(args.bertram),
                "seconds": round(time.perf_counter() - wall, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
