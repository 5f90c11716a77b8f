"""Named-entity recognition with and without `bertram`, cross-validated.

A spaCy user's own setting, not the paper's synthetic one: a transformer NER is
trained with `spacy train` on real data whose entities are rare words, once
stock and once with the `bertram` component before the transformer, and the
stock-trained NER is also scored with `bertram` added after training.

- `data`: IOB files (`token<TAB>tag`, a blank line between texts; the WNUT-16
  tweets from a registry wheel) or a user's `.spacy` files -> Docs with entities;
- `folds`: the Docs cut into k folds by text with a fixed seed, written once;
- `systems`: training each fold's stock and bertram NER, and the three systems;
- `predict`: each system's entities on its test fold, with the tokens the
  component calls rare;
- `scores`: entity P/R/F1 (overall, per type, rare-token entities, buckets);
- `compare`: paired bootstrap CIs of ΔF1, resampling texts;
- `report`: the markdown tables and the plot;
- `commands`: `ner-folds`, `ner-train`, `ner-evaluate`.
"""
