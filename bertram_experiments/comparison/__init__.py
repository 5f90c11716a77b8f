"""Two runs of one evaluation side by side: two models, or one model with one setting changed.

`runs`: the paired comparison (the same items, the same resamples) of two `synonym-recovery`
outputs or two sets of `evaluate` outputs; `commands`: `compare-runs`.
"""
