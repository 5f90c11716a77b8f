"""Rarify with the trained baseline, then compare it with BERTRAM-enhanced versions.

Steps (each a `python -m spacy_bertram` command, see cli.py and project.yml):

- `run_rarification` (module `rarify_step`): the trained baseline textcat guides
  `rarify.rarify`, resumably, for one or several rarification seeds.
- `evaluate_systems` (here): the same trained textcat, unchanged, predicts the rarified
  test set as
    baseline                 stock encoding of every word;
    bertram_replace          BERTRAM vectors instead of the rare words' wordpieces;
    bertram_slash            wordpieces, "/", BERTRAM vector;
    bertram_slash_indomain   slash, with the doc's own sentences as contexts first
                             (the paper's INDOMAIN), then the context store.
    bertram_slash_gcide      slash, with dictionary definitions as contexts (give a
                             GCIDE-only definition store: rarification takes its
                             synonyms from WordNet, so WordNet glosses would flatter it).
  replace / slash take contexts from the context store (the BERTRAM corpus), as
  the paper takes them from its corpus; a word without any gets its form vector.
  "Rare" for injection is the rarification rule: fewer than `threshold`
  occurrences in the context store's corpus. The transformer is the
  `spacy-bertram.TransformerModel.v1` architecture with the baseline's weights;
  with injection "none" it is bit-identical to the stock model.
  Output (`evaluation.set_outputs`): metrics.json (accuracy on All / WN / Msp,
  McNemar and paired bootstrap CIs vs the baseline, mean gold-label
  log-probability, accuracy by the rarest substitute's frequency, injection
  coverage), predictions.jsonl (per item, for `pool`) and accuracy_by_frequency.png;
  the same for each further rarification seed's set (OUTPUT/seed-N).
- `assemble_pipeline` (module `pipelines`): the baseline with the `bertram`
  component and slash injection, saved as a self-contained pipeline for `spacy package`.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..pipeline.context_sources import without_source
from ..pipeline.device import use_device
from ..types import PathLike
from .pipelines import add_bertram, load_textcat, set_injection, textcat_labels

logger = logging.getLogger("spacy_bertram")

#: name -> (injection, contexts); "baseline" has no bertram component.
SYSTEMS: Dict[str, Tuple[str, Optional[str]]] = {
    "baseline": ("none", None),
    "bertram_replace": ("replace", "store"),
    "bertram_slash": ("slash", "store"),
    "bertram_slash_indomain": ("slash", "both"),
    "bertram_recentre": ("recentre", "store"),
    "bertram_slash_gcide": ("slash", "dictionary"),
}
#: Every system that needs no definition store.
DEFAULT_SYSTEMS = tuple(name for name, (_, contexts) in SYSTEMS.items() if "dictionary" not in str(contexts))


# ---------------------------------------------------------------------------
# Evaluation


def read_test_items(rarified_dir: PathLike) -> List[dict]:
    from .rarify import read_substitutions_jsonl

    path = Path(rarified_dir) / "test.jsonl"
    if not path.is_file():
        raise ValueError(f"No rarified test set at {path}; run the rarify step first.")
    items = [it for it in read_substitutions_jsonl(path)]
    empty = [it["id"] for it in items if not str(it.get("text", "")).strip()]
    if empty:
        raise ValueError(f"{path}: items with an empty text: {empty[:5]}")
    return items


def predict_labels(nlp, texts: Sequence[str], batch_size: int = 32) -> Tuple[List[str], np.ndarray, List[int]]:
    """Per text: the argmax label, the probabilities (columns in `textcat_labels`
    order) and the number of tokens with a BERTRAM vector."""
    labels = textcat_labels(nlp)
    predicted, injected = [], []
    probabilities = np.zeros((len(texts), len(labels)))
    for i, doc in enumerate(nlp.pipe(texts, batch_size=batch_size)):
        probabilities[i] = [doc.cats.get(label, 0.0) for label in labels]
        predicted.append(labels[int(np.argmax(probabilities[i]))])
        vectors = doc._.get("bertram") if doc.has_extension("bertram") else None
        injected.append(len(vectors or {}))
    return predicted, probabilities, injected


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
    model_dir: PathLike,
    rarified_dir: PathLike,
    output_dir: PathLike,
    bertram_path: Optional[PathLike] = None,
    context_store: Optional[PathLike] = None,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    threshold: float = 100,
    contexts_per_word: int = 8,
    gpu_id: int = -1,
    batch_size: int = 32,
    progress: bool = True,
    seed_sets: bool = True,
    n_resamples: int = 10000,
    dictionary_store: Optional[PathLike] = None,
) -> Dict[str, Any]:
    """Predict the rarified test set with each system; metrics.json, predictions.jsonl, PNG.

    With `seed_sets`, the sets of further rarification seeds that rarify.json lists
    (RARIFIED/seed-N) are evaluated in the same run (one model load, one BERTRAM
    vector cache) into OUTPUT/seed-N. Returns the first set's metrics.
    """
    from .set_outputs import gold_probabilities, write_set_outputs
    from .records import UnknownLabelError
    from .seed_sets import listed_sets, remove_unlisted

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
    if any("dictionary" in str(SYSTEMS[s][1]) for s in needs_bertram) and dictionary_store is None:
        raise ValueError("bertram_slash_gcide needs a definition store (--dictionary-store; build a GCIDE-only one "
                         "with `dictionary OUT --sources gcide --no-gcide-wordnet-senses`).")
    dirs = listed_sets(rarified_dir, "rarify.json") if seed_sets else {"": Path(rarified_dir)}
    sets = {name: read_test_items(path) for name, path in dirs.items()}
    use_device(gpu_id)  # spaCy/thinc on the GPU too (a named error for a bad id or a missing CuPy)
    nlp = load_textcat(model_dir, injection="none")
    labels = textcat_labels(nlp)
    for it in (it for items in sets.values() for it in items):
        if it["label"] not in labels:
            raise UnknownLabelError(
                f"Test item {it['id']} has label {it['label']!r}, which the trained textcat never saw "
                f"(it knows {sorted(labels)})."
            )
    predictions: Dict[str, Dict[str, List[str]]] = {name: {} for name in sets}
    p_gold: Dict[str, Dict[str, np.ndarray]] = {name: {} for name in sets}
    injected: Dict[str, Dict[str, float]] = {name: {} for name in sets}
    coverage: Dict[str, Dict[str, float]] = {name: {} for name in sets}
    seconds: Dict[str, float] = {}
    current: Optional[str] = None  # the context source of the bertram component in nlp
    for system in systems:
        t0 = time.time()
        injection, contexts = SYSTEMS[system]
        source = contexts if contexts is None or context_store is not None else without_source(contexts, "store")
        if source != current:
            # Systems with the same contexts share one component (and its vector cache).
            if "bertram" in nlp.pipe_names:
                nlp.remove_pipe("bertram")
            if source is not None:
                add_bertram(nlp, bertram_path, source, context_store, threshold, contexts_per_word,  # type: ignore[arg-type]
                            dictionary_store=dictionary_store)
            current = source
        set_injection(nlp, injection)
        for name, items in sets.items():
            if progress:
                logger.info("evaluating %s on %d items%s", system, len(items), f" ({name})" if name else "")
            predicted, probabilities, counts = predict_labels(nlp, [it["text"] for it in items], batch_size)
            predictions[name][system] = predicted
            p_gold[name][system] = gold_probabilities(items, probabilities, labels)
            injected[name][system] = round(float(np.mean(counts)), 2)
            if contexts is not None:
                coverage[name][system] = substitute_coverage(nlp, items)
        seconds[system] = round(time.time() - t0, 2)
    out = Path(output_dir)
    settings = {
        "threshold": threshold, "contexts_per_word": contexts_per_word, "gpu_id": gpu_id,
        "bertram": str(bertram_path) if bertram_path else None,
        "context_store": str(context_store) if context_store else None,
        "dictionary_store": str(dictionary_store) if dictionary_store else None,
    }
    for name in reversed(list(sets)):  # the first set last: its metrics carry the run's time
        extra = {"substitute_coverage": coverage[name], "mean_injected_per_doc": injected[name], **settings}
        if not name:
            extra.update(seed_sets=[n for n in sets if n], seconds_per_system=seconds,
                         seconds=round(time.time() - start, 2))
        metrics = write_set_outputs(out / name, sets[name], predictions[name], p_gold[name], extra, n_resamples)
    remove_unlisted(out, [n for n in sets if n])
    return metrics




__all__ = ["DEFAULT_SYSTEMS", "SYSTEMS", "evaluate_systems", "predict_labels", "read_test_items"]
