"""What adding `bertram` costs a MiniLM spaCy pipeline: cold and warm cache against stock, short and long texts.

One process, the same texts through pipelines built on the same MiniLM weights:

- stock:   tokenizer -> transformer (spacy-transformers.TransformerModel.v3)
- cold:    tokenizer -> bertram -> transformer (spacy-bertram.TransformerModel.v1,
           the component's and the architecture's defaults unless set here), the
           vector cache emptied before the texts: every rare word's vector is
           inferred, as for text the pipeline never saw
- warm:    the same pipeline on the same texts again, every vector cached

Three kinds of text, each measured on its own: "short" (Rotten Tomatoes snippets,
about 20 words), "long" (whole BBC News articles, about 400 words) and "tweets"
(WNUT-16's tweets, about 20 tokens, the `ner` workflow's data: `python -m spacy
project run ner-data` fetches them). Besides the share of rare tokens, each kind
reports the share of its texts with at least one rare token. The texts
go in rounds; each round runs all the pipelines in an order that alternates
between rounds, so load drift hits all of them alike, and every ratio is the
median of the paired per-round ratios. Besides words/s the script reports the
share of tokens that are rare, vectors inferred per second, and the CPU time per
inferred vector in each part of the cold path (the rare-word rule, gathering
contexts, tokenising, the form, the context encoder, attentive mimicking and the
output mix, the cache). Peak resident memory (cache included) comes from one
child process per pipeline that runs the same texts cold. What a user's first call costs comes from
fresh child processes too (`--first-doc-pairs`, stock and bertram in turns, one at a time): the seconds
to build the pipeline and to run the first text, cold.

`--against KEY=VALUE,...` adds a second bertram pipeline with some settings
changed (contexts, context_window, injection, vector_table, length_groups, rule_table,
batched_tokenising, int8_encoder) to the same paired rounds, so a change is measured against what it replaces in one run
(`--against injection=slash,context_window=25,length_groups=off`: the earlier
defaults). `--compare-paths` adds a cold run with the context encoder's exact
shortcuts off (every row encoded on its own, every layer run, one padded call),
so their gain is measured side by side. Speed does not depend on the weights, so without --bertram an
untrained network of the trained shape is used (n-grams from the texts).
`--vector-table` gives the component a table from `python -m spacy_bertram
vectors` (for `--bertram`): its words are looked up, so a cold run infers only
the rare words outside it ("vectors_inferred" says how many that left).
`--contexts memory` (or "doc+memory", "memory:4+store", also in `--against`) runs
the context memory: cold empties the vector cache, not the memory, so each round's
new texts find the rare words of the rounds before, as a stream would; what the
memory holds at the end (words, contexts, bytes of text) is reported as "memory".

    python benchmarks/pipeline.py            # 2,000 snippets, 200 articles and 2,000 tweets
    python benchmarks/pipeline.py --quick    # 50 snippets, 5 articles, 50 tweets (memory: snippets), under a minute
    python benchmarks/pipeline.py --quick --contexts doc+memory   # the context memory, its size reported
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy
import spacy
import torch
from spacy.tokens import Doc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from spacy_bertram import make_bertram  # noqa: F401  (its module registers the factory)
from spacy_bertram import INJECTION_MODES, create_bertram, get_bertram_network, save_bertram
from spacy_bertram.project_support import (
    DEFAULT_CONTEXTS,
    DEFAULT_INJECTION,
    NgramVocab,
    resolve_base_model,
    tokenize,
    use_device,
)
from bertram_experiments.assets import default_assets_dir
from bertram_experiments.ner.data import read_iob, wnut16_path

from timing import timed  # benchmarks/timing.py (scripts run from this folder)

ROOT = Path(__file__).resolve().parents[1]
#: Where each kind of text comes from: labelled set (built by scripts/build_corpus.py), corpus file.
TEXT_SOURCES = {
    "short": ("rotten_tomatoes.jsonl", "rotten_tomatoes.txt"),
    "long": ("bbc.jsonl", None),
    "tweets": (None, None),  # WNUT-16 (assets/ner), read by `load_texts`
}
#: `--against` for the earlier defaults: slash injection, 25-token windows, one padded context-encoder call.
EARLIER_DEFAULTS = "injection=slash,context_window=25,length_groups=off"
PARTS = ("rule", "contexts", "tokenise", "form", "encoder", "mimicking", "cache")


class MissingTexts(Exception):
    """A kind of text whose data is not under the assets directory (what fetches it is in the message)."""


def load_texts(assets: Path, kind: str, n: int) -> List[str]:
    """The first n texts of a kind: the labelled set if built, else the corpus file; tweets from WNUT-16.
    MissingTexts where the kind's data is not there; SystemExit where it has fewer than n texts."""
    jsonl_name, plain_name = TEXT_SOURCES[kind]
    texts: List[str] = []
    if kind == "tweets":
        try:
            texts = [" ".join(tweet.words) for tweet in read_iob(wnut16_path(assets))[:n]]
        except ValueError as err:
            raise MissingTexts(str(err)) from None  # E417 names the command that fetches it
    elif (assets / "datasets" / jsonl_name).is_file():
        jsonl = assets / "datasets" / jsonl_name
        with open(jsonl, encoding="utf8") as file_:
            texts = [json.loads(line)["text"] for line, _ in zip(file_, range(n))]
    elif plain_name and (assets / "corpus" / plain_name).is_file():
        with open(assets / "corpus" / plain_name, encoding="utf8") as file_:
            texts = [line.strip() for line, _ in zip(file_, range(n))]
    else:
        raise MissingTexts(f"No {kind} texts ({jsonl_name}) under {assets}: run python scripts/build_corpus.py first.")
    if len(texts) < n:
        sys.exit(f"Only {len(texts)} {kind} texts in {assets}, {n} wanted")
    return texts


