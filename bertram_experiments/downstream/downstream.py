"""Rarify with the trained baseline, then compare it with BERTRAM-enhanced versions.

Steps (each a `python -m bertram_experiments` command, see cli.py and project.yml):

- `run_rarification` (module `rarify_step`): the trained baseline textcat guides
  `masking.rarify`, resumably, for one or several rarification seeds.
- `evaluate_systems` (here): the same trained textcat, unchanged, predicts each item as
    baseline                 the rarified text, stock encoding of every word;
    original, masked         the item's original text (100% by construction: only
                             correctly classified candidates are rarified) and its
                             masked text: the ceiling and the floor;
    oracle_INJ               each substitute gets the stock embedding of the word it
                             replaced, through injection INJ (`oracle`): what a
                             perfect vector could recover through that path;
    bertram_INJ_CTX          BERTRAM vectors through injection INJ (replace, slash,
                             recentre) from the word's form alone (CTX form), the
                             doc's own sentences (doc) or the context store (store);
                             for slash and recentre also: the set's own texts (no
                             labels) as a store (indomain: INDOMAIN as the paper describes it), that
                             store before the general one (stores), and the doc with
                             the streaming memory of the set's earlier texts (memory);
                             and, given a definition store, the in-domain and general
                             stores followed by the word's dictionary definitions
                             (storesgcide), not among the default systems;
    bertram_slash_gcide      slash, with dictionary definitions as contexts (give a
                             GCIDE-only definition store: rarification takes its
                             synonyms from WordNet, so WordNet glosses would flatter
                             it); not among the default systems.
  Which tokens get a BERTRAM vector is the `bertram` component's own rule (rare to
  the encoder: 2+ wordpieces, wordfreq Zipf below `max_zipf`), as in a user's
  pipeline. The transformer is the `spacy-bertram.TransformerModel.v1`
  architecture with the baseline's weights; with injection "none" it is
  bit-identical to the stock model.
  Output (`evaluation.downstream.set_outputs`): metrics.json (accuracy on All / WN / Msp,
  McNemar and paired bootstrap CIs vs the baseline, mean gold-label
  log-probability, accuracy by the rarest substitute's frequency, injection
  coverage), predictions.jsonl (per item, for `pool`) and accuracy_by_frequency.png;
  the same for each further rarification seed's set (OUTPUT/seed-N).
- `evaluate_originals` (here): do no harm. Every test candidate's original text, stock
  against the pipeline with `bertram`: accuracy and log p(gold) with paired CIs.
- `assemble_pipeline` (module `pipelines`): the baseline with the `bertram`
  component and slash injection, saved as a self-contained pipeline for `spacy package`.
"""

from __future__ import annotations

import logging
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..bootstrap import DEFAULT_RESAMPLES
from ..errors import Errors, Warnings
from spacy_bertram.project_support import (
    DEFAULT_CONTEXTS_PER_WORD,
    DEFAULT_MAX_ZIPF,
    PathLike,
    add_texts,
    tokenize,
    use_device,
)
from ..outputs import SET_OUTPUTS
from ..rarification.datasets import read_records
from ..rarification.oracle import ORACLE_FACTORY, add_oracle
from ..pipelines import add_bertram, load_textcat, set_injection, textcat_labels
from ..rarification.rarify import read_substitutions_jsonl
from ..rarification.records import UnknownLabelError
from ..rarification.seed_sets import listed_sets, remove_unlisted
from .paired import RECURRENCE_KEY
from .set_outputs import gold_probabilities, write_set_outputs

logger = logging.getLogger("spacy_bertram")

INJECTIONS = ("replace", "slash", "recentre")
#: BERTRAM's context sources in the system names -> the component's `contexts` value.
CONTEXT_SETTINGS = {"form": "none", "doc": "doc", "store": "store"}
#: Context sources that depend on the evaluated set, for the injections that pay (recentre, slash): the set's own
#: texts (no labels) as a store, alone ("indomain") or before the general store ("stores"), INDOMAIN as the paper
#: describes it;
#: and the streaming memory ("memory": the doc and what the component remembered from the set's earlier texts,
#: read in their order, starting empty). Each set gets its own component, so nothing carries over between sets.
SET_CONTEXTS = ("indomain", "stores", "memory")
#: The in-domain and general stores, then up to `definitions_per_word` dictionary definitions (a GCIDE-only store):
#: definitions for the rare words that neither store holds.
DEFINITION_CHAIN = "storesgcide"
#: Definitions a word gets at most after the two stores: two of eight places, as docs/dictionary.md suggests.
DEFAULT_DEFINITIONS_PER_WORD = 2
SET_CONTEXT_INJECTIONS = ("slash", "recentre")


