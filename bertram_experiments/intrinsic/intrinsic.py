"""Intrinsic evaluation on real rare words: CRW, Card-660 and the Chimeras.

The project's own yardstick (held-out frequent words cut into rare-like
pieces) is not what real rare words look like; these public sets are. Every
score is Spearman's rho between human judgements and cosines in the base
encoder's *input-embedding* space, where BERTRAM's vectors live. The first
word of a pair is always embedded as the stock encoder sees it (the mean of
its wordpiece input embeddings, `SubwordMean`); only the second, rare word
changes from system to system, so the systems differ only where BERTRAM does.

Systems for CRW (and Card-660 when a context store gives it contexts):
  subword_mean   what the stock encoder sees (the baseline)
  bertram_form   BERTRAM without contexts
  bertram_K      BERTRAM with the first K (4, 16, 32) contexts of the word
  slash_mix      0.5 sm/|sm| + 0.5 v/|v| of the subword mean and bertram_16: a
                 proxy of the slash injection, which feeds both the wordpieces
                 and the BERTRAM vector
  fed            the vector the `bertram` component feeds (see `fed_vectors`)
Card-660 form only: subword_mean, bertram_form, slash_mix_form (the mix with
bertram_form). Chimeras (the nonce has no spelling): context_mean (the mean
input embedding of the passage's wordpieces without the nonce, the baseline)
and bertram_contexts (BERTRAM on all sentences, `use_form=False`); the score
is the mean over items of Spearman(ratings, cosine(nonce, probe's subword mean)).

With a definition store, CRW and Card-660 also get bertram_dict, bertram_both and
the subset `with_definitions` (`definition_contexts.py`); with `fold` ("0/2") only
one fold of the rare words is scored (`rare_word_folds.py`).

Every system other than the baseline gets a paired bootstrap 95% CI of its
difference to the baseline (`bootstrap.paired_difference`), overall and for the
pairs whose rare word the encoder splits into 2+ wordpieces (`multi_piece`):
for a one-piece word the subword mean *is* the encoder's trained embedding; and
for the pairs the component's rare-word rule would pick at each candidate
`max_zipf` (`rule_zipf<T`), which is how the default threshold is chosen.
Every BERTRAM system with contexts also gets the CI of its difference to
bertram_form (`vs_form`): what the contexts add to the spelling.

Each set also keeps its item rows (`items`: every pair's cosines, every Chimera's rhos), so that
`compare-runs` can put two models side by side on the same items.
"""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ..errors import Errors, Warnings
from spacy_bertram import DEFAULT_CONFIG, DocContexts, load_bertram
from spacy_bertram.project_support import PathLike, mark_json, select_device, word_key_function, write_json_atomic
from ..bootstrap import paired_difference
from . import definition_contexts as D
from ..rare_word_folds import parse_fold, select_fold
from ..tables import format_ci, markdown_table
from .rare_sets import NONCE, CardSet, ChimeraItem, CrwSet, read_card, read_chimeras, read_crw
from .similarity import Pair, SubwordMean, cosine_rows, evaluate_similarity, spearman_rho
from .similarity_eval import load_contexts
from ..rarification.substitution import substitute_rarity

logger = logging.getLogger(__name__)
Tables = Dict[str, Dict[str, np.ndarray]]  # system -> word -> vector

