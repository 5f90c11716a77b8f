"""Rarify with the trained baseline, then compare it with BERTRAM-enhanced versions.

Steps (each a `python -m spacy_bertram` command, see cli.py and project.yml):

- `run_rarification`: the trained baseline textcat is the classifier that guides
  `rarify.rarify` (its textcat probabilities, one column per label). Candidates
  are processed in chunks whose results are saved as they finish, so a killed run
  resumes where it stopped with identical results (randomness is per item).
  Output: train/dev/test.spacy and test.jsonl (`rarify.write_rarified_dataset`)
  plus rarify.json with the counts of what was kept and skipped.
- `evaluate_systems`: the same trained textcat, unchanged, predicts the rarified
  test set as
    baseline                 stock encoding of every word;
    bertram_replace          BERTRAM vectors instead of the rare words' wordpieces;
    bertram_slash            wordpieces, "/", BERTRAM vector;
    bertram_slash_indomain   slash, with the doc's own sentences as contexts first
                             (the paper's INDOMAIN), then the context store.
  replace / slash take contexts from the context store (the BERTRAM corpus), as
  the paper takes them from its corpus; a word without any gets its form vector.
  "Rare" for injection is the rarification rule: fewer than `threshold`
  occurrences in the context store's corpus. The transformer is the
  `spacy-bertram.TransformerModel.v1` architecture with the baseline's weights;
  with injection "none" it is bit-identical to the stock model.
  Output: metrics.json (accuracy on All / WN / Msp, McNemar vs the baseline,
  accuracy by the rarest substitute's frequency, injection coverage),
  predictions.jsonl and accuracy_by_frequency.png.
- `assemble_pipeline`: the baseline with the `bertram` component and slash
  injection, saved as a self-contained pipeline for `spacy package`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import component  # noqa: F401  (registers the bertram factory and encoder_path misc)
from .datasets import Record, read_records
from .fileio import atomic_path, write_json_atomic

logger = logging.getLogger("spacy_bertram")

PathOrStr = Union[str, Path]
INJECTION_ARCH = "spacy-bertram.TransformerModel.v1"
#: name -> (injection, contexts); "baseline" has no bertram component.
SYSTEMS: Dict[str, Tuple[str, Optional[str]]] = {
    "baseline": ("none", None),
    "bertram_replace": ("replace", "store"),
    "bertram_slash": ("slash", "store"),
    "bertram_slash_indomain": ("slash", "both"),
}
DEFAULT_SYSTEMS = tuple(SYSTEMS)


def use_device(gpu_id: int) -> None:
    """spaCy's `--gpu-id`: -1 is the CPU; N >= 0 requires CUDA device N (clear error if absent)."""
    if gpu_id is None or gpu_id < 0:
        return
    import spacy

    try:
        spacy.require_gpu(gpu_id)
    except ValueError as err:
        raise ValueError(f"--gpu-id {gpu_id}: no usable GPU ({err}). Use --gpu-id -1 for the CPU.") from err


# ---------------------------------------------------------------------------
# Loading the trained textcat with the injection architecture


def load_textcat(model_dir: PathOrStr, injection: str = "none"):
    """The trained pipeline with its transformer on `spacy-bertram.TransformerModel.v1`.

    The weights are the trained ones (the architectures serialise alike); only the
    forward pass differs, and with injection "none" not even that.
    """
    import spacy

    path = Path(model_dir)
    if not (path / "config.cfg").is_file():
        raise ValueError(f"{path} is not a trained spaCy pipeline (no config.cfg); train the baseline first.")
    overrides = {
        "components.transformer.model.@architectures": INJECTION_ARCH,
        "components.transformer.model.injection": injection,
    }
    nlp = spacy.load(path, config=overrides)
    if "textcat" not in nlp.pipe_names:
        raise ValueError(f"{path} has no 'textcat' component.")
    return nlp


