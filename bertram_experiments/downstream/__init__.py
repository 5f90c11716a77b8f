"""The `evaluate` and `pool` steps: the baseline against BERTRAM-enhanced pipelines on the rarified sets.

- `pipelines`: the trained textcat as a pipeline with the injection architecture and the component;
- `downstream`: one rarified set evaluated for every system; `set_outputs`: what it writes;
- `metrics`: accuracy by subset and frequency, McNemar; `paired`: per-item results and their
  paired comparison with the baseline; `pooling`: several sets pooled with a clustered bootstrap.
"""