def texts_by_kind(
    assets: Path, counts: Dict[str, int], named: Optional[str] = None
) -> Tuple[Dict[str, List[str]], Dict[str, str]]:
    """The texts of each kind `named` ("short,long"; None: every kind) and, for the default kinds, why those
    left out were skipped (said once here); a kind asked for by name must be there. Exits where none is."""
    kinds = [k.strip() for k in (named or ",".join(TEXT_SOURCES)).split(",") if k.strip()]
    unknown = [kind for kind in kinds if kind not in TEXT_SOURCES]
    if unknown:
        sys.exit(f"--kinds: unknown {', '.join(unknown)}; the kinds are {', '.join(TEXT_SOURCES)}")
    texts_of: Dict[str, List[str]] = {}
    skipped: Dict[str, str] = {}
    for kind in kinds:
        try:
            texts_of[kind] = load_texts(assets, kind, counts[kind])
        except MissingTexts as err:
            if named is not None:  # asked for by name: an error, not a note
                sys.exit(str(err))
            skipped[kind] = str(err)
            print(f"skipped {kind}: {err}", flush=True)
    if not texts_of:
        sys.exit("No kind of text to run: " + "; ".join(skipped.values()))
    return texts_of, skipped


def text_count(kind: str, args: argparse.Namespace) -> int:
    return {"short": args.texts, "long": args.long_texts, "tweets": args.tweets}[kind]


def untrained_model(texts: Sequence[str], directory: Path, base_model: str) -> str:
    """A BERTRAM directory of the trained shape on `base_model` (timing does not need training)."""
    words = [w for text in texts for w in tokenize(text)]
    network = create_bertram(base_model, NgramVocab.from_words(words, min_count=2))
    save_bertram(network, directory)
    return str(directory)


def build(
    encoder: str,
    bertram: Optional[str],
    base_model: str,
    contexts: str,
    store: Optional[str],
    injection: str,
    vector_table: Optional[str] = None,
    context_window: Optional[int] = None,
    int8_encoder: bool = False,
) -> spacy.Language:
    nlp = spacy.blank("en")
    arch = "spacy-transformers.TransformerModel.v3"
    if bertram:
        layer = {"model_path": bertram, "base_model": base_model, "int8_encoder": int8_encoder}
        settings: Dict[str, Any] = {"model": layer, "contexts": contexts}
        if context_window is not None:
            settings["context_window"] = context_window
        if not (Path(bertram) / "counts.tsv").is_file():  # the untrained stand-in: wordfreq's rule, said once here
            settings["rare_words"] = {"@misc": "spacy-bertram.RareWords.v1", "frequencies": "wordfreq"}
        if store:
            settings["context_store"] = store
        if vector_table:  # a rare word in the table gets its row; the others are inferred
            settings["vector_table"] = vector_table
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


