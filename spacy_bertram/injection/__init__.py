"""BERTRAM vectors in the encoder input: the `spacy-bertram.TransformerModel.v1` architecture.

- `model.py`: spacy-transformers' TransformerModel.v3 with the injection in its forward pass;
- `plan.py`: which wordpieces get a vector (truncation, overlaps, room to lengthen);
- `builders.py`: one builder per mode (replace, slash, recentre) of the rebuilt sequences;
- `batch.py`: the dataclasses they share (stock batch, chosen words, the plan);
- `groups.py`: the rebuilt rows run in calls of rows of similar length;
- `mapping.py`: the outputs gathered back onto the stock wordpiece layout.
"""
from .builders import INJECTION_MODES
from .model import (
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
