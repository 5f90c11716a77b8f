"""The `bertram` pipeline component and the parts only it uses.

- `component`: the factory `bertram` and `BertramComponent`;
- `word_sources`: a word's frequency, signal and contexts (doc, store, definitions), an object the component holds;
- `checks`: the component's placement before a transformer that reads its vectors;
- `serialization`: checked parts (digest-checked, staged, atomic) that the component's `to_disk` /
  `from_disk` / bytes build from its state, and `save_pipeline`;
- `vector_cache`, `vector_table`: the LRU cache and precomputed vector tables.

What the component shares with training, the dictionary and the experiments sits at the package's
top: the context store reader (`context_store`), the device (`device`) and torch's build
(`torch_build`). Nothing is imported here.
"""