class PartTimer:
    """Wall and CPU seconds spent in named methods of live objects, per run label (None: not timing)."""

    def __init__(self, synchronize: Optional[Callable[[], None]] = None) -> None:
        self.synchronize = synchronize  # a GPU's queued work counts to the part that queued it
        self.wall: Dict[str, Dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.cpu: Dict[str, Dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.label: Optional[str] = None

    def wrap(self, owner: Any, attribute: str, part: str) -> None:
        method = getattr(owner, attribute)

        def timed_method(*args: Any, **kwargs: Any) -> Any:
            label = self.label
            if label is None:
                return method(*args, **kwargs)
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                if self.synchronize is not None:
                    self.synchronize()
                self.wall[label][part] += time.perf_counter() - wall
                self.cpu[label][part] += time.process_time() - cpu

        setattr(owner, attribute, timed_method)


def instrument(nlp: spacy.Language) -> PartTimer:
    """Time the parts of the bertram component's cold path (see PARTS)."""
    component = nlp.get_pipe("bertram")
    network = get_bertram_network(component.model)
    timer = PartTimer(torch.cuda.synchronize if network.device.type == "cuda" else None)
    timer.wrap(component.finder, "find", "rule")
    timer.wrap(component.word_sources, "contexts_for", "contexts")
    timer.wrap(network, "prepare", "tokenise")
    timer.wrap(network, "form_vectors", "form")
    timer.wrap(network, "encode_contexts", "encoder")
    timer.wrap(network, "forward", "network")
    timer.wrap(component.cache, "get", "cache")
    timer.wrap(component.cache, "put", "cache")
    return timer


def memory_stats(nlp: spacy.Language) -> Optional[Dict[str, int]]:
    """What the bertram component's context memories hold (words, contexts, bytes of text); None without one."""
    memories = nlp.get_pipe("bertram").word_sources.memories()
    if not memories:
        return None
    totals: Dict[str, int] = defaultdict(int)
    for memory in memories:
        for key, value in memory.stats().items():
            totals[key] += value
    return dict(totals)


def paired_median(rounds: Sequence[Dict[str, Tuple[float, float]]], name: str, base: str = "stock") -> float:
    return statistics.median(r[name][0] / r[base][0] for r in rounds)


def on_or_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise ValueError(value)
    return value == "on"


#: The settings a variant may set (`--against`), with how each is read.
VARIANT_SETTINGS: Dict[str, Callable[[str], Any]] = {
    "contexts": str,
    "injection": str,
    "context_window": int,
    "length_groups": on_or_off,
    "vector_table": lambda value: None if value == "none" else value,
    "rule_table": on_or_off,
    "batched_tokenising": on_or_off,
    "int8_encoder": on_or_off,
}


def parse_variant(text: str) -> Dict[str, Any]:
    """`contexts=doc,injection=slash,context_window=25` -> settings (the others keep the main run's)."""
    settings: Dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in VARIANT_SETTINGS:
            sys.exit(f"--against: '{part}' is not KEY=VALUE with KEY one of {', '.join(VARIANT_SETTINGS)}")
        try:
            settings[key.strip()] = VARIANT_SETTINGS[key.strip()](value.strip())
        except ValueError:
            sys.exit(f"--against: '{part}' has a value of the wrong type")
    return settings


def variant_settings(args: argparse.Namespace, overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The bertram pipeline's settings: the command line's, with `overrides` on top."""
    settings = {
        "contexts": args.contexts,
        "injection": args.injection,
        "context_window": args.context_window,
        "vector_table": args.vector_table,
        "length_groups": True,
        "rule_table": True,
        "batched_tokenising": True,
        "int8_encoder": args.int8_encoder,
    }
    settings.update(overrides or {})
    return settings


def build_variant(encoder: str, bertram: str, args: argparse.Namespace, settings: Dict[str, Any]) -> spacy.Language:
    nlp = build(
        encoder,
        bertram,
        args.base_model,
        settings["contexts"],
        args.store,
        settings["injection"],
        settings["vector_table"],
        settings["context_window"],
        settings["int8_encoder"],
    )
    network = get_bertram_network(nlp.get_pipe("bertram").model)
    network.length_grouped_calls = settings["length_groups"]  # the context encoder's calls
    network.inputs.batched_tokenising = settings["batched_tokenising"]  # one call a context
    if not settings["rule_table"]:  # the rule with a wordfreq and a tokenizer call per new form, as before its table
        nlp.get_pipe("bertram").finder.frequent = None
    return nlp


def measure(kind: str, texts: List[str], args: argparse.Namespace, encoder: str, bertram: str) -> Dict[str, Any]:
    """Paired rounds of stock, cold and warm (and the `--against` variant, the plain path) on one kind of text."""
    stock = build(encoder, None, args.base_model, args.contexts, args.store, args.injection)
    with_bertram = build_variant(encoder, bertram, args, variant_settings(args))
    against = build_variant(encoder, bertram, args, variant_settings(args, args.against)) if args.against else None
    return measure_pipelines(stock, with_bertram, texts, args, long_texts=kind == "long", against=against)


def measure_pipelines(
    stock: spacy.Language,
    with_bertram: spacy.Language,
    texts: List[str],
    args: argparse.Namespace,
    long_texts: bool = False,
    against: Optional[spacy.Language] = None,
) -> Dict[str, Any]:
    """Paired rounds of two pipelines that differ by the `bertram` component (args: batch_size, round,
    compare_paths), and of `against`, another bertram pipeline, in the same rounds; long texts go in
    rounds of a tenth as many texts."""
    variants = {"": with_bertram}
    if against is not None:
        variants["_against"] = against
    warmup = texts[: min(16, len(texts))]
    list(stock.pipe(warmup))
    for nlp in variants.values():
        list(nlp.pipe(warmup))
    timers = {suffix: instrument(nlp) for suffix, nlp in variants.items()}
    component = with_bertram.get_pipe("bertram")
    network = get_bertram_network(component.model)

    def set_paths(exact_shortcuts: bool) -> None:
        network.share_equal_rows = network.stop_at_read_layer = network.length_grouped_calls = exact_shortcuts

    def cold(suffix: str, chunk: List[str], shortcuts: bool = True) -> List[Doc]:
        """New text: no vector cached, no rule decision memoised; the cold runs are instrumented alike."""
        nlp = variants[suffix]
        variant = nlp.get_pipe("bertram")
        variant.cache.clear()
        variant.finder.forget()
        set_paths(shortcuts)
        timer = timers[suffix]
        timer.label = "cold" if shortcuts else "cold_plain"
        try:
            return list(nlp.pipe(chunk, batch_size=args.batch_size))
        finally:
            timer.label = None
            set_paths(True)

    rounds: List[Dict[str, Tuple[float, float]]] = []
    agreement: List[float] = []  # cosine of each rare token's vector, --against's to this run's
    counts: Dict[str, Dict[str, int]] = {s: defaultdict(int) for s in variants}
    round_size = max(1, args.round // 10) if long_texts else args.round
    for k, start in enumerate(range(0, len(texts), round_size)):
        chunk = texts[start : start + round_size]
        runs: Dict[str, Callable[[], List[Doc]]] = {
            "stock": lambda: list(stock.pipe(chunk, batch_size=args.batch_size))
        }
        units = [["stock"]]
        for suffix, nlp in variants.items():
            runs["cold" + suffix] = lambda suffix=suffix: cold(suffix, chunk)
            runs["warm" + suffix] = lambda nlp=nlp: list(nlp.pipe(chunk, batch_size=args.batch_size))
            units.append(["cold" + suffix, "warm" + suffix])
        if args.compare_paths:
            runs["cold_plain"] = lambda: cold("", chunk, shortcuts=False)
            units.append(["cold_plain"])
        # Each way takes each place in turn (warm always right after cold): a way that pays for
        # following another pipeline (a GPU's caches, the allocator) pays it as often as the others.
        turn = k % len(units)
        order = [name for unit in units[turn:] + units[:turn] for name in unit]
        times: Dict[str, Tuple[float, float]] = {}
        cold_docs: Dict[str, List[Doc]] = {}
        for name in order:
            docs, wall, cpu = timed(runs[name])
            times[name] = (wall, cpu)
            if name.startswith("cold") and name != "cold_plain":
                suffix = name[len("cold") :]
                cold_docs[suffix] = docs
                count = counts[suffix]
                count["inferred"] += variants[suffix].get_pipe("bertram").cache.misses  # emptied at the start
                count["words"] += sum(1 for doc in docs for t in doc if not t.is_space)
                count["rare_tokens"] += sum(len(doc._.bertram) for doc in docs)
                count["texts_with_rare"] += sum(1 for doc in docs if doc._.bertram)
        rounds.append(times)
        if "_against" in cold_docs:
            agreement.extend(vector_cosines(cold_docs[""], cold_docs["_against"]))

    seconds = {name: sum(r[name][0] for r in rounds) for name in rounds[0]}
    cpu_seconds = {name: sum(r[name][1] for r in rounds) for name in rounds[0]}
    n_words, n_inferred = counts[""]["words"], counts[""]["inferred"]
    timer = timers[""]
    parts_cpu = dict(timer.cpu["cold"])
    parts_cpu["mimicking"] = parts_cpu.pop("network", 0.0) - parts_cpu.get("form", 0.0) - parts_cpu.get("encoder", 0.0)
    infer_wall = timer.wall["cold"].get("network", 0.0) + timer.wall["cold"].get("tokenise", 0.0)
    result = {
        "texts": len(texts),
        "words": n_words,
        "rare_tokens": counts[""]["rare_tokens"],
        "vectors_inferred": n_inferred,
        "rare_share": round(counts[""]["rare_tokens"] / max(1, n_words), 4),
        "texts_with_rare_share": round(counts[""]["texts_with_rare"] / max(1, len(texts)), 4),
        "words_per_s": {name: round(n_words / s, 1) for name, s in seconds.items()},
        "cold_over_stock": round(paired_median(rounds, "cold"), 3),
        "warm_over_stock": round(paired_median(rounds, "warm"), 3),
        "cold_over_stock_cpu": round(cpu_seconds["cold"] / cpu_seconds["stock"], 3),
        "ms_per_rare_word": round(1000.0 * (seconds["cold"] - seconds["warm"]) / max(1, n_inferred), 2),
        "vectors_per_s": round(n_inferred / infer_wall, 1) if infer_wall else None,
        "cpu_ms_per_vector": {p: round(1000.0 * parts_cpu.get(p, 0.0) / max(1, n_inferred), 2) for p in PARTS},
        "rounds": len(rounds),
    }
    if memory_stats(with_bertram) is not None:
        result["memory"] = memory_stats(with_bertram)
    if against is not None:
        inferred_against = counts["_against"]["inferred"]
        result["against"] = {
            "cold_over_stock": round(paired_median(rounds, "cold_against"), 3),
            "warm_over_stock": round(paired_median(rounds, "warm_against"), 3),
            "ms_per_rare_word": round(
                1000.0 * (seconds["cold_against"] - seconds["warm_against"]) / max(1, inferred_against), 2
            ),
            "vectors_inferred": inferred_against,
            "cold_over_against": round(paired_median(rounds, "cold", "cold_against"), 3),
            "warm_over_against": round(paired_median(rounds, "warm", "warm_against"), 3),
            "vector_cosine": describe_cosines(agreement),
        }
        if memory_stats(against) is not None:
            result["against"]["memory"] = memory_stats(against)
    if args.compare_paths:
        result["plain_cold_over_stock"] = round(paired_median(rounds, "cold_plain"), 3)
        result["shortcut_speedup"] = round(statistics.median(r["cold_plain"][0] / r["cold"][0] for r in rounds), 3)
        result["wall_ms_per_vector"] = {
            label: {p: round(1000.0 * v / max(1, n_inferred), 3) for p, v in timer.wall[label].items()}
            for label in ("cold", "cold_plain")
        }
        plain_encoder = timer.wall["cold_plain"].get("encoder", 0.0)
        result["encoder_wall_speedup"] = (
            round(plain_encoder / timer.wall["cold"]["encoder"], 3) if plain_encoder else None
        )
    return result


def vector_cosines(docs: Sequence[Doc], other: Sequence[Doc]) -> List[float]:
    """Cosine of each rare token's vector in `other` to its vector in `docs` (tokens both give one)."""
    cosines = []
    for doc, other_doc in zip(docs, other):
        for key in doc._.bertram.keys() & other_doc._.bertram.keys():
            a, b = (numpy.asarray(d._.bertram[key], dtype="float64") for d in (doc, other_doc))
            cosines.append(float(a @ b / max(1e-12, numpy.linalg.norm(a) * numpy.linalg.norm(b))))
    return cosines


def describe_cosines(cosines: Sequence[float]) -> Optional[Dict[str, float]]:
    """Mean, 1st percentile and minimum: how far a variant's vectors move, and the worst of them."""
    if not cosines:
        return None
    values = numpy.asarray(cosines)
    return {
        "n": int(values.size),
        "mean": round(float(values.mean()), 5),
        "p01": round(float(numpy.percentile(values, 1)), 5),
        "min": round(float(values.min()), 5),
    }


def child_command(args: argparse.Namespace, child: str, which: str, kind: str, bertram: str) -> List[str]:
    """This script as a fresh child process (`child`: --rss-child or --first-doc-child) for one pipeline and kind."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        child,
        which,
        "--rss-kind",
        kind,
        "--texts",
        str(args.texts),
        "--long-texts",
        str(args.long_texts),
        "--tweets",
        str(args.tweets),
        "--bertram",
        bertram,
        "--base-model",
        args.base_model,
        "--contexts",
        args.contexts,
        "--injection",
        args.injection,
        "--gpu-id",
        str(args.gpu_id),
        "--batch-size",
        str(args.batch_size),
    ]
    if args.assets:
        command += ["--assets", str(args.assets)]
    if args.store:
        command += ["--store", args.store]
    if args.vector_table:
        command += ["--vector-table", args.vector_table]
    if args.context_window is not None:
        command += ["--context-window", str(args.context_window)]
    if args.int8_encoder:
        command += ["--int8-encoder"]
    return command


def run_child(command: List[str], what: str) -> Dict[str, Any]:
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"The {what} child failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_doc_seconds(kind: str, bertram: str, args: argparse.Namespace) -> Dict[str, Any]:
    """What a user sees first: a fresh process that builds the pipeline and runs one text, stock and bertram in
    turns (`args.first_doc_pairs` pairs, the order alternating), one after the other so that neither shares the
    cores; each ratio is the median of the paired ratios."""
    seconds: Dict[str, List[Dict[str, float]]] = {"stock": [], "bertram": []}
    for n in range(args.first_doc_pairs):
        order = ("stock", "bertram") if n % 2 == 0 else ("bertram", "stock")
        for which in order:
            command = child_command(args, "--first-doc-child", which, kind, bertram)
            seconds[which].append(run_child(command, f"first-doc ({which}, {kind})"))

    def median_of(which: str, key: str) -> float:
        return round(statistics.median(run[key] for run in seconds[which]), 3)

    def ratio(key: str) -> float:
        return round(statistics.median(b[key] / s[key] for s, b in zip(seconds["stock"], seconds["bertram"])), 3)

    return {
        "pairs": args.first_doc_pairs,
        "load_s": {which: median_of(which, "load_s") for which in seconds},
        "first_doc_s": {which: median_of(which, "first_doc_s") for which in seconds},
        "load_over_stock": ratio("load_s"),
        "first_doc_over_stock": ratio("first_doc_s"),
    }


def child_pipeline(args: argparse.Namespace, encoder: str, which: str) -> spacy.Language:
    """The pipeline a child process runs: stock, or bertram with the command line's model and settings."""
    return build(
        encoder,
        args.bertram if which == "bertram" else None,
        args.base_model,
        args.contexts,
        args.store,
        args.injection,
        args.vector_table,
        args.context_window,
        args.int8_encoder,
    )


def first_doc_child(args: argparse.Namespace, assets: Path, encoder: str) -> None:
    """Build the pipeline and run the kind's first text, timing each, as a user's first call in a fresh process."""
    texts = load_texts(assets, args.rss_kind, 1)
    start = time.perf_counter()
    nlp = child_pipeline(args, encoder, args.first_doc_child)
    loaded = time.perf_counter()
    nlp(texts[0])
    done = time.perf_counter()
    print(json.dumps({"load_s": loaded - start, "first_doc_s": done - loaded}))


def peak_rss_mb(runs: Sequence[Tuple[str, str, str]], args: argparse.Namespace) -> List[float]:
    """Peak RSS of fresh processes, one per (kind, pipeline, model), each running the kind's texts
    cold (cache included). They run side by side, after every timing: sharing the cores slows
    them but changes no process's memory."""
    procs = []
    for kind, which, bertram in runs:
        command = child_command(args, "--rss-child", which, kind, bertram)
        procs.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    peaks = []
    for (kind, which, _), proc in zip(runs, procs):
        stdout, stderr = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"The memory child ({which}, {kind}) failed:\n{stderr[-2000:]}")
        peaks.append(float(json.loads(stdout.strip().splitlines()[-1])["peak_rss_mb"]))
    return peaks


def rss_child(args: argparse.Namespace, assets: Path, encoder: str) -> None:
    texts = load_texts(assets, args.rss_kind, text_count(args.rss_kind, args))
    nlp = child_pipeline(args, encoder, args.rss_child)
    for _ in nlp.pipe(texts, batch_size=args.batch_size):
        pass
    print(json.dumps({"peak_rss_mb": own_peak_rss_mb()}))


def own_peak_rss_mb() -> float:
    """This process's peak RSS. Linux's VmHWM, not ru_maxrss: a child started by fork + exec
    inherits the parent's ru_maxrss, so that would report the parent whenever it was larger."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def report(kind: str, result: Dict[str, Any], rss: Optional[Tuple[float, float]]) -> None:
    wps = result["words_per_s"]
    print(
        f"\n{kind}: {result['texts']} texts, {result['words']} words, {result['rare_tokens']} rare tokens "
        f"({100.0 * result['rare_share']:.1f}%; {100.0 * result['texts_with_rare_share']:.1f}% of the texts have one), "
        f"{result['vectors_inferred']} vectors inferred, "
        f"{result['rounds']} paired rounds"
    )
    labels = {
        "stock": "stock transformer",
        "cold": "bertram, cold cache",
        "warm": "bertram, warm cache",
        "cold_plain": "cold, plain encoder path",
        "cold_against": "--against, cold cache",
        "warm_against": "--against, warm cache",
    }
    for name, value in wps.items():
        print(f"  {labels[name]:26s} {value:8.1f} words/s")
    print(
        f"  cold / stock {result['cold_over_stock']:.2f}x (CPU time {result['cold_over_stock_cpu']:.2f}x), "
        f"warm / stock {result['warm_over_stock']:.2f}x; {result['ms_per_rare_word']:.1f} ms per inferred "
        f"rare word, {result['vectors_per_s']} vectors/s inferred"
    )
    if "against" in result:
        other = result["against"]
        print(
            f"  --against: cold / stock {other['cold_over_stock']:.2f}x, warm / stock {other['warm_over_stock']:.2f}x, "
            f"{other['ms_per_rare_word']:.1f} ms per inferred rare word ({other['vectors_inferred']} inferred); "
            f"this run / --against: cold {other['cold_over_against']:.2f}x, warm {other['warm_over_against']:.2f}x"
        )
        if other["vector_cosine"]:
            agreement = other["vector_cosine"]
            print(
                f"  --against's vectors against this run's ({agreement['n']} rare tokens): cosine mean "
                f"{agreement['mean']:.4f}, 1st percentile {agreement['p01']:.4f}, min {agreement['min']:.4f}"
            )
    if "shortcut_speedup" in result:
        print(
            f"  plain encoder path: cold / stock {result['plain_cold_over_stock']:.2f}x; the shortcuts make "
            f"cold {result['shortcut_speedup']:.2f}x faster (the context encoder alone "
            f"{result['encoder_wall_speedup']}x)"
        )
    for label, held in (("", result.get("memory")), ("--against's ", result.get("against", {}).get("memory"))):
        if held:
            print(
                f"  {label}context memory: {held['words']} words, {held['contexts']} contexts, "
                f"{held['bytes'] / 1e3:.1f} kB of text"
            )
    parts = ", ".join(f"{p} {ms:.2f}" for p, ms in result["cpu_ms_per_vector"].items())
    print(f"  CPU ms per inferred vector: {parts}")
    for label, walls in result.get("wall_ms_per_vector", {}).items():
        print(f"  wall ms per inferred vector, {label}: " + ", ".join(f"{p} {ms:.3f}" for p, ms in walls.items()))
    if rss:
        print(f"  peak RSS: stock {rss[0]:.0f} MB, bertram {rss[1]:.0f} MB ({rss[1] / rss[0]:.2f}x)")
    first = result.get("first_doc")
    if first:
        print(
            f"  a fresh process ({first['pairs']} pairs): building the pipeline stock "
            f"{first['load_s']['stock']:.2f} s, "
            f"bertram {first['load_s']['bertram']:.2f} s ({first['load_over_stock']:.2f}x); the first text stock "
            f"{first['first_doc_s']['stock']:.2f} s, bertram {first['first_doc_s']['bertram']:.2f} s "
            f"({first['first_doc_over_stock']:.2f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 snippets, 5 articles and 50 tweets")
    parser.add_argument("--texts", type=int, default=2000, help="short texts (Rotten Tomatoes snippets)")
    parser.add_argument("--long-texts", type=int, default=200, help="long texts (BBC articles)")
    parser.add_argument("--tweets", type=int, default=2000, help="tweets (WNUT-16)")
    parser.add_argument(
        "--kinds",
        default=None,
        help="which kinds to run, comma-separated (default: "
        f"{','.join(TEXT_SOURCES)}, skipping a kind whose data is not there, with a note)",
    )
    parser.add_argument("--round", type=int, default=100, help="texts per paired round (long: a tenth)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--assets", type=Path, default=None, help="assets dir (default: $SPACY_BERTRAM_ASSETS or ./assets)"
    )
    parser.add_argument("--bertram", default=None, help="trained BERTRAM directory (default: untrained, same shape)")
    parser.add_argument("--base-model", default="default")
    parser.add_argument(
        "--contexts",
        default=DEFAULT_CONTEXTS,
        help='the component\'s contexts setting (default: its own, "none"; "doc", ...)',
    )
    parser.add_argument(
        "--context-window", type=int, default=None, help="the component's context_window (default: its own)"
    )
    parser.add_argument("--store", default=None, help="context store for store contexts")
    parser.add_argument("--injection", default=DEFAULT_INJECTION, choices=list(INJECTION_MODES))
    parser.add_argument(
        "--vector-table",
        default=None,
        help="a table from `vectors` for --bertram: its words are "
        "looked up, not inferred (cold runs infer only the others)",
    )
    parser.add_argument(
        "--against",
        type=parse_variant,
        default=None,
        metavar="KEY=VALUE,...",
        help="a second bertram pipeline in the same paired rounds, with these settings changed "
        f"({', '.join(VARIANT_SETTINGS)}; vector_table=none: no table), e.g. the earlier "
        f"defaults: {EARLIER_DEFAULTS}",
    )
    parser.add_argument("--compare-paths", action="store_true", help="also cold with the exact shortcuts off")
    parser.add_argument(
        "--int8-encoder",
        action="store_true",
        help="the layer's int8_encoder: the context encoder's linear layers in int8 (CPU)",
    )
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-RSS child processes")
    parser.add_argument(
        "--first-doc-pairs",
        type=int,
        default=3,
        help="fresh processes per pipeline that build it and run one text, stock and bertram in turns (0: none)",
    )
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--rss-child", choices=["stock", "bertram"], default=None, help=argparse.SUPPRESS)
    parser.add_argument("--rss-kind", choices=list(TEXT_SOURCES), default="short", help=argparse.SUPPRESS)
    parser.add_argument("--first-doc-child", choices=["stock", "bertram"], default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    use_device(args.gpu_id)  # a named error for a bad id or a missing CuPy
    if args.quick:
        args.texts, args.long_texts, args.tweets, args.round = 50, 5, 50, 25
        args.first_doc_pairs = min(args.first_doc_pairs, 1)
    assets = args.assets or default_assets_dir()
    if not assets.is_absolute() and not assets.exists():
        assets = ROOT / assets
    encoder = resolve_base_model(args.base_model)
    if args.rss_child:
        return rss_child(args, assets, encoder)
    if args.first_doc_child:
        return first_doc_child(args, assets, encoder)
    texts_of, skipped = texts_by_kind(assets, {kind: text_count(kind, args) for kind in TEXT_SOURCES}, args.kinds)
    kinds = list(texts_of)
    results: Dict[str, Dict[str, Any]] = {}
    memory: Dict[str, Tuple[float, float]] = {}
    print(
        f"torch threads {torch.get_num_threads()}; bertram model: {args.bertram or 'untrained (same shape)'}; "
        f"contexts: {args.contexts}; window: {args.context_window or 'default'}; injection: {args.injection}; "
        f"vector table: {args.vector_table or 'none'}; int8 encoder: {args.int8_encoder}; "
        f"against: {args.against or 'none'}; "
        f"batch size {args.batch_size}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        models: Dict[str, str] = {}
        for kind in kinds:
            texts = texts_of[kind]
            models[kind] = args.bertram or untrained_model(texts, Path(tmp) / f"bertram-{kind}", args.base_model)
            results[kind] = measure(kind, texts, args, encoder, models[kind])
        if not args.no_memory:
            measured = kinds[:1] if args.quick else kinds  # --quick: one kind's memory (6 children take a minute)
            runs = [(kind, which, models[kind]) for kind in measured for which in ("stock", "bertram")]
            peaks = iter(peak_rss_mb(runs, args))
            for kind in measured:
                memory[kind] = (next(peaks), next(peaks))
                results[kind]["peak_rss_mb"] = {
                    "stock": round(memory[kind][0], 1),
                    "bertram": round(memory[kind][1], 1),
                }
        if args.first_doc_pairs > 0 and kinds:  # the first kind's first text: what a user's first call costs
            results[kinds[0]]["first_doc"] = first_doc_seconds(kinds[0], models[kinds[0]], args)
    for kind in kinds:
        report(kind, results[kind], memory.get(kind))
    headline = {
        "benchmark": "pipeline",
        "device": "cpu" if args.gpu_id < 0 else f"cuda:{args.gpu_id}",
        "contexts": args.contexts,
        "injection": args.injection,
        "trained": bool(args.bertram),
        "vector_table": bool(args.vector_table),
        "context_window": args.context_window,
        "int8_encoder": args.int8_encoder,
        "cold_over_stock": {k: r["cold_over_stock"] for k, r in results.items()},
        "warm_over_stock": {k: r["warm_over_stock"] for k, r in results.items()},
        "ms_per_rare_word": {k: r["ms_per_rare_word"] for k, r in results.items()},
        "peak_rss_ratio": {k: round(m[1] / m[0], 3) for k, m in memory.items()},
        "rare_share": {k: r["rare_share"] for k, r in results.items()},
        "texts_with_rare_share": {k: r["texts_with_rare_share"] for k, r in results.items()},
        "vectors_per_s": {k: r["vectors_per_s"] for k, r in results.items()},
        "skipped": sorted(skipped),
        "first_doc": {k: r["first_doc"] for k, r in results.items() if "first_doc" in r},
    }
    if any("memory" in r for r in results.values()):
        headline["memory"] = {k: r.get("memory") for k, r in results.items()}
    if args.against:
        headline["against"] = {
            "settings": args.against,
            **{
                key: {k: r["against"][key] for k, r in results.items()}
                for key in (
                    "cold_over_stock",
                    "warm_over_stock",
                    "ms_per_rare_word",
                    "cold_over_against",
                    "warm_over_against",
                )
            },
            "vector_cosine_mean": {k: (r["against"]["vector_cosine"] or {}).get("mean") for k, r in results.items()},
        }
    if args.compare_paths:
        headline["shortcut_speedup"] = {k: r["shortcut_speedup"] for k, r in results.items()}
    print(json.dumps(headline))


if __name__ == "__main__":
    main()