def set_injection(nlp, injection: str) -> None:
    """Switch the injection mode of every BERTRAM transformer in `nlp` in place."""
    from .injection import INJECTION_MODES, BertramTransformerModel

    if injection not in INJECTION_MODES:
        raise ValueError(f"injection must be one of {INJECTION_MODES}, got {injection!r}")
    found = False
    for _, proc in nlp.components:
        model = getattr(proc, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            if isinstance(node, BertramTransformerModel):
                node.injection = injection
                found = True
    if not found:
        raise ValueError("The pipeline has no spacy-bertram.TransformerModel.v1 transformer.")


def textcat_labels(nlp) -> List[str]:
    return list(nlp.get_pipe("textcat").labels)


def make_classifier(nlp, batch_size: int = 32):
    """texts -> probabilities (n_texts, n_labels), columns in `textcat_labels(nlp)` order."""
    labels = textcat_labels(nlp)

    def classify(texts: List[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(labels)), dtype=float)
        for i, doc in enumerate(nlp.pipe(texts, batch_size=batch_size)):
            out[i] = [doc.cats.get(label, 0.0) for label in labels]
        return out

    return classify


# ---------------------------------------------------------------------------
# Rarification


def load_counts(path: PathOrStr) -> Dict[str, int]:
    """Word counts from `prepare`'s counts.tsv ("word<TAB>count") or a context store."""
    path = Path(path)
    if path.is_dir():
        path = path / "counts.tsv"
    if path.suffix in (".sqlite", ".db"):
        from .contexts import ContextStore

        with ContextStore.open(path) as store:
            return dict(store.counts(min_count=1))
    if not path.is_file():
        raise ValueError(f"No word counts at {path}; run the prepare step first.")
    counts: Dict[str, int] = {}
    with open(path, encoding="utf8") as fh:
        for line in fh:
            word, _, n = line.rstrip("\n").rpartition("\t")
            if word:
                counts[word] = int(n)
    return counts


def _settings_key(settings: Dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(settings, sort_keys=True).encode("utf8")).hexdigest()[:12]


def directory_fingerprint(path: PathOrStr) -> str:
    """Names, sizes and modification times of every file below `path` (a retrained
    model at the same path gets a new fingerprint, so stale partial results are not reused)."""
    digest = hashlib.sha1()
    root = Path(path)
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = file.stat()
        digest.update(f"{file.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns};".encode("utf8"))
    return digest.hexdigest()


def rarify_in_chunks(
    candidates: Sequence[Record],
    classify,
    labels: Sequence[str],
    subs,
    tagger,
    partial_dir: PathOrStr,
    chunk_size: int = 25,
    max_masks: int = 5,
    misspelling_rate: float = 0.1,
    seed: int = 0,
    batch_size: int = 64,
    progress: bool = True,
):
    """`rarify.rarify` over chunks of candidates, each chunk's result saved in
    `partial_dir` as it finishes; chunks found there are loaded, not recomputed.
    Results equal one `rarify` call over all candidates (randomness is per item)."""
    from tqdm import tqdm

    from .rarify import Example, RarificationResult, RarifiedItem, Substitution, rarify

    partial = Path(partial_dir)
    partial.mkdir(parents=True, exist_ok=True)
    total = RarificationResult()
    bar = tqdm(total=len(candidates), desc="Rarifying", unit=" items", disable=not progress)
    for k in range(0, len(candidates), chunk_size):
        chunk = candidates[k : k + chunk_size]
        path = partial / f"chunk-{k // chunk_size:05d}.json"
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf8"))
        else:
            result = rarify([Example(r.text, r.label, r.id) for r in chunk], classify, labels, subs,
                            tagger=tagger, max_masks=max_masks, misspelling_rate=misspelling_rate,
                            seed=seed, batch_size=batch_size)
            data = {"summary": result.summary(), "items": [it.to_dict() for it in result.items]}
            write_json_atomic(path, data, indent=None)
        for key in ("n_candidates", "n_correct", "skipped_empty", "skipped_no_candidates", "not_flipped"):
            setattr(total, key, getattr(total, key) + data["summary"][key])
        for item in data["items"]:
            item = dict(item, substitutions=[Substitution(**sub) for sub in item["substitutions"]])
            total.items.append(RarifiedItem(**item))
        bar.update(len(chunk))
        bar.set_postfix(items=len(total.items))
    bar.close()
    return total


def run_rarification(
    model_dir: PathOrStr,
    splits_dir: PathOrStr,
    output_dir: PathOrStr,
    counts: PathOrStr,
    threshold: float = 100,
    max_candidates: Optional[int] = None,
    max_masks: int = 5,
    misspelling_rate: float = 0.1,
    seed: int = 0,
    gpu_id: int = -1,
    chunk_size: int = 25,
    wordnet_dir: Optional[PathOrStr] = None,
    batch_size: int = 64,
    progress: bool = True,
) -> Dict[str, Any]:
    """Rarify the test candidates in `splits_dir` with the baseline at `model_dir`."""
    from .rarify import Example, FrequencyModel, SubstitutionDictionary, spacy_tagger, write_rarified_dataset

    start = time.time()
    splits = Path(splits_dir)
    out = Path(output_dir)
    train, dev, candidates = (read_records(splits / n) for n in ("train.jsonl", "dev.jsonl", "test_candidates.jsonl"))
    if max_candidates:
        candidates = candidates[:max_candidates]
    use_device(gpu_id)
    # WordNet first: its absence is the likeliest set-up problem, say so before any work.
    subs = SubstitutionDictionary(FrequencyModel(load_counts(counts)), threshold=threshold, wordnet_dir=wordnet_dir)
    nlp = load_textcat(model_dir)
    labels = textcat_labels(nlp)
    settings = {"model": directory_fingerprint(model_dir), "threshold": threshold, "max_masks": max_masks,
                "misspelling_rate": misspelling_rate, "seed": seed, "counts": directory_fingerprint(Path(counts).parent)
                if Path(counts).is_file() else str(counts),
                "candidates": hashlib.sha1(json.dumps([r.to_dict() for r in candidates]).encode("utf8")).hexdigest()}
    total = rarify_in_chunks(candidates, make_classifier(nlp, batch_size), labels, subs, spacy_tagger(),
                             out / ".partial" / _settings_key(settings), chunk_size, max_masks,
                             misspelling_rate, seed, batch_size, progress)
    if not total.items:
        raise ValueError(
            f"Rarification produced no test items from {len(candidates)} candidates "
            f"({total.summary()}); use more candidates, shorter texts or a higher threshold."
        )
    example = lambda rs: [Example(r.text, r.label, r.id) for r in rs]  # noqa: E731
    write_rarified_dataset(out, example(train), example(dev), total.items, labels)
    kinds = [sub.kind for it in total.items for sub in it.substitutions]
    summary = {
        **total.summary(), "labels": labels, "threshold": threshold, "max_masks": max_masks,
        "misspelling_rate": misspelling_rate, "seed": seed, "gpu_id": gpu_id,
        "substitutions": len(kinds), "synonyms": kinds.count("synonym"),
        "misspellings": kinds.count("misspelling"),
        "mean_masks": round(len(kinds) / len(total.items), 2),
        "seconds": round(time.time() - start, 2),
    }
    write_json_atomic(out / "rarify.json", summary)
    return summary


# ---------------------------------------------------------------------------
# Evaluation


def read_test_items(rarified_dir: PathOrStr) -> List[dict]:
    from .rarify import read_substitutions_jsonl

    path = Path(rarified_dir) / "test.jsonl"
    if not path.is_file():
        raise ValueError(f"No rarified test set at {path}; run the rarify step first.")
    items = [it for it in read_substitutions_jsonl(path)]
    empty = [it["id"] for it in items if not str(it.get("text", "")).strip()]
    if empty:
        raise ValueError(f"{path}: items with an empty text: {empty[:5]}")
    return items


def rare_zipf(threshold: float, total_words: int) -> float:
    """The Zipf value below which a word has fewer than `threshold` occurrences."""
    from .rare_words import zipf_from_count

    return zipf_from_count(max(1, int(math.ceil(threshold))), total_words) if total_words > 0 else 0.0


def add_bertram(
    nlp,
    bertram_path: PathOrStr,
    contexts: str = "store",
    context_store: Optional[PathOrStr] = None,
    threshold: float = 100,
    max_contexts: int = 8,
    name: str = "bertram",
):
    """Add the `bertram` component before the transformer, with the rarification rule.

    Rare = fewer than `threshold` occurrences in the context store's corpus (so the
    words rarification put in get vectors); without a store, wordfreq's Zipf 3.0.
    """
    from .storage import load_bertram

    model_dir = Path(bertram_path)
    network = load_bertram(model_dir)  # clear error for a missing / corrupt model
    rule: Dict[str, Any] = {"@misc": "spacy-bertram.RareWords.v1"}
    if context_store:
        from .contexts import ContextStore

        with ContextStore.open(context_store) as store:
            total = store.total_words
        rule.update(frequencies="store", max_zipf=rare_zipf(threshold, total))
    else:
        rule.update(frequencies="wordfreq", max_zipf=3.0)
    config = {
        "model_path": str(model_dir),
        "contexts": contexts,
        "context_store": str(context_store) if context_store else None,
        "max_contexts": int(max_contexts),
        "rare_words": rule,
        "model": {"@architectures": "spacy-bertram.Bertram.v1", "base_model": network.config.base_model},
    }
    return nlp.add_pipe("bertram", name=name, before="transformer", config=config)


def predict_labels(nlp, texts: Sequence[str], batch_size: int = 32) -> Tuple[List[str], List[int]]:
    """(argmax label, number of tokens with a BERTRAM vector) per text."""
    labels = textcat_labels(nlp)
    predicted, injected = [], []
    for doc in nlp.pipe(texts, batch_size=batch_size):
        predicted.append(max(labels, key=lambda label: doc.cats.get(label, 0.0)))
        vectors = doc._.get("bertram") if doc.has_extension("bertram") else None
        injected.append(len(vectors or {}))
    return predicted, injected


def substitute_coverage(nlp, items: Sequence[dict]) -> float:
    """Fraction of substituted words that the bertram component gives a vector."""
    if "bertram" not in nlp.pipe_names:
        return 0.0
    n = hit = 0
    for doc, item in zip(nlp.pipe([it["text"] for it in items], disable=[p for p in nlp.pipe_names if p != "bertram"]), items):
        vectors = doc._.get("bertram") or {}
        words = {doc[i].text.lower() for i in vectors}
        for sub in item["substitutions"]:
            n += 1
            hit += sub["substitute"].lower() in words
    return hit / n if n else 0.0


def evaluate_systems(
    model_dir: PathOrStr,
    rarified_dir: PathOrStr,
    output_dir: PathOrStr,
    bertram_path: Optional[PathOrStr] = None,
    context_store: Optional[PathOrStr] = None,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    threshold: float = 100,
    max_contexts: int = 8,
    gpu_id: int = -1,
    batch_size: int = 32,
    progress: bool = True,
) -> Dict[str, Any]:
    """Predict the rarified test set with each system; metrics.json, predictions.jsonl, PNG."""
    from .evaluation.metrics import (
        accuracy_by_frequency,
        accuracy_by_subset,
        compare_systems,
        plot_accuracy_by_frequency,
    )
    from .rarify import UnknownLabelError

    start = time.time()
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f"Unknown systems {unknown}; choose from {list(SYSTEMS)}")
    if "baseline" not in systems:
        systems = ["baseline", *systems]
    needs_bertram = [s for s in systems if SYSTEMS[s][1] is not None]
    if needs_bertram and bertram_path is None:
        raise ValueError(f"Systems {needs_bertram} need a trained BERTRAM model (--bertram).")
    if any(SYSTEMS[s][1] in ("store", "both") for s in needs_bertram) and context_store is None:
        logger.warning("No context store: BERTRAM systems use the doc's contexts only.")
    items = read_test_items(rarified_dir)
    use_device(gpu_id)
    nlp = load_textcat(model_dir, injection="none")
    known = set(textcat_labels(nlp))
    for it in items:
        if it["label"] not in known:
            raise UnknownLabelError(
                f"Test item {it['id']} has label {it['label']!r}, which the trained textcat never saw "
                f"(it knows {sorted(known)})."
            )
    texts = [it["text"] for it in items]
    predictions: Dict[str, List[str]] = {}
    injected: Dict[str, List[int]] = {}
    coverage: Dict[str, float] = {}
    seconds: Dict[str, float] = {}
    current: Optional[str] = None  # the context source of the bertram component in nlp
    for system in systems:
        t0 = time.time()
        injection, contexts = SYSTEMS[system]
        source = None if contexts is None else (contexts if context_store is not None else "doc")
        if source != current:
            # Systems with the same contexts share one component (and its vector cache).
            if "bertram" in nlp.pipe_names:
                nlp.remove_pipe("bertram")
            if source is not None:
                add_bertram(nlp, bertram_path, source, context_store, threshold, max_contexts)  # type: ignore[arg-type]
            current = source
        set_injection(nlp, injection)
        if progress:
            logger.info("evaluating %s on %d items", system, len(items))
        predictions[system], injected[system] = predict_labels(nlp, texts, batch_size)
        if contexts is not None:
            coverage[system] = substitute_coverage(nlp, items)
        seconds[system] = round(time.time() - t0, 2)
    accuracy = {s: accuracy_by_subset(items, predictions[s]) for s in systems}
    comparisons = {
        s: {k: vars(v) for k, v in compare_systems(items, predictions[s], predictions["baseline"]).items()}
        for s in systems if s != "baseline"
    }
    buckets = {s: accuracy_by_frequency(items, predictions[s]) for s in systems}
    out = Path(output_dir)
    plot_accuracy_by_frequency(buckets, out / "accuracy_by_frequency.png")
    with atomic_path(out / "predictions.jsonl") as tmp:
        with open(tmp, "w", encoding="utf8") as fh:
            for i, it in enumerate(items):
                row = {"id": it["id"], "label": it["label"], **{s: predictions[s][i] for s in systems}}
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    metrics = {
        "n_items": len(items),
        "systems": list(systems),
        "accuracy": accuracy,
        "mcnemar_vs_baseline": comparisons,
        "by_frequency": {s: [vars(b) | {"label": b.label} for b in bs] for s, bs in buckets.items()},
        "substitute_coverage": coverage,
        "mean_injected_per_doc": {s: round(float(np.mean(v)), 2) for s, v in injected.items()},
        "threshold": threshold, "max_contexts": max_contexts, "gpu_id": gpu_id,
        "bertram": str(bertram_path) if bertram_path else None,
        "context_store": str(context_store) if context_store else None,
        "seconds_per_system": seconds,
        "seconds": round(time.time() - start, 2),
    }
    write_json_atomic(out / "metrics.json", _finite(metrics))
    return metrics


