"""Word similarity with contexts: Spearman between human scores and cosines.

Input: a TSV of ``word<TAB>rare word<TAB>human score`` (an optional header
line whose score column is not a number is skipped; '#' lines are comments)
and a directory of ``<word>.txt`` files with one context per line. Every
word of a pair gets the contexts of its file, or none when there is no file
(usual for the frequent first word).

Vectors come from a `VectorFn` mapping [(word, contexts), ...] to an array
[n, d] in the encoder's input-embedding space: BERTRAM, or `SubwordMean`,
the baseline that the stock encoder effectively sees (the mean of the input
embeddings of the word's wordpieces). The first word of each pair may use a
different function than the rare word (e.g. the encoder's own embedding).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from spacy_bertram.project_support import DEFAULT_MIN_WORDPIECES, PathLike, load_encoder, word_piece_ids
from ..errors import Errors

VectorFn = Callable[[List[Tuple[str, List[str]]]], np.ndarray]
Pair = Tuple[str, str, float]


def read_similarity_pairs(path: PathLike, allow_header: bool = True) -> List[Pair]:
    """(word, rare word, score) triples from the TSV.

    `allow_header=False` for formats without one: a first line whose score is
    not a number is then an error, not a silently skipped header.
    """
    pairs: List[Pair] = []
    with open(path, encoding="utf8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or row[0].startswith("#") or not any(c.strip() for c in row):
                continue
            if len(row) < 3:
                raise ValueError(Errors.E375.format(path=path, n=n))
            try:
                score = float(row[2])
            except ValueError:
                if not pairs and allow_header:
                    continue  # header
                raise ValueError(Errors.E376.format(path=path, n=n, score=row[2])) from None
            pairs.append((row[0].strip(), row[1].strip(), score))
    return pairs


def read_contexts(directory: Optional[PathLike], word: str, max_contexts: Optional[int] = None) -> List[str]:
    """Non-empty lines of `<directory>/<word>.txt`; [] if there is no such file."""
    if directory is None:
        return []
    path = Path(directory) / f"{word}.txt"
    if not path.is_file():
        return []
    lines = [line.strip() for line in path.read_text(encoding="utf8").splitlines()]
    lines = [line for line in lines if line]
    return lines[:max_contexts] if max_contexts is not None else lines


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity (0 where a vector is zero)."""
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (Pearson of average ranks, as scipy's); NaN for a constant input.

    Light enough to be called thousands of times by a bootstrap.
    """
    from scipy.stats import rankdata

    rx = rankdata(np.asarray(x, dtype=float))
    ry = rankdata(np.asarray(y, dtype=float))
    rx -= rx.mean()
    ry -= ry.mean()
    den = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    return float((rx * ry).sum() / den) if den > 0 else float("nan")


@dataclass
class SimilarityResult:
    spearman: float
    p_value: float
    n: int
    cosines: List[float]
    human: List[float]

    def to_dict(self) -> dict:
        return {"spearman": self.spearman, "p_value": self.p_value, "n": self.n}


def _vectors(fn: VectorFn, words: Sequence[str], contexts: Mapping[str, List[str]]) -> Dict[str, np.ndarray]:
    unique = list(dict.fromkeys(words))
    arr = np.asarray(fn([(w, contexts.get(w, [])) for w in unique]), dtype=float)
    assert arr.ndim == 2 and arr.shape[0] == len(unique), f"vector function gave {arr.shape}, not ({len(unique)}, d)"
    return dict(zip(unique, arr))


def evaluate_similarity(
    pairs: Sequence[Pair],
    rare_vectors: VectorFn,
    contexts: Union[None, PathLike, Mapping[str, List[str]]] = None,
    word_vectors: Optional[VectorFn] = None,
    max_contexts: Optional[int] = None,
) -> SimilarityResult:
    """Spearman's rho between human scores and cosine(word, rare word).

    `contexts` is a directory of `<word>.txt` files or a mapping word ->
    contexts. `word_vectors` (default: `rare_vectors`) embeds the first word.
    """
    from scipy.stats import spearmanr

    if len(pairs) < 2:
        raise ValueError(Errors.E378)
    words = [p[0] for p in pairs]
    rares = [p[1] for p in pairs]
    if contexts is None or isinstance(contexts, Mapping):
        ctx = {w: list((contexts or {}).get(w, []))[:max_contexts] for w in words + rares}
    else:
        ctx = {w: read_contexts(contexts, w, max_contexts) for w in words + rares}
    rare_vec = _vectors(rare_vectors, rares, ctx)
    word_vec = _vectors(word_vectors or rare_vectors, words, ctx)
    cos = cosine_rows(np.stack([word_vec[w] for w in words]), np.stack([rare_vec[r] for r in rares]))
    human = [p[2] for p in pairs]
    rho, pval = spearmanr(human, cos)
    return SimilarityResult(float(rho), float(pval), len(pairs), cos.tolist(), human)


class SubwordMean:
    """Baseline VectorFn: mean of the input embeddings of the word's wordpieces.

    Contexts are ignored. Byte-level BPE tokenizers get a leading space, so
    the word is split as it would be inside a sentence.
    """

    def __init__(self, tokenizer, embeddings) -> None:
        self.tokenizer = tokenizer
        if hasattr(embeddings, "detach"):
            embeddings = embeddings.detach().cpu().float().numpy()
        self.embeddings = np.asarray(embeddings, dtype=float)

    @classmethod
    def from_model(cls, model, tokenizer) -> "SubwordMean":
        return cls(tokenizer, model.get_input_embeddings().weight)

    @classmethod
    def from_encoder(cls, name: str = "default") -> "SubwordMean":
        """From a base model name or path (see spacy_bertram.model.encoder)."""
        encoder, tokenizer = load_encoder(name)
        return cls.from_model(encoder, tokenizer)

    def piece_ids(self, word: str) -> List[int]:
        """The encoder's split of the word (`encoder.word_piece_ids`, the one rule), every piece kept."""
        ids = word_piece_ids(self.tokenizer, word, max_pieces=len(self.embeddings))
        if not ids:
            raise ValueError(Errors.E379.format(word=word))
        return list(ids)

    def is_multi_piece(self, word: str) -> bool:
        """Cut into as many pieces as the rare-word rule asks by default (the "multi_piece" subsets)."""
        return len(self.piece_ids(word)) >= DEFAULT_MIN_WORDPIECES

    def __call__(self, batch: List[Tuple[str, List[str]]]) -> np.ndarray:
        return np.stack([self.embeddings[self.piece_ids(word)].mean(axis=0) for word, _ in batch])
