"""How long each point of the curve trains: to convergence on its dev set, within a budget.

A subset of n texts is trained for `epochs` passes (at least `min_steps`, at most
`max_steps` updates: a small subset needs many passes before NER learns anything
at all, a large one fewer), its dev set scored once per pass (at least every
`min_eval_steps` updates), and training stops early, as `spacy train` does, after
`patience_evals` dev scores without a better one; model-best is the pipeline the
curve scores. The same schedule holds for stock and with-bertram runs of a point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from spacy.tokens import Doc


@dataclass(frozen=True)
class CurveSchedule:
    """Training settings every run of a curve shares (the encoder fine-tuned, spaCy's default)."""

    batch_size: int = 250
    epochs: int = 8
    min_steps: int = 100
    max_steps: int = 160
    min_eval_steps: int = 20
    patience_evals: int = 3
    learn_rate: float = 2e-4

    def steps_per_epoch(self, docs: Sequence[Doc]) -> int:
        """Updates per pass: the subset's words over the batch's padded words (at least 1)."""
        return max(1, math.ceil(sum(len(doc) for doc in docs) / self.batch_size))

    def for_subset(self, docs: Sequence[Doc]) -> "RunSteps":
        per_epoch = self.steps_per_epoch(docs)
        eval_frequency = max(self.min_eval_steps, per_epoch)
        wanted = min(self.max_steps, max(self.min_steps, self.epochs * per_epoch))
        max_steps = eval_frequency * math.ceil(wanted / eval_frequency)  # the last update is scored too
        return RunSteps(max_steps, eval_frequency, self.patience_evals * eval_frequency)


@dataclass(frozen=True)
class RunSteps:
    """One subset's bounds: spaCy's max_steps, eval_frequency and patience."""

    max_steps: int
    eval_frequency: int
    patience: int


__all__ = ["CurveSchedule", "RunSteps"]