def _finite(obj: Any) -> Any:
    """NaN / inf -> None so the JSON is standard."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


# ---------------------------------------------------------------------------
# The pipeline that gets packaged


PACKAGE_CODE = '''"""Registers spacy-bertram's factory, layers and misc functions when the package loads."""
import spacy_bertram.component  # noqa: F401
import spacy_bertram.injection  # noqa: F401
'''


def assemble_pipeline(
    model_dir: PathOrStr,
    bertram_path: PathOrStr,
    output_dir: PathOrStr,
    injection: str = "slash",
    threshold: float = 100,
    max_contexts: int = 8,
    name: str = "textcat_bertram",
    version: str = "0.1.0",
    vector_table: Optional[PathOrStr] = None,
) -> Path:
    """The trained textcat + `bertram` (+ injection) saved as one self-contained pipeline,
    with a `code.py` beside it for `spacy package --code`. Contexts come from the doc
    and rarity from wordfreq (Zipf < 3): a packaged pipeline cannot rely on a local
    context store, but it can carry a `vector_table` (from `vectors`) whose words get
    their corpus-context vectors with no inference."""
    nlp = load_textcat(model_dir, injection=injection)
    pipe = add_bertram(nlp, bertram_path, "doc", None, threshold, max_contexts)
    if vector_table is not None:
        pipe.initialize(lambda: [], nlp=nlp, vector_table=str(vector_table))  # refuses another model's table
    nlp.meta["name"] = name
    nlp.meta["version"] = version
    nlp.meta["description"] = f"Text classifier on the MiniLM with BERTRAM vectors ({injection}) for rare words"
    reqs = list(nlp.meta.get("requirements", []))
    if not any(r.startswith("spacy-bertram") for r in reqs):
        reqs.append("spacy-bertram>=0.1.0")
    nlp.meta["requirements"] = reqs
    out = Path(output_dir)
    with atomic_path(out, is_dir=True) as tmp:
        nlp.to_disk(tmp / "pipeline")
        (tmp / "code.py").write_text(PACKAGE_CODE, encoding="utf8")
    return out


__all__ = [
    "DEFAULT_SYSTEMS", "SYSTEMS", "add_bertram", "assemble_pipeline", "evaluate_systems",
    "load_counts", "load_textcat", "make_classifier", "run_rarification", "set_injection",
    "use_device",
]