BASELINE = "subword_mean"
CHIMERA_BASELINE = "context_mean"
WEIGHTED_CONTEXT_MEAN = "context_mean_weighted"
CONTEXT_COUNTS = (4, 16, 32)
MIX_CONTEXTS = 16
MIN_CELL = 3  # pairs (items) below which a subset gets its n only
CONFIDENCE = 0.95
ASSETS_COMMAND = "python -m spacy project assets --extra"
SET_NAMES = {"crw": "CRW", "card": "Card-660", "chimera": "Chimeras"}
#: Written into the metrics, so the JSON explains its own rows.
SYSTEMS = {
    "subword_mean": "mean input embedding of the rare word's wordpieces: what the stock encoder sees (baseline)",
    "bertram_form": "BERTRAM without contexts",
    **{f"bertram_{k}": f"BERTRAM with the first {k} contexts of the word" for k in CONTEXT_COUNTS},
    "slash_mix": f"0.5 sm/|sm| + 0.5 v/|v| of subword_mean and bertram_{MIX_CONTEXTS} (slash injection proxy)",
    "slash_mix_form": "0.5 sm/|sm| + 0.5 v/|v| of subword_mean and bertram_form",
    "fed": "the vector the bertram component feeds: infer() with its default contexts_per_word, unchanged",
    "fed_window": "fed, each context cut to context_window tokens on each side of the word (the component's doc "
    "contexts rule)",
    "context_mean": "Chimeras baseline: mean input embedding of the passage's wordpieces, nonce left out",
    WEIGHTED_CONTEXT_MEAN: "Chimeras: context_mean with each wordpiece weighted as the network weighs it "
    "(context_mean_smoothing over the model's counts); absent where the network takes the plain mean",
    "bertram_contexts": "Chimeras: BERTRAM on all sentences of the passage, contexts only (use_form=False)",
    **D.SYSTEMS,
}
FORM = "bertram_form"


# -- the systems -----------------------------------------------------------------------


def normalised_mix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise 0.5 a/|a| + 0.5 b/|b| (a zero row contributes zero)."""

    def unit(x: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(x, axis=1, keepdims=True)
        return np.divide(x, norm, out=np.zeros_like(x, dtype=float), where=norm > 0)

    return 0.5 * unit(np.asarray(a, dtype=float)) + 0.5 * unit(np.asarray(b, dtype=float))


def fed_vectors(network, words: Sequence[str], contexts: Mapping[str, List[str]]) -> np.ndarray:
    """What the `bertram` component feeds the transformer for each word.

    The component (component.py) passes the network's output unchanged into
    `doc._.bertram` (it only checks shape and finiteness), and the injection
    (injection/) puts that vector unchanged into the embedding output. So
    `fed` is the `infer` output for the word form the component uses (its
    `word_key_function`) with the component's default number of contexts, the
    first ones of the word's list, as for contexts from a store.
    """
    limit = fed_contexts_per_word()
    key = word_key_function(network)
    return network.infer([(key(w), list(contexts.get(w, []))[:limit]) for w in words])


def fed_contexts_per_word() -> int:
    """The `bertram` component's default contexts_per_word (its factory config)."""
    return int(DEFAULT_CONFIG["bertram"]["contexts_per_word"])


def fed_context_window() -> int:
    """The `bertram` component's default context_window (its factory config)."""
    return int(DEFAULT_CONFIG["bertram"]["context_window"])


def windowed_contexts(contexts: Mapping[str, List[str]], window: int, lang: str = "en") -> Dict[str, List[str]]:
    """Each context cut as the component cuts a doc without sentences (`DocContexts`): `window` tokens on each
    side of the word's first occurrence; a context without the word (as a token) stays whole."""
    import spacy

    make_doc = spacy.blank(lang).make_doc
    cut = DocContexts(window)
    out: Dict[str, List[str]] = {}
    for word, texts in contexts.items():
        out[word] = []
        for text in texts:
            doc = make_doc(text)
            at = next((t.i for t in doc if t.lower_ == word.lower()), None)
            out[word].append(text if at is None else cut(doc, word, [at], 1)[0])
    return out


