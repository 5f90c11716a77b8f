"""Synonym recovery's systems and its run: the vector each system gives a rare word, scored by `synonym_recovery`.

Systems, all in the encoder's input-embedding space:
  subword_mean        the mean input embedding of S's wordpieces: what the stock encoder sees (baseline)
  bertram_form        BERTRAM on S's form alone
  bertram_text        BERTRAM with the rarified text S appears in, as the `bertram` component takes
                      it from a doc (its "doc" contexts: the sentence, or the window around S)
  bertram_text_store  the text, then the context store's contexts (the component's "doc+store")
  bertram_store       the context store's contexts alone (the component's "store"); for WordNet
                      pairs, which have no text, the only system with contexts
The text systems score the rarified pairs, the store systems need `store`. Contexts,
their number (the component's default contexts_per_word) and the word form BERTRAM
reads (`word_key_function`) are the component's own (`WordSources`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import spacy
from spacy.tokens import Doc

from ..errors import Errors
from spacy_bertram import CountTable, RareWordRule, load_bertram
from spacy_bertram.project_support import (
    DEFAULT_MAX_ZIPF,
    PathLike,
    WordSources,
    is_alphabetic,
    load_wordnet,
    mark_json,
    select_device,
    word_key_function,
    word_start_tokens,
    write_json_atomic,
)
from ..rare_word_folds import parse_fold
from ..intrinsic.intrinsic import fed_context_window, fed_contexts_per_word
from ..intrinsic.similarity import SubwordMean
from .pairs import SOURCES, SynonymPair, distinct_pairs, read_substitutions, sample_pairs, select_fold, wordnet_pairs
from .recovery import BASELINE, HITS_AT, CONFIDENCE, compare, score, unit_rows

logger = logging.getLogger(__name__)

#: Written into the metrics, so the JSON explains its own rows.
SYSTEMS = {
    "subword_mean": "mean input embedding of the rare word's wordpieces: what the stock encoder sees (baseline)",
    "bertram_form": "BERTRAM on the rare word's form alone",
    "bertram_text": "BERTRAM with the rarified text the word appears in (the component's doc contexts)",
    "bertram_text_store": "BERTRAM with the text, then the context store's contexts (the component's doc+store)",
    "bertram_store": "BERTRAM with the context store's contexts alone (the component's store contexts)",
}
#: The component's `contexts` setting of each BERTRAM system with contexts.
CONTEXT_SETTINGS = {"bertram_text": "doc", "bertram_text_store": "doc+store", "bertram_store": "store"}
DEFAULT_MAX_PAIRS = 2000


def context_sources(
    rule: RareWordRule, lang: str, store: Optional[PathLike], context_window: int
) -> Dict[str, WordSources]:
    """The component's context gathering for each BERTRAM system with contexts (store ones only with
    `store`, which is opened here, so that a bad store fails before the model loads), the text read in
    windows of `context_window` tokens on each side of the word."""
    sources = {}
    for system, setting in CONTEXT_SETTINGS.items():
        if "store" in setting and store is None:
            continue
        sources[system] = WordSources(
            rule,
            lang,
            contexts=setting,
            context_store=None if store is None else str(store),
            contexts_per_word=fed_contexts_per_word(),
            context_window=context_window,
        )
        sources[system].open_stores()
    return sources


def applies(system: str, pair: SynonymPair) -> bool:
    """The text systems score only pairs with a text (the rarified ones)."""
    return pair.text is not None or not system.startswith("bertram_text")


def locate(doc: Doc, index: Optional[int], word: str) -> Optional[int]:
    """The token of `doc` that is `word`: at `index` where the tokenization agrees, else its first occurrence."""
    if index is not None and index < len(doc) and doc[index].text == word:
        return index
    return next((token.i for token in doc if token.text == word), None)


def bertram_items(
    pairs: Sequence[SynonymPair], sources: Mapping[str, WordSources], make_doc, key
) -> Dict[str, List[Tuple[int, str, List[str]]]]:
    """system -> (pair index, word form, contexts) for every pair the system scores."""
    items: Dict[str, List[Tuple[int, str, List[str]]]] = {"bertram_form": []}
    items.update({system: [] for system in sources})
    for i, pair in enumerate(pairs):
        word = key(pair.substitute)
        items["bertram_form"].append((i, word, []))
        doc = make_doc(pair.text if pair.text is not None else pair.substitute)
        position = locate(doc, pair.index if pair.text is not None else 0, pair.substitute)
        for system, source in sources.items():
            if applies(system, pair):
                items[system].append((i, word, source.contexts_for(doc, word, [] if position is None else [position])))
    return items


def system_vectors(
    network, subword: SubwordMean, pairs: Sequence[SynonymPair], sources: Mapping[str, WordSources], make_doc, key
) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    """system -> (indices of the pairs it scores, their vectors); one `infer` call for every distinct
    (word, contexts) of all systems (a word without store contexts gets its form vector once)."""
    out = {BASELINE: (np.arange(len(pairs)), subword([(p.substitute, []) for p in pairs]))}
    items = bertram_items(pairs, sources, make_doc, key)
    distinct = {(word, tuple(contexts)): None for rows in items.values() for _, word, contexts in rows}
    started = time.perf_counter()
    inferred = network.infer([(word, list(contexts)) for word, contexts in distinct])
    logger.info("BERTRAM: %d distinct (word, contexts) in %.1f s", len(distinct), time.perf_counter() - started)
    row_of = {item: k for k, item in enumerate(distinct)}
    for system, rows in items.items():
        if not rows:  # e.g. the text systems when every pair is a WordNet pair (no text)
            continue
        indices = np.asarray([i for i, _, _ in rows], dtype=int)
        out[system] = (indices, inferred[[row_of[(word, tuple(c))] for _, word, c in rows]])
    return out


def whole_word_ids(tokenizer, pieces) -> List[int]:
    """The whole-word tokens (the plugin's `word_start_tokens`) that are alphabetic words the encoder
    spells with exactly this one piece."""
    return sorted(
        i for i, word in word_start_tokens(tokenizer).items() if is_alphabetic(word) and list(pieces(word)) == [i]
    )


def pair_scores(
    pairs: Sequence[SynonymPair], vectors: Mapping[str, Tuple[np.ndarray, np.ndarray]], subword: SubwordMean, finder
) -> Tuple[Dict[str, Tuple[np.ndarray, np.ndarray]], int]:
    """system -> (cosine, rank) per pair (NaN / 0 where it does not score the pair), and the vocabulary size."""
    targets = [finder.word_pieces(p.original)[0] for p in pairs]
    ids = sorted(set(whole_word_ids(subword.tokenizer, finder.word_pieces)) | set(targets))
    column = {i: c for c, i in enumerate(ids)}
    vocabulary = unit_rows(subword.embeddings[ids])
    target_columns = np.asarray([column[t] for t in targets])
    excluded = [[column[i] for i in subword.piece_ids(p.substitute) if i in column] for p in pairs]
    out = {}
    for system, (indices, rows) in vectors.items():
        cosine, rank = np.full(len(pairs), np.nan), np.zeros(len(pairs), dtype=int)
        if len(indices):
            cosine[indices], rank[indices] = score(
                rows, vocabulary, target_columns[indices], [excluded[i] for i in indices]
            )
        out[system] = (cosine, rank)
    return out, len(ids)


def score_subsets(
    pairs: Sequence[SynonymPair],
    scores: Mapping[str, Tuple[np.ndarray, np.ndarray]],
    vectors: Mapping[str, Tuple[np.ndarray, np.ndarray]],
    key,
    n_resamples: int,
    seed: int,
) -> Dict[str, Any]:
    """Per pair source: n, original words (the bootstrap's clusters) and every system that scores all its pairs."""
    subsets: Dict[str, Any] = {}
    for source in SOURCES:
        idx = np.asarray([i for i, p in enumerate(pairs) if p.source == source], dtype=int)
        if not len(idx):
            continue
        clusters = [key(pairs[i].original) for i in idx]
        systems = [s for s, (indices, _) in vectors.items() if np.isin(idx, indices).all()]
        subsets[source] = {
            "n": int(len(idx)),
            "clusters": len(set(clusters)),
            "systems": compare(
                {s: (scores[s][0][idx], scores[s][1][idx]) for s in systems}, clusters, n_resamples, seed
            ),
        }
    return subsets


def pair_rows(pairs: Sequence[SynonymPair], scores: Mapping[str, Tuple[np.ndarray, np.ndarray]]) -> List[dict]:
    """Per pair: S, O, source, occurrences, and each scoring system's cosine and rank."""
    rows = []
    for i, p in enumerate(pairs):
        scored = [s for s, (cosine, _) in scores.items() if not np.isnan(cosine[i])]
        rows.append(
            {
                "substitute": p.substitute,
                "original": p.original,
                "source": p.source,
                "occurrences": p.occurrences,
                "cosine": {s: round(float(scores[s][0][i]), 5) for s in scored},
                "rank": {s: int(scores[s][1][i]) for s in scored},
            }
        )
    return rows


def evaluate_synonym_recovery(
    model_path: PathLike,
    rarified: Sequence[PathLike] = (),
    wordnet: bool = False,
    store: Optional[PathLike] = None,
    output: Optional[PathLike] = None,
    fold: Optional[str] = None,
    n_resamples: int = 2000,
    seed: int = 0,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    max_zipf: float = DEFAULT_MAX_ZIPF,
    gpu_id: int = -1,
    wordnet_dir: Optional[PathLike] = None,
    lang: str = "en",
    context_window: Optional[int] = None,
    int8_encoder: bool = False,
) -> Dict[str, Any]:
    """Score every system on the pairs of the rarified sets and/or WordNet; `max_pairs` per source;
    `context_window`: the text systems' window (None: the component's default); `int8_encoder`: the
    context encoder's linear layers in int8 (on the CPU), to measure what that costs in quality.

    Inputs (sets, WordNet, the store) are read before the model loads, so a bad one fails fast.
    """
    started = time.perf_counter()
    if not rarified and not wordnet:
        raise ValueError(Errors.E393)
    window = fed_context_window() if context_window is None else context_window
    for option, value in (("--bootstrap", n_resamples), ("--max-pairs", max_pairs), ("--context-window", window)):
        if value < 1:
            raise ValueError(Errors.E394.format(option=option, value=value))
    fold_of = parse_fold(fold) if fold is not None else None
    substitutions = read_substitutions(rarified)
    reader = load_wordnet(wordnet_dir, command="synonym-recovery --wordnet") if wordnet else None
    rule = RareWordRule(max_zipf=max_zipf)
    sources = context_sources(rule, lang, store, window)
    network = load_bertram(model_path)
    network.int8_encoder = int8_encoder
    if gpu_id >= 0:
        network.to(select_device(gpu_id))
    finder = WordSources(rule, lang).finder(network, CountTable.from_model_dir(model_path))
    key = word_key_function(network)
    make_doc = spacy.blank(lang).make_doc
    distinct, dropped = distinct_pairs(substitutions, finder, key)
    candidates = (
        []
        if reader is None
        else wordnet_pairs(
            reader, finder, make_doc, exclude=[(key(p.substitute), key(p.original)) for p in distinct], key=key
        )
    )
    pairs = sample_pairs(distinct, max_pairs, seed) + sample_pairs(candidates, max_pairs, seed)
    counts = {
        "substitutions": len(substitutions),
        "dropped": dropped,
        "rarified_pairs": len(distinct),
        "wordnet_pairs": len(candidates),
        "sampled": len(pairs),
    }
    if fold_of is not None:
        pairs = select_fold(pairs, fold_of, key)
        counts["in_fold"] = len(pairs)
    if not pairs:
        raise ValueError(Errors.E395.format(fold="" if fold is None else f" in fold {fold}", detail=counts))
    subword = SubwordMean.from_model(network.encoder, network.inputs.tokenizer)
    vectors = system_vectors(network, subword, pairs, sources, make_doc, key)
    scores, vocabulary = pair_scores(pairs, vectors, subword, finder)
    metrics: Dict[str, Any] = {
        "model": str(model_path),
        "base_model": network.config.base_model,
        "mode": network.config.mode,
        "rarified": [str(d) for d in rarified],
        "wordnet": wordnet,
        "store": None if store is None else str(store),
        "max_zipf": max_zipf,
        "contexts_per_word": fed_contexts_per_word(),
        "context_window": window,
        "max_pairs": max_pairs,
        "fold": fold,
        "int8_encoder": int8_encoder,
        "bootstrap": n_resamples,
        "seed": seed,
        "confidence": CONFIDENCE,
        "hits_at": HITS_AT,
        "vocabulary": vocabulary,
        "pairs_read": counts,
        "systems": {s: SYSTEMS[s] for s in vectors},
        "subsets": score_subsets(pairs, scores, vectors, key, n_resamples, seed),
        "pairs": pair_rows(pairs, scores),
    }
    metrics["seconds"] = round(time.perf_counter() - started, 2)
    if output is not None:
        write_json_atomic(Path(output), mark_json(metrics, "synonym-recovery"), overwrite=True)
    return metrics


__all__ = ["SYSTEMS", "evaluate_synonym_recovery", "system_vectors", "whole_word_ids"]
