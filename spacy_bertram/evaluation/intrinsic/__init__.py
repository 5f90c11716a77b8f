"""Intrinsic evaluations on real rare words: CRW, Card-660 and the Chimeras (`intrinsic`), word
similarity with contexts (`similarity`, `similarity_eval`), WNLaMPro-style mean reciprocal rank (`wnlampro`).

- `rare_sets`: readers of the public sets, with errors that name file and line;
- `definition_contexts`: the dictionary systems of the intrinsic table and their coverage;
- `intrinsic_table`: the printed table of Spearman per set, subset and system, with the CIs.
"""