def rare_word_tables(
    network,
    subword: SubwordMean,
    words: Sequence[str],
    contexts: Optional[Mapping[str, List[str]]],
    form_mix: bool = False,
    definitions: Optional[Mapping[str, List[str]]] = None,
    context_window: Optional[int] = None,
) -> Tables:
    """Vectors of every system for the rare words: one `infer` call per system.

    subword_mean and bertram_form always; the context systems with `contexts`;
    slash_mix_form (the mix with bertram_form) with `form_mix`; fed_window with `context_window`.
    """
    words = list(words)
    timed: Dict[str, np.ndarray] = {}

    def run(name: str, make: Callable[[], np.ndarray]) -> None:
        started = time.perf_counter()
        timed[name] = np.asarray(make(), dtype=float)
        logger.info("%s: %d words in %.1f s", name, len(words), time.perf_counter() - started)

    run(BASELINE, lambda: subword([(w, []) for w in words]))
    run("bertram_form", lambda: network.infer([(w, []) for w in words]))
    if form_mix:
        timed["slash_mix_form"] = normalised_mix(timed[BASELINE], timed["bertram_form"])
    if contexts is not None:
        for k in CONTEXT_COUNTS:
            run(f"bertram_{k}", lambda k=k: network.infer([(w, list(contexts.get(w, []))[:k]) for w in words]))
        timed["slash_mix"] = normalised_mix(timed[BASELINE], timed[f"bertram_{MIX_CONTEXTS}"])
        run("fed", lambda: fed_vectors(network, words, contexts))
        if context_window is not None:
            run("fed_window", lambda: fed_vectors(network, words, windowed_contexts(contexts, context_window)))
    if definitions is not None:
        D.definition_systems(network, words, definitions, contexts, run)
    return {name: dict(zip(words, array)) for name, array in timed.items()}


def chimera_vectors(network, subword: SubwordMean, items: Sequence[ChimeraItem]) -> Dict[str, np.ndarray]:
    """Nonce vectors per item: the context-word mean, the same weighted as the network weighs it (where
    it does), and BERTRAM on the contexts alone."""
    pieces = [subword.piece_ids(item.context_text) for item in items]
    vectors = {CHIMERA_BASELINE: np.stack([subword.embeddings[ids].mean(axis=0) for ids in pieces])}
    weights = network.context_piece_weights()
    if weights is not None:
        w = weights.detach().cpu().numpy().astype(float)
        vectors[WEIGHTED_CONTEXT_MEAN] = np.stack(
            [(subword.embeddings[ids] * w[ids, None]).sum(axis=0) / w[ids].sum() for ids in pieces]
        )
    started = time.perf_counter()
    bertram = network.infer([(NONCE, item.sentences) for item in items], use_form=False)
    logger.info("bertram_contexts: %d chimeras in %.1f s", len(items), time.perf_counter() - started)
    vectors["bertram_contexts"] = np.asarray(bertram, dtype=float)
    return vectors


# -- scoring ---------------------------------------------------------------------------


def rho_of_columns(rows: np.ndarray) -> float:
    return spearman_rho(rows[:, 0], rows[:, 1])


def mean_defined(values: np.ndarray) -> float:
    kept = values[~np.isnan(values)]
    return float(kept.mean()) if kept.size else float("nan")


def _lookup(table: Mapping[str, np.ndarray]) -> Callable[[List], np.ndarray]:
    return lambda batch: np.stack([table[word] for word, _ in batch])


def pair_cosines(pairs: Sequence[Pair], tables: Tables, subword: SubwordMean) -> Dict[str, np.ndarray]:
    """Per-pair cosine(first word's subword mean, rare word's vector) of each system."""
    return {
        name: np.asarray(evaluate_similarity(pairs, _lookup(table), word_vectors=subword).cosines)
        for name, table in tables.items()
    }


