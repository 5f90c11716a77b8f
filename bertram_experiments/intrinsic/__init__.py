"""Intrinsic evaluations on real rare words.

- `intrinsic`: CRW, Card-660 and the Chimeras, and their table (Spearman per set, subset and system, with CIs);
- `similarity`: word similarity with contexts (Spearman, the subword-mean baseline); `similarity_eval`: the
  `similarity` command over files;
- `wnlampro`: WNLaMPro-style mean reciprocal rank of a masked LM's answers;
- `rare_sets`: readers of the public sets, with errors that name file and line;
- `definition_contexts`: the dictionary systems of the intrinsic table and their coverage.
"""
