"""The `bertram` pipeline component and the parts only it uses.

- `component`: the factory `bertram` and `BertramComponent`;
- `word_sources`: a word's frequency, signal and contexts (doc, store, definitions), an object the component holds;
- `checks`: the component's placement before a transformer that reads its vectors;
- `serialization`: checked parts (digest-checked, staged, atomic) that the component's `to_disk` /
  `from_disk` / bytes build from its state, and `save_pipeline`;
- `contexts`: the read-only SQLite context store (built by `training/store_builder.py`);
- `vector_cache`, `vector_table`: the LRU cache and precomputed vector tables.
- `device`: `--gpu-id` / `gpu_id` for every step (named errors), deterministic CUDA, the fork check.

Nothing is imported here, so `import spacy_bertram.pipeline.contexts` stays light.
"""
