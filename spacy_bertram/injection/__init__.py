"""BERTRAM vectors in the encoder input: the model behind `spacy-bertram.TransformerModel.v1`.

- `model.py`: spacy-transformers' TransformerModel.v3 with a forward that injects the vectors;
- `lengthening.py`: slash and replace, whose rebuilt rows change sequence lengths;
- `hook.py`: the one-shot hook on the input embeddings that puts the vectors in;
- `wordpieces.py`: the batch's wordpieces and their alignment, made once per batch;
- `plan.py`: which wordpieces get a vector (truncation, overlaps, room to lengthen);
- `builders.py`: one builder per mode (replace, slash, recentre) of the rebuilt sequences;
- `batch.py`: the dataclasses they share (stock batch, chosen words, the plan);
- `groups.py`: the rebuilt rows run in calls of rows of similar length;
- `mapping.py`: the outputs gathered back onto the stock wordpiece layout;
- `frozen_embeddings.py`: the transformer's embedding layer, frozen so that it stays in BERTRAM's space.
"""

from ..types import INJECTION_MODES, check_injection
from .model import BertramTransformerModel, forward

__all__ = [
    "INJECTION_MODES",
    "BertramTransformerModel",
    "check_injection",
    "forward",
]
