"""Evaluation of BERTRAM: downstream accuracy on rarified sets, WNLaMPro-style
mean reciprocal rank, and word similarity with contexts (Spearman).

Submodules are imported lazily by callers (`from spacy_bertram.evaluation import
metrics`), so that importing the package does not pull in torch or matplotlib.
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