@dataclass(frozen=True)
class System:
    """One way of predicting an item: which text, which vectors, which injection."""

    injection: str = "none"
    #: None: no vectors; "oracle": the original words' stock embeddings; else the
    #: bertram component's `contexts` ("none" = form only, "doc", "store", "both").
    vectors: Optional[str] = None
    #: The item's field that is classified.
    text: str = "text"


SYSTEMS: Dict[str, System] = {
    "baseline": System(),
    "original": System(text="original_text"),
    "masked": System(text="masked_text"),
    **{f"oracle_{inj}": System(inj, "oracle") for inj in INJECTIONS},
    # grouped by context source: systems with the same vectors share one component and its cache
    **{f"bertram_{inj}_{ctx}": System(inj, source) for ctx, source in CONTEXT_SETTINGS.items() for inj in INJECTIONS},
    **{f"bertram_{inj}_{ctx}": System(inj, ctx) for ctx in SET_CONTEXTS for inj in SET_CONTEXT_INJECTIONS},
}
DEFAULT_SYSTEMS = tuple(SYSTEMS)
# these need a definition store: not defaults
SYSTEMS["bertram_slash_gcide"] = System("slash", "dictionary")
SYSTEMS.update({f"bertram_{inj}_{DEFINITION_CHAIN}": System(inj, DEFINITION_CHAIN) for inj in SET_CONTEXT_INJECTIONS})
#: The system kinds whose contexts include a definition store.
DEFINITION_KINDS = ("dictionary", DEFINITION_CHAIN)
#: The system kinds whose contexts depend on the evaluated set: a fresh component (or store) per set.
PER_SET_KINDS = (*SET_CONTEXTS, DEFINITION_CHAIN)
#: Of those, the kinds that read each set's own texts as a store (all but the memory, which starts empty).
SET_STORE_KINDS = tuple(kind for kind in PER_SET_KINDS if kind != "memory")
#: The system kinds that read the general context store: dropped without one.
GENERAL_STORE_KINDS = ("store", "both", "stores", DEFINITION_CHAIN)
#: The do-no-harm comparison on original texts: the stock pipeline against each injection
#: with the component's default contexts (the doc's own sentences).
ORIGINAL_TEXT_SYSTEMS = ("baseline", *(f"bertram_{inj}_doc" for inj in INJECTIONS))


# ---------------------------------------------------------------------------
# Evaluation


def read_test_items(rarified_dir: PathLike) -> List[dict]:
    path = Path(rarified_dir) / "test.jsonl"
    if not path.is_file():
        raise ValueError(Errors.E320.format(path=path))
    items = [it for it in read_substitutions_jsonl(path)]
    empty = [it["id"] for it in items if not str(it.get("text", "")).strip()]
    if empty:
        raise ValueError(Errors.E321.format(path=path, empty=empty[:5]))
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
    for doc, item in zip(
        nlp.pipe([it["text"] for it in items], disable=[p for p in nlp.pipe_names if p != "bertram"]), items
    ):
        vectors = doc._.get("bertram") or {}
        words = {doc[i].text.lower() for i in vectors}
        for sub in item["substitutions"]:
            n += 1
            hit += sub["substitute"].lower() in words
    return hit / n if n else 0.0


def checked_systems(
    systems: Sequence[str],
    bertram_path: Optional[PathLike],
    context_store: Optional[PathLike],
    dictionary_store: Optional[PathLike] = None,
) -> List[str]:
    """The systems to run, baseline first; store systems are dropped (with a warning) without a store."""
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(Errors.E322.format(unknown=unknown, SYSTEMS=list(SYSTEMS)))
    chosen = ["baseline", *[s for s in systems if s != "baseline"]]
    needs_bertram = [s for s in chosen if SYSTEMS[s].vectors not in (None, "oracle")]
    if needs_bertram and bertram_path is None:
        raise ValueError(Errors.E323.format(needs_bertram=needs_bertram))
    needs_definitions = [s for s in needs_bertram if SYSTEMS[s].vectors in DEFINITION_KINDS]
    if dictionary_store is None and needs_definitions:
        raise ValueError(Errors.E324.format(systems=needs_definitions))
    if context_store is None:
        dropped = [s for s in needs_bertram if SYSTEMS[s].vectors in GENERAL_STORE_KINDS]
        if dropped:
            warnings.warn(Warnings.W010.format(systems=dropped))
            chosen = [s for s in chosen if s not in dropped]
    return chosen