def score_cells(
    per_item: Mapping[str, np.ndarray],
    baseline: str,
    subsets: Mapping[str, Sequence[int]],
    statistic: Callable[[np.ndarray], float],
    count: Callable[[np.ndarray], int],
    n_resamples: int,
    seed: int,
) -> Dict[str, Any]:
    """subset -> {n, systems: {name: {spearman, n, difference: CI vs baseline}}}."""
    cells: Dict[str, Any] = {}
    for subset, indices in subsets.items():
        idx = np.asarray(indices, dtype=int)
        cell: Dict[str, Any] = {"n": int(len(idx)), "systems": {}}
        if len(idx) < MIN_CELL:
            cell["note"] = f"fewer than {MIN_CELL} items: not scored"
            cells[subset] = cell
            continue
        base = per_item[baseline][idx]
        for name, data in per_item.items():
            rows = data[idx]
            entry: Dict[str, Any] = {"spearman": statistic(rows), "n": count(rows)}
            if name != baseline:
                ci = paired_difference(statistic, rows, base, n_resamples=n_resamples, seed=seed, confidence=CONFIDENCE)
                entry["difference"] = ci.to_dict()
            if (name.startswith("bertram_") or name.startswith("fed")) and name != FORM and FORM in per_item:
                entry["vs_form"] = paired_difference(
                    statistic, rows, per_item[FORM][idx], n_resamples=n_resamples, seed=seed, confidence=CONFIDENCE
                ).to_dict()
            if name == "fed_window" and "fed" in per_item:
                entry["vs_fed"] = paired_difference(
                    statistic, rows, per_item["fed"][idx], n_resamples=n_resamples, seed=seed, confidence=CONFIDENCE
                ).to_dict()
            cell["systems"][name] = entry
        cells[subset] = cell
    return cells


def score_pairs(
    pairs: Sequence[Pair],
    cosines: Mapping[str, np.ndarray],
    subsets: Mapping[str, Sequence[int]],
    n_resamples: int,
    seed: int,
) -> Dict[str, Any]:
    """Spearman per system and subset; the bootstrap resamples pairs."""
    human = np.asarray([p[2] for p in pairs], dtype=float)
    per_item = {name: np.column_stack([human, cos]) for name, cos in cosines.items()}
    return score_cells(per_item, BASELINE, subsets, rho_of_columns, len, n_resamples, seed)


def pair_rows(pairs: Sequence[Pair], cosines: Mapping[str, np.ndarray]) -> List[Dict[str, Any]]:
    """One row per pair with every system's cosine, so that two models can be compared pair by pair
    (`compare-runs`); `occurrence` tells repeated pairs apart."""
    seen: Dict[tuple, int] = {}
    rows = []
    for i, (first, rare, human) in enumerate(pairs):
        occurrence = seen.get((first, rare), 0)
        seen[(first, rare)] = occurrence + 1
        rows.append(
            {
                "word": first,
                "rare": rare,
                "occurrence": occurrence,
                "human": float(human),
                "cosine": {name: float(values[i]) for name, values in cosines.items()},
            }
        )
    return rows


def chimera_rows(
    items: Sequence[ChimeraItem], files: Sequence[str], rhos: Mapping[str, np.ndarray]
) -> List[Dict[str, Any]]:
    """One row per Chimera item with every system's rho (None where undefined), for `compare-runs`."""
    return [
        {
            "file": file,
            "item": item.item_id,
            "rho": {name: (None if np.isnan(values[i]) else float(values[i])) for name, values in rhos.items()},
        }
        for i, (item, file) in enumerate(zip(items, files))
    ]


def item_key(set_name: str, row: Mapping[str, Any]) -> tuple:
    """What aligns the item rows of two runs (`pair_rows`, `chimera_rows`): a pair by its words and
    occurrence, a Chimera by its file and item id."""
    if set_name == "chimera":
        return (row["file"], row["item"])
    return (row["word"], row["rare"], row["occurrence"])


def item_systems(set_name: str, rows: Sequence[Mapping[str, Any]]) -> List[str]:
    """The systems every one of `rows` scored."""
    field = "rho" if set_name == "chimera" else "cosine"
    return [s for s in rows[0][field] if all(s in row[field] for row in rows)] if rows else []


def item_statistic(
    set_name: str, rows: Sequence[Mapping[str, Any]], system: str
) -> Tuple[Callable[[np.ndarray], float], np.ndarray]:
    """The set's score of `system` over item rows, as `score_cells` computes it: the statistic and the
    array it reads ((human, cosine) per pair for Spearman's rho; the item's rho, NaN where undefined)."""
    if set_name == "chimera":
        return mean_defined, np.asarray(
            [np.nan if r["rho"][system] is None else r["rho"][system] for r in rows], dtype=float
        )
    return rho_of_columns, np.asarray([[r["human"], r["cosine"][system]] for r in rows], dtype=float)


