"""BERTRAM vectors in the encoder input: the `spacy-bertram.TransformerModel.v1` architecture.

- `model.py`: spacy-transformers' TransformerModel.v3 with the injection in its forward pass;
- `plan.py`: which wordpieces get a vector and the rebuilt sequences (slash, replace);
- `groups.py`: the rebuilt rows run in calls of rows of similar length;
- `mapping.py`: the outputs gathered back onto the stock wordpiece layout.
"""
from .model import (
    INJECTION_MODES,
    BertramTransformerModel,
    convert_injected_inputs,
    convert_injected_outputs,
    create_Tok2VecTransformer_v1,
    create_TransformerModel_v1,
    forward,
)

__all__ = [
    "INJECTION_MODES",
    "BertramTransformerModel",
    "convert_injected_inputs",
    "convert_injected_outputs",
    "create_Tok2VecTransformer_v1",
    "create_TransformerModel_v1",
    "forward",
]
