"""Word similarity from files: BERTRAM vs the subword mean, as a metrics JSON.

Wraps `evaluation.intrinsic.similarity` for the command line and project.yml: the pairs
TSV, contexts from a directory of `<word>.txt` files or from a `prepare`
context store, and a trained BERTRAM model. The first word of a pair is always
embedded the way the stock encoder sees it (its subword mean), so the two
systems differ only in the vector of the second, rare word.

Results are given for all pairs and for the pairs whose second word the
encoder splits into two or more wordpieces: for a one-piece word the subword
mean *is* the encoder's trained embedding, a target BERTRAM only approximates.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional

from .similarity import Pair, SubwordMean, evaluate_similarity, read_contexts, read_similarity_pairs
from ..errors import Errors, Warnings
from spacy_bertram import load_bertram, open_context_store
from spacy_bertram.project_support import PathLike, STORE_FILE, mark_json, select_device, write_json_atomic


def load_contexts(source: PathLike, words: List[str], max_contexts: int) -> Mapping[str, List[str]]:
    """word -> contexts from a `<word>.txt` directory or a contexts.sqlite store."""
    path = Path(source)
    if path.is_dir() and not (path / STORE_FILE).is_file():
        return {w: read_contexts(path, w, max_contexts) for w in words}
    store_path = path / STORE_FILE if path.is_dir() else path
    if not store_path.is_file():
        raise ValueError(Errors.E380.format(source=str(source)))
    with open_context_store(store_path) as store:
        return {w: store.contexts(w, max_contexts) for w in words}


def evaluate_similarity_files(
    pairs_path: PathLike,
    contexts: PathLike,
    bertram_path: PathLike,
    output: Optional[PathLike] = None,
    max_contexts: int = 16,
    gpu_id: int = -1,
) -> Dict[str, Any]:
    """Spearman's rho of BERTRAM and of the subword mean on one pairs file."""
    if max_contexts < 1:  # a negative slice would silently drop contexts from the end
        raise ValueError(Errors.E052.format(setting="--max-contexts", bounds="at least 1", value=max_contexts))
    started = time.perf_counter()
    pairs = read_similarity_pairs(pairs_path)
    if len(pairs) < 2:
        raise ValueError(Errors.E382.format(pairs_path=str(pairs_path), n_pairs=len(pairs)))
    network = load_bertram(bertram_path)
    if gpu_id >= 0:
        network.to(select_device(gpu_id))
    subword = SubwordMean.from_model(network.encoder, network.inputs.tokenizer)
    rare_words = sorted({rare for _, rare, _ in pairs})
    context_map = load_contexts(contexts, rare_words, max_contexts)
    without = [w for w in rare_words if not context_map.get(w)]
    if without:
        warnings.warn(
            Warnings.W008.format(
                what="word similarity", n=len(without), total=len(rare_words), words=", ".join(without[:10])
            )
        )
    multi_piece = [p for p in pairs if subword.is_multi_piece(p[1])]
    subsets: Dict[str, List[Pair]] = {"all": pairs, "multi_piece": multi_piece}
    results: Dict[str, Any] = {}
    for name, subset in subsets.items():
        if len(subset) < 2:
            results[name] = {"n": len(subset)}
            continue
        results[name] = {
            system: evaluate_similarity(subset, fn, context_map, word_vectors=subword).to_dict()
            for system, fn in (("bertram", network.infer), ("subword_mean", subword))
        }
        results[name]["n"] = len(subset)
    metrics = {
        "pairs": str(pairs_path),
        "contexts": str(contexts),
        "bertram": str(bertram_path),
        "max_contexts": max_contexts,
        "rare_words": len(rare_words),
        "rare_words_without_contexts": len(without),
        "results": results,
        "seconds": round(time.perf_counter() - started, 2),
    }
    if output is not None:
        write_json_atomic(Path(output), mark_json(metrics, "similarity"), overwrite=True)
    return metrics


__all__ = ["evaluate_similarity_files", "load_contexts"]
