"""Dictionary definitions as contexts for words no corpus covers.

A truly rare word has almost no corpus contexts, but a dictionary describes
it. `dictionary` (the command, `commands.py`) reads GCIDE (dictd format,
`dictd.py` + `gcide.py`) and/or WordNet (NLTK, `wordnet_glosses.py`) and
writes a definition store (`store.py`): per headword, contexts such as
"kumquat: any of several trees ... bearing small orange-colored edible
fruits". The `bertram` component reads it when `contexts` names
"dictionary"; `lemmas.py` finds the entry of an inflected form. `wordnet.py` makes
Debian's WordNet readable by NLTK, for the glosses and for rarification's synonyms.

Only `store.py` and `lemmas.py` run inside a pipeline; the readers and the
builder are needed only to write a store.
"""