@dataclass
class SetPredictions:
    """What every system predicted on one set of items."""

    predictions: Dict[str, List[str]]
    p_gold: Dict[str, np.ndarray]
    injected: Dict[str, float]
    coverage: Dict[str, float]


def predict_sets(
    model_dir: PathLike,
    gpu_id: int,
    sets: Dict[str, List[dict]],
    systems: Sequence[str],
    bertram_path: Optional[PathLike],
    context_store: Optional[PathLike],
    max_zipf: float,
    contexts_per_word: int,
    batch_size: int,
    progress: bool,
    dictionary_store: Optional[PathLike] = None,
    int8_encoder: bool = False,
    set_stores: Optional[Dict[str, Path]] = None,
    definitions_per_word: int = DEFAULT_DEFINITIONS_PER_WORD,
) -> Tuple[Dict[str, SetPredictions], Dict[str, float]]:
    """Every system over every set with the trained textcat, loaded once (its labels
    checked against the items'); systems with the same vectors share one component (and
    its vector cache), but those whose contexts depend on the set (`SET_CONTEXTS`) get a
    fresh component per set (`set_stores`: each set's own texts as a store). Returns the
    predictions per set and the seconds per system."""
    use_device(gpu_id)  # spaCy/thinc on the GPU too (a named error for a bad id or a missing CuPy)
    nlp = load_textcat(model_dir, injection="none")
    labels = textcat_labels(nlp)
    check_item_labels([it for items in sets.values() for it in items], labels)
    results = {name: SetPredictions({}, {}, {}, {}) for name in sets}
    seconds: Dict[str, float] = {}
    current: Optional[str] = None  # the vectors of the component now in nlp
    for system in systems:
        t0 = time.time()
        spec = SYSTEMS[system]
        per_set = spec.vectors in PER_SET_KINDS
        if spec.vectors != current or per_set:
            for pipe in ("bertram", ORACLE_FACTORY):
                if pipe in nlp.pipe_names:
                    nlp.remove_pipe(pipe)
            if spec.vectors not in (None, "oracle") and not per_set:
                add_bertram(
                    nlp,
                    bertram_path,
                    spec.vectors,
                    context_store,
                    max_zipf,  # type: ignore[arg-type]
                    contexts_per_word,
                    dictionary_store=dictionary_store,
                    int8_encoder=int8_encoder,
                )
            current = spec.vectors
        set_injection(nlp, spec.injection)
        for name, items in sets.items():
            if spec.vectors == "oracle":
                if ORACLE_FACTORY in nlp.pipe_names:
                    nlp.remove_pipe(ORACLE_FACTORY)
                add_oracle(nlp, items)
            if per_set and spec.vectors != "memory" and "bertram" in nlp.pipe_names:
                # the next set's own store: the component's store setting names the first store its sources read
                # (the in-domain one); its cache keys hold the contexts, so no vector of another set is served
                nlp.get_pipe("bertram").word_sources.context_store = str((set_stores or {})[name])
            elif per_set:  # a fresh component: the first set's store, or an empty memory for every set
                if "bertram" in nlp.pipe_names:
                    nlp.remove_pipe("bertram")
                contexts = set_contexts(
                    str(spec.vectors),
                    (set_stores or {}).get(name),
                    context_store,
                    dictionary_store,
                    definitions_per_word,
                )
                add_bertram(nlp, bertram_path, contexts, context_store, max_zipf, contexts_per_word)  # type: ignore[arg-type]
            if progress:
                logger.info("evaluating %s on %d items%s", system, len(items), f" ({name})" if name else "")
            predicted, probabilities, counts = predict_labels(nlp, [it[spec.text] for it in items], batch_size)
            result = results[name]
            result.predictions[system] = predicted
            result.p_gold[system] = gold_probabilities(items, probabilities, labels)
            result.injected[system] = round(float(np.mean(counts)), 2) if counts else 0.0
            if spec.vectors not in (None, "oracle"):
                result.coverage[system] = substitute_coverage(nlp, items)
        seconds[system] = round(time.time() - t0, 2)
    return results, seconds