def chimera_item_rhos(items: Sequence[ChimeraItem], nonce_vectors: np.ndarray, subword: SubwordMean) -> np.ndarray:
    """Spearman(ratings, cosine(nonce, probe's subword mean)) per item (NaN where undefined)."""
    probes = sorted({p for item in items for p in item.probes})
    table = dict(zip(probes, subword([(p, []) for p in probes])))
    rhos = np.empty(len(items), dtype=float)
    for i, (item, vector) in enumerate(zip(items, nonce_vectors)):
        probe_vectors = np.stack([table[p] for p in item.probes])
        cos = cosine_rows(np.repeat(vector[None, :], len(item.probes), axis=0), probe_vectors)
        rhos[i] = spearman_rho(item.ratings, cos)
    return rhos


def multi_piece_indices(pairs: Sequence[Pair], subword: SubwordMean) -> List[int]:
    return [i for i, p in enumerate(pairs) if subword.is_multi_piece(p[1])]


#: The rare-word rule's candidate thresholds, scored as subsets: the pairs whose rare
#: word the component would pick at each max_zipf (2+ wordpieces, wordfreq Zipf below it).
RULE_THRESHOLDS = (2.5, 3.0, 3.5)


def rule_subsets(pairs: Sequence[Pair], subword: SubwordMean, lang: str = "en") -> Dict[str, List[int]]:
    """`rule_zipf<T`: the pairs whose rare word the component's rule picks at max_zipf T (its own
    `RareWordFinder`, as rarification builds it); `multi_piece_zipf>=3.5`: multi-piece words at or
    above the highest threshold (where the subword mean may already be good)."""
    finders = {t: substitute_rarity(max_zipf=t, word_pieces=subword.piece_ids, lang=lang) for t in RULE_THRESHOLDS}
    subsets = {
        f"rule_zipf<{t}": [i for i, pair in enumerate(pairs) if finder.is_rare_word(pair[1])]
        for t, finder in finders.items()
    }
    highest = finders[RULE_THRESHOLDS[-1]]
    subsets[f"multi_piece_zipf>={RULE_THRESHOLDS[-1]}"] = [
        i for i in multi_piece_indices(pairs, subword) if not highest.is_rare_word(pairs[i][1])
    ]
    return subsets


# -- one set each ----------------------------------------------------------------------


def evaluate_crw(
    network,
    subword: SubwordMean,
    data: CrwSet,
    n_resamples: int,
    seed: int,
    definitions: Optional[Mapping[str, List[str]]] = None,
    context_window: Optional[int] = None,
) -> Dict[str, Any]:
    words = data.rare_words
    without = [w for w in words if not data.contexts.get(w)]
    if without:
        warnings.warn(Warnings.W008.format(what="CRW", n=len(without), total=len(words), words=", ".join(without[:10])))
    tables = rare_word_tables(
        network, subword, words, data.contexts, definitions=definitions, context_window=context_window
    )
    subsets = {
        "all": range(len(data.pairs)),
        "multi_piece": multi_piece_indices(data.pairs, subword),
        **rule_subsets(data.pairs, subword),
    }
    if definitions is not None:
        subsets["with_definitions"] = D.with_definitions(data.pairs, definitions)
    return {
        "definitions": None if definitions is None else D.coverage(definitions, words),
        "path": str(data.path),
        "pairs": len(data.pairs),
        "rare_words": len(words),
        "rare_words_without_contexts": len(without),
        "rare_words_with_32_contexts": sum(len(data.contexts.get(w, [])) >= 32 for w in words),
        "baseline": BASELINE,
        **_scored_pairs(data.pairs, tables, subword, subsets, n_resamples, seed),
    }


