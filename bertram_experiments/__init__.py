"""Evaluation of BERTRAM, one sub-package per workflow of the project:

- `rarification/`: rarified test sets and the baseline that guides them (`split`, `train-baseline`, `rarify`);
- `downstream/`: the baseline against BERTRAM-enhanced pipelines on those sets (`evaluate`, `pool`);
- `synonyms/`: synonym recovery (`synonyms`);
- `intrinsic/`: real rare words: CRW, Card-660, Chimeras, word similarity, WNLaMPro (`intrinsic`, `similarity`);
- `ner/`: named entities, cross-validated (`ner`);
- `report/`: the run's markdown report and what its tables share (`report`).

Each sub-package's `commands.py` registers its steps' commands. Shared by them: `bootstrap` (paired
bootstrap CIs), `folds` (rare-word folds), `outputs` (what each command writes), `assets` (where the
project's data lives), `learning_curve` (`curve`) and `rarity` (`rare-words`). Only the light `downstream.metrics`
(numpy) is re-exported here; matplotlib is imported only when a plot is drawn.
"""

from .downstream.metrics import (
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