def set_contexts(
    kind: str,
    set_store: Optional[Path],
    general_store: Optional[PathLike],
    dictionary_store: Optional[PathLike] = None,
    definitions_per_word: int = DEFAULT_DEFINITIONS_PER_WORD,
) -> Any:
    """The component's `contexts` for a set-dependent system (`PER_SET_KINDS`): the registered
    sources, as a user configures them (docs/configuration.md)."""
    if kind == "memory":
        return "doc+memory"
    if set_store is None:
        raise ValueError(Errors.E377.format(kind=kind))
    own = {"@context_sources": "spacy-bertram.store_contexts.v1", "path": str(set_store)}
    if kind == "indomain":
        return own
    general = {"@context_sources": "spacy-bertram.store_contexts.v1", "path": str(general_store)}
    chain = {"indomain": own, "general": general}
    if kind == DEFINITION_CHAIN:
        if dictionary_store is None:
            raise ValueError(Errors.E324.format(systems=[kind]))
        chain["definitions"] = {
            "@context_sources": "spacy-bertram.dictionary_contexts.v1",
            "path": str(dictionary_store),
            "limit": definitions_per_word,
        }
    return {"@context_sources": "spacy-bertram.chained_contexts.v1", "*": chain}


def build_set_stores(sets: Dict[str, List[dict]], directory: Path, max_contexts: int) -> Dict[str, Path]:
    """Each set's own texts (no labels) as a context store: INDOMAIN as the paper describes it for that set."""
    stores: Dict[str, Path] = {}
    for name, items in sets.items():
        path = directory / f"{name.replace('/', '-') or 'set'}.sqlite"
        add_texts(path, [it["text"] for it in items], max_contexts=max_contexts, lowercase=True, progress=False)
        stores[name] = path
    return stores


def substitute_recurrence(items: Sequence[dict]) -> List[int]:
    """Per item, how many other texts of its set hold one of its substitutes (the most recurring one; a substitute
    of several words counts where a text holds all of them), in the words a store reads (`tokenize`, lowercased):
    the contexts the set's own texts can give a substitute beyond its own text."""
    words_of = [set(tokenize(str(it["text"]), lowercase=True)) for it in items]
    texts_with: Dict[str, set] = {}
    for index, words in enumerate(words_of):
        for word in words:
            texts_with.setdefault(word, set()).add(index)
    counts = []
    for index, it in enumerate(items):
        best = 0
        for substitution in it.get("substitutions", []):
            words = tokenize(str(substitution["substitute"]), lowercase=True)
            if not words:
                continue
            holding = set.intersection(*(texts_with.get(w, set()) for w in words))
            best = max(best, len(holding - {index}))
        counts.append(best)
    return counts


def check_item_labels(items: Sequence[dict], labels: Sequence[str]) -> None:
    for it in items:
        if it["label"] not in labels:
            raise UnknownLabelError(Errors.E325.format(item_id=it["id"], label=it["label"], labels=sorted(labels)))