def _scored_pairs(
    pairs: Sequence[Pair],
    tables: Tables,
    subword: SubwordMean,
    subsets: Mapping[str, Sequence[int]],
    n_resamples: int,
    seed: int,
) -> Dict[str, Any]:
    cosines = pair_cosines(pairs, tables, subword)
    return {"subsets": score_pairs(pairs, cosines, subsets, n_resamples, seed), "items": pair_rows(pairs, cosines)}


def evaluate_card(
    network,
    subword: SubwordMean,
    data: CardSet,
    contexts: Optional[Mapping[str, List[str]]],
    n_resamples: int,
    seed: int,
    definitions: Optional[Mapping[str, List[str]]] = None,
) -> Dict[str, Any]:
    """Form only; with store contexts also the context systems (words without any get their form)."""
    words = sorted({rare for _, rare, _ in data.pairs})
    tables = rare_word_tables(network, subword, words, contexts, form_mix=True, definitions=definitions)
    subsets: Dict[str, Sequence[int]] = {
        "all": range(len(data.pairs)),
        "multi_piece": multi_piece_indices(data.pairs, subword),
        **rule_subsets(data.pairs, subword),
    }
    if contexts is not None:
        subsets["with_contexts"] = [i for i, p in enumerate(data.pairs) if contexts.get(p[1])]
    if definitions is not None:
        subsets["with_definitions"] = D.with_definitions(data.pairs, definitions)
    return {
        "definitions": None if definitions is None else D.coverage(definitions, words),
        "path": str(data.path),
        "pairs_read": len(data.pairs) + sum(data.dropped.values()),
        "pairs": len(data.pairs),
        "dropped": data.dropped,
        "dropped_examples": data.dropped_examples,
        "kept": "pairs of two single alphabetic words (no underscores, digits, hyphens or other symbols)",
        "rare_words": len(words),
        "rare_words_with_contexts": None if contexts is None else sum(bool(contexts.get(w)) for w in words),
        "baseline": BASELINE,
        **_scored_pairs(data.pairs, tables, subword, subsets, n_resamples, seed),
    }


def evaluate_chimeras(
    network, subword: SubwordMean, files: Mapping[str, List[ChimeraItem]], n_resamples: int, seed: int
) -> Dict[str, Any]:
    """Per file (and pooled over files): mean per-item rho; the bootstrap resamples items."""
    items = [item for file_items in files.values() for item in file_items]
    item_files = [name for name, file_items in files.items() for _ in file_items]
    vectors = chimera_vectors(network, subword, items)
    per_item = {name: chimera_item_rhos(items, array, subword) for name, array in vectors.items()}
    subsets: Dict[str, Sequence[int]] = {}
    start = 0
    for name, file_items in files.items():
        subsets[name] = range(start, start + len(file_items))
        start += len(file_items)
    if len(files) > 1:
        subsets["all"] = range(len(items))
    return {
        "files": {name: len(file_items) for name, file_items in files.items()},
        "nonce": NONCE,
        "baseline": CHIMERA_BASELINE,
        "score": "mean over items of Spearman(ratings, cosine(nonce vector, probe's subword mean)); "
        "n counts the items where rho is defined",
        "subsets": score_cells(
            per_item,
            CHIMERA_BASELINE,
            subsets,
            mean_defined,
            lambda rows: int(np.count_nonzero(~np.isnan(rows))),
            n_resamples,
            seed,
        ),
        "items": chimera_rows(items, item_files, per_item),
    }


# -- the command -----------------------------------------------------------------------


def missing_message(missing: Mapping[str, str]) -> str:
    names = ", ".join(f"{SET_NAMES[k]} ({v})" for k, v in missing.items())
    return f"intrinsic: not downloaded, skipped: {names}; get them with `{ASSETS_COMMAND}` (needs internet)."


