"""Evaluation of BERTRAM: downstream accuracy on rarified sets, WNLaMPro-style
mean reciprocal rank, and word similarity with contexts (Spearman).

Only the light `metrics` (numpy) is re-exported here; `wnlampro` and
`similarity` (transformers) are imported by name where needed, and matplotlib
only when a plot is drawn.
"""
from .metrics import (
    SUBSETS,
    FrequencyBucket,
    McNemarResult,
    accuracy_by_frequency,
    accuracy_by_subset,
    compare_systems,
    mcnemar_exact,
    plot_accuracy_by_frequency,
)

__all__ = [
    "SUBSETS",
    "FrequencyBucket",
    "McNemarResult",
    "accuracy_by_frequency",
    "accuracy_by_subset",
    "compare_systems",
    "mcnemar_exact",
    "plot_accuracy_by_frequency",
]
