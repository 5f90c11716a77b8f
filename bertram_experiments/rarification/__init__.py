"""Rarification (Schick & Schütze 2020, section 4): rarified test sets in which frequent words are
replaced by rare synonyms the trained baseline still gets right with them masked.

- `datasets`, `records`: the labelled text sets and the one record type every step shares;
- `baseline`: the `split` and `train-baseline` steps (the textcat that guides rarification, its
  embedding layer frozen);
- `substitution`: the rare same-POS WordNet synonyms a word may be replaced by;
- `rarify`, `masking`: the data side and the two halves of masking; `rarify_step`: the resumable step;
- `seed_sets`: where further rarification seeds live; `oracle`: the ceiling of a rarified set.
"""