def evaluate_intrinsic(
    model_path: PathLike,
    crw: Optional[PathLike] = None,
    card: Optional[PathLike] = None,
    chimera: Optional[PathLike] = None,
    store: Optional[PathLike] = None,
    output: Optional[PathLike] = None,
    n_resamples: int = 2000,
    seed: int = 0,
    gpu_id: int = -1,
    skip_missing: bool = False,
    dictionary: Optional[PathLike] = None,
    fold: Optional[str] = None,
    context_window: Optional[int] = None,
) -> Dict[str, Any]:
    """Score the given sets; `skip_missing` records absent ones instead of failing; `context_window` adds
    fed_window for CRW.

    All inputs are read before the model is loaded, so a bad file fails fast.
    With `skip_missing` and none of the sets present, nothing is loaded: the
    metrics say which sets were missing and how to get them.
    """
    started = time.perf_counter()
    given = {name: Path(p) for name, p in (("crw", crw), ("card", card), ("chimera", chimera)) if p is not None}
    if not given:
        raise ValueError(Errors.E328)
    if n_resamples < 1:
        raise ValueError(Errors.E329.format(n_resamples=n_resamples))
    fold_of = parse_fold(fold) if fold is not None else None
    missing = {name: str(p) for name, p in given.items() if not p.exists()}
    if missing and not skip_missing:
        name, path = next(iter(missing.items()))
        raise FileNotFoundError(Errors.E330.format(SET_NAMES=SET_NAMES[name], path=path))
    present = {name: p for name, p in given.items() if name not in missing}
    metrics: Dict[str, Any] = {
        "model": str(model_path),
        "bootstrap": n_resamples,
        "seed": seed,
        "confidence": CONFIDENCE,
        "missing": missing,
        "sets": {},
        "fold": fold,
        "dictionary": None if dictionary is None else str(dictionary),
        "context_window": context_window,
    }
    if missing:
        metrics["message"] = missing_message(missing)
    if present:
        crw_data = read_crw(present["crw"]) if "crw" in present else None
        card_data = read_card(present["card"]) if "card" in present else None
        chimera_files = read_chimeras(present["chimera"]) if "chimera" in present else None
        if fold_of is not None:
            crw_data, card_data, chimera_files = select_fold(fold_of, crw_data, card_data, chimera_files)
        crw_definitions, card_definitions = D.set_definitions(dictionary, crw_data, card_data)
        card_contexts = None
        if card_data is not None and store is not None:
            words = sorted({rare for _, rare, _ in card_data.pairs})
            card_contexts = load_contexts(store, words, max(CONTEXT_COUNTS))
        network, subword = _load(model_path, gpu_id)
        sets = metrics["sets"]
        if crw_data is not None:
            sets["crw"] = evaluate_crw(network, subword, crw_data, n_resamples, seed, crw_definitions, context_window)
        if card_data is not None:
            sets["card"] = evaluate_card(
                network, subword, card_data, card_contexts, n_resamples, seed, card_definitions
            )
            sets["card"]["store"] = None if store is None else str(store)
        if chimera_files is not None:
            sets["chimera"] = evaluate_chimeras(network, subword, chimera_files, n_resamples, seed)
            sets["chimera"]["path"] = str(present["chimera"])
        metrics.update(
            {
                "systems": SYSTEMS,
                "base_model": network.config.base_model,
                "mode": network.config.mode,
                "model_max_contexts": network.config.max_contexts,
                "fed_contexts_per_word": fed_contexts_per_word(),
            }
        )
    metrics["seconds"] = round(time.perf_counter() - started, 2)
    if output is not None:
        write_json_atomic(Path(output), mark_json(metrics, "intrinsic"), overwrite=True)
    return metrics


def _load(model_path: PathLike, gpu_id: int):
    network = load_bertram(model_path)
    if gpu_id >= 0:
        network.to(select_device(gpu_id))
    if network.config.max_contexts < max(CONTEXT_COUNTS):
        warnings.warn(Warnings.W009.format(max_contexts=network.config.max_contexts))
    return network, SubwordMean.from_model(network.encoder, network.inputs.tokenizer)


