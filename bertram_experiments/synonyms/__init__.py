"""The `synonyms` step: how close a system's vector for a rare word comes to the embedding of the
frequent word it stands for.

- `pairs`: the (rare synonym, original) pairs, from rarified sets and WordNet;
- `systems`: the vector each system gives a rare word, and the run;
- `recovery`: the scores (cosine, rank, hits@k) and the paired comparison with the subword mean.
"""
