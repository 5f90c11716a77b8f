"""Validation on held-out words: cosine to the target and MRR among embedding rows.

The honest baseline is the subword mean over the *rare-like* segmentation:
for a one-piece word the plain subword mean is the target itself. MRR ranks
the target against every non-special single-wordpiece row of the encoder's
input embeddings (by cosine to the inferred vector); a one-piece word's own
row is the target and is not counted twice.
"""

from __future__ import annotations

from typing import Dict, List, Sequence

import torch
from torch import Tensor

from ..model.encoder import text_tokens
from ..model.network import BertramNetwork, pad_ids
from .targets import TargetSet

Scores = Dict[str, float]


def candidate_ids(tokenizer) -> Tensor:
    return torch.as_tensor(sorted(text_tokens(tokenizer).values()), dtype=torch.long)


class Validator:
    """Scores vectors for the held-out words of a target set."""

    def __init__(self, network: BertramNetwork, targets: TargetSet, contexts: Sequence[Sequence[str]]) -> None:
        self.indices = targets.indices(held_out=True)
        self.words = [targets.words[i] for i in self.indices]
        self.contexts = [list(contexts[i]) for i in self.indices]
        self.rare_like = [targets.rare_like[i] for i in self.indices]
        self.targets = targets.vectors[self.indices].float()
        self.kinds = [targets.kinds[i] for i in self.indices]
        self.own_rows = [targets.pieces[i][0] if targets.kinds[i] == "row" else -1 for i in self.indices]
        table = network.embedding_matrix().detach().float().cpu()
        ids = candidate_ids(network.tokenizer)
        self.candidate_ids = ids
        self.candidates = torch.nn.functional.normalize(table[ids], dim=1)
        self.table = table

    def score(self, vectors: Tensor) -> Scores:
        pred = torch.nn.functional.normalize(vectors.detach().float().cpu(), dim=1)
        gold = torch.nn.functional.normalize(self.targets, dim=1)
        cos = (pred * gold).sum(dim=1)
        sims = pred @ self.candidates.T
        position = {int(t): j for j, t in enumerate(self.candidate_ids.tolist())}
        for i, row in enumerate(self.own_rows):
            if row in position:
                sims[i, position[row]] = float("-inf")
        ranks = 1 + (sims > cos.unsqueeze(1)).sum(dim=1)
        scores = {"cosine": float(cos.mean()), "mrr": float((1.0 / ranks.float()).mean()), "words": len(self.words)}
        # One-piece words (target: their own row) and multi-piece words (target: OTA) apart: the
        # subword mean starts far from the first and, OTA being fitted from it, near the second.
        for kind in ("row", "ota"):
            mask = torch.as_tensor([k == kind for k in self.kinds], dtype=torch.bool)
            if bool(mask.any()):
                scores.update(
                    {
                        f"cosine_{kind}": float(cos[mask].mean()),
                        f"mrr_{kind}": float((1.0 / ranks[mask].float()).mean()),
                        f"words_{kind}": int(mask.sum()),
                    }
                )
        return scores

    def subword_mean(self) -> Tensor:
        ids = pad_ids(self.rare_like, -1)
        present = (ids >= 0).unsqueeze(-1).float()
        return (self.table[ids.clamp(min=0)] * present).sum(1) / present.sum(1).clamp(min=1)

    def baseline(self) -> Scores:
        return self.score(self.subword_mean())

    @torch.no_grad()
    def predict(self, network: BertramNetwork, chunk: int = 128) -> Tensor:
        """Inferred vectors in eval mode, with the rare-like segmentation as subwords."""
        was_training = network.training
        network.eval()
        out: List[Tensor] = []
        try:
            for start in range(0, len(self.words), chunk):
                end = start + chunk
                batch = network.prepare(self.words[start:end], self.contexts[start:end], self.rare_like[start:end])
                out.append(network(batch).float().cpu())
        finally:
            network.train(was_training)
        return torch.cat(out) if out else torch.zeros(0, network.width)

    def evaluate(self, network: BertramNetwork) -> Scores:
        return self.score(self.predict(network))


def format_table(rows: Sequence[tuple]) -> str:
    """Plain-text table of (name, cosine, mrr) rows."""
    lines = [f"{'model':<34} {'cosine':>8} {'MRR':>8}", "-" * 52]
    lines += [f"{name:<34} {cos:>8.4f} {mrr:>8.4f}" for name, cos, mrr in rows]
    return "\n".join(lines)