def evaluate_systems(
    model_dir: PathLike,
    rarified_dir: PathLike,
    output_dir: PathLike,
    bertram_path: Optional[PathLike] = None,
    context_store: Optional[PathLike] = None,
    systems: Sequence[str] = DEFAULT_SYSTEMS,
    max_zipf: float = DEFAULT_MAX_ZIPF,
    contexts_per_word: int = DEFAULT_CONTEXTS_PER_WORD,
    gpu_id: int = -1,
    batch_size: int = 32,
    progress: bool = True,
    seed_sets: bool = True,
    n_resamples: int = DEFAULT_RESAMPLES,
    dictionary_store: Optional[PathLike] = None,
    int8_encoder: bool = False,
    definitions_per_word: int = DEFAULT_DEFINITIONS_PER_WORD,
) -> Dict[str, Any]:
    """Predict the rarified test set with each system; metrics.json, predictions.jsonl, PNG.

    With `seed_sets`, the sets of further rarification seeds that rarify.json lists
    (RARIFIED/seed-N) are evaluated in the same run (one model load, one BERTRAM
    vector cache) into OUTPUT/seed-N. Returns the first set's metrics.
    """
    start = time.time()
    systems = checked_systems(systems, bertram_path, context_store, dictionary_store)
    dirs = listed_sets(rarified_dir, "rarify.json") if seed_sets else {"": Path(rarified_dir)}
    sets = {name: read_test_items(path) for name, path in dirs.items()}
    for items in sets.values():
        for item, other_texts in zip(items, substitute_recurrence(items)):
            item[RECURRENCE_KEY] = other_texts
    with tempfile.TemporaryDirectory(prefix="indomain-") as scratch:
        needs_stores = any(SYSTEMS[s].vectors in SET_STORE_KINDS for s in systems)
        set_stores = build_set_stores(sets, Path(scratch), contexts_per_word) if needs_stores else None
        results, seconds = predict_sets(
            model_dir,
            gpu_id,
            sets,
            systems,
            bertram_path,
            context_store,
            max_zipf,
            contexts_per_word,
            batch_size,
            progress,
            dictionary_store,
            int8_encoder,
            set_stores,
            definitions_per_word,
        )
    out = Path(output_dir)
    settings = {
        "max_zipf": max_zipf,
        "contexts_per_word": contexts_per_word,
        "gpu_id": gpu_id,
        "bertram": str(bertram_path) if bertram_path else None,
        "context_store": str(context_store) if context_store else None,
        "dictionary_store": str(dictionary_store) if dictionary_store else None,
        "definitions_per_word": definitions_per_word if dictionary_store else None,
        "int8_encoder": int8_encoder,
    }
    for name in reversed(list(sets)):  # the first set last: its metrics carry the run's time
        result = results[name]
        extra = {"substitute_coverage": result.coverage, "mean_injected_per_doc": result.injected, **settings}
        if not name:
            extra.update(
                seed_sets=[n for n in sets if n], seconds_per_system=seconds, seconds=round(time.time() - start, 2)
            )
        metrics = write_set_outputs(out / name, sets[name], result.predictions, result.p_gold, extra, n_resamples)
    remove_unlisted(out, [n for n in sets if n], SET_OUTPUTS)
    return metrics


def evaluate_originals(
    model_dir: PathLike,
    splits_dir: PathLike,
    output_dir: PathLike,
    bertram_path: PathLike,
    context_store: Optional[PathLike] = None,
    systems: Sequence[str] = ORIGINAL_TEXT_SYSTEMS,
    max_zipf: float = DEFAULT_MAX_ZIPF,
    contexts_per_word: int = DEFAULT_CONTEXTS_PER_WORD,
    gpu_id: int = -1,
    batch_size: int = 32,
    progress: bool = True,
    n_resamples: int = DEFAULT_RESAMPLES,
) -> Dict[str, Any]:
    """Do no harm: every test candidate's original text (not only those rarification
    kept), the stock textcat against the same textcat with `bertram`; accuracy and
    log p(gold) with paired bootstrap CIs in OUTPUT/metrics.json (+ predictions.jsonl,
    so `pool` can pool datasets)."""
    start = time.time()
    systems = checked_systems(systems, bertram_path, context_store)
    records = read_records(Path(splits_dir) / "test_candidates.jsonl")
    items = [
        {"id": str(r.id), "label": r.label, "text": r.text, "original_text": r.text, "substitutions": []}
        for r in records
        if r.text.strip()
    ]
    if not items:
        raise ValueError(Errors.E326.format(splits_dir=splits_dir))
    results, seconds = predict_sets(
        model_dir,
        gpu_id,
        {"": items},
        systems,
        bertram_path,
        context_store,
        max_zipf,
        contexts_per_word,
        batch_size,
        progress,
    )
    result = results[""]
    extra = {
        "texts": "original test candidates",
        "mean_injected_per_doc": result.injected,
        "max_zipf": max_zipf,
        "contexts_per_word": contexts_per_word,
        "bertram": str(bertram_path),
        "seconds_per_system": seconds,
        "seconds": round(time.time() - start, 2),
    }
    return write_set_outputs(
        Path(output_dir), items, result.predictions, result.p_gold, extra, n_resamples, command="evaluate-originals"
    )


__all__ = [
    "DEFAULT_SYSTEMS",
    "ORIGINAL_TEXT_SYSTEMS",
    "SYSTEMS",
    "System",
    "evaluate_originals",
    "evaluate_systems",
    "predict_labels",
    "read_test_items",
    "substitute_recurrence",
]
