"""The paper's experiments on BERTRAM, run by the project (`python -m bertram_experiments`, project.yml), one
sub-package per workflow; project code beside the plugin, never part of its wheel:

- `rarification/`: rarified test sets and the baseline that guides them (`split`, `train-baseline`, `rarify`);
- `downstream/`: the baseline against BERTRAM-enhanced pipelines on those sets (`evaluate`, `pool`, `assemble`);
- `synonyms/`: synonym recovery (`synonym-recovery`);
- `intrinsic/`: real rare words: CRW, Card-660, Chimeras, word similarity, WNLaMPro (`intrinsic`, `similarity`);
- `ner/`: named entities, cross-validated (`ner-*`);
- `report/`: the run's markdown report (`report`, `learning-curve`).

Each sub-package's `commands.py` registers its steps' commands on `app.app`. Shared by them: `bootstrap`
(paired bootstrap CIs), `rare_word_folds`, `outputs` (what each command writes), `assets` (where the project's
data lives), `pipelines` (a textcat with or without bertram), `tables`, `system_names`, `plots`,
`learning_curve` and `errors` (the experiments' own codes). Only the light `downstream.metrics` (numpy) is
re-exported here; matplotlib is imported only when a plot is drawn.
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