# -- the table ------------------------------------------------------------------------------------


def _set_header(key: str, data: Mapping[str, Any]) -> str:
    coverage = data.get("definitions")
    covered = (
        ""
        if not coverage
        else f"; dictionary entries for {coverage['with_definitions']} of {coverage['rare_words']} rare words"
    )
    return _set_detail(key, data) + covered


def _set_detail(key: str, data: Mapping[str, Any]) -> str:
    if key == "crw":
        detail = (
            f"{data['pairs']} pairs, {data['rare_words']} rare words "
            f"({data['rare_words_without_contexts']} without contexts)"
        )
    elif key == "card":
        dropped = ", ".join(f"{n} {why}" for why, n in data["dropped"].items()) or "none"
        contexts = (
            "form only"
            if data["rare_words_with_contexts"] is None
            else f"store contexts for {data['rare_words_with_contexts']} of {data['rare_words']} words"
        )
        detail = f"{data['pairs']} of {data['pairs_read']} pairs kept (dropped: {dropped}); {contexts}"
    else:
        files = ", ".join(f"{name} {n}" for name, n in data["files"].items())
        detail = f"items: {files}; nonce written {data['nonce']!r}; rho = mean over items"
    return f"{SET_NAMES[key]} ({data['path']}): {detail}"


def _verdict(difference: Mapping[str, Any]) -> str:
    if difference["no_difference"]:
        return "no difference"
    return "higher" if difference["low"] > 0 else "lower"


def _difference(diff: Optional[Mapping[str, Any]]) -> List[str]:
    return ["", ""] if diff is None else [format_ci(diff, 1, 3), _verdict(diff)]


def format_table(metrics: Mapping[str, Any]) -> str:
    """Spearman per set, subset and system; each difference to the baseline with its CI (markdown)."""
    lines: List[str] = []
    for key, data in metrics["sets"].items():
        lines += [_set_header(key, data), ""]
        rows = []
        for subset, cell in data["subsets"].items():
            if not cell["systems"]:
                rows.append([subset, "-", cell["n"], cell.get("note", ""), "", "", "", ""])
            for name, entry in cell["systems"].items():
                rows.append(
                    [
                        subset,
                        name,
                        entry["n"],
                        f"{entry['spearman']:.3f}",
                        *_difference(entry.get("difference")),
                        *_difference(entry.get("vs_form")),
                    ]
                )
        header = (
            "subset",
            "system",
            "n",
            "rho",
            f"diff: system - {data['baseline']} [95% CI]",
            "",
            "diff: system - bertram_form [95% CI]",
            "",
        )
        lines += [*markdown_table(header, rows, text_columns=2), ""]
        windowed = [
            (subset, cell["systems"]["fed_window"]["vs_fed"])
            for subset, cell in data["subsets"].items()
            if "vs_fed" in cell["systems"].get("fed_window", {})
        ]
        if windowed:
            lines += [
                f"fed_window - fed (contexts cut to {metrics.get('context_window')} tokens on each side), "
                + "; ".join(f"{subset}: {format_ci(diff, 1, 3)} {_verdict(diff)}" for subset, diff in windowed),
                "",
            ]
    if metrics["sets"]:
        lines.append(
            f"95% CIs: paired bootstrap, {metrics.get('bootstrap')} resamples of pairs (Chimeras: items), "
            f"seed {metrics.get('seed')}; 'no difference' where the CI contains 0."
            + (f" Fold {metrics['fold']} of the rare words." if metrics.get("fold") else "")
        )
    cap = metrics.get("model_max_contexts")
    capped = [f"bertram_{k}" for k in CONTEXT_COUNTS if cap is not None and k > cap]
    if capped:
        lines.append(
            f"The model reads at most {cap} contexts per word (its max_contexts): {', '.join(capped)} used {cap}."
        )
    if metrics.get("message"):
        lines.append(metrics["message"])
    return "\n".join(lines).rstrip() + "\n"
