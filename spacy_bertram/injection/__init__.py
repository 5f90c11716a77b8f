"""BERTRAM vectors in the encoder input: the model behind `spacy-bertram.TransformerModel.v1`.

- `model.py`: spacy-transformers' TransformerModel.v3 with the injection; recentre (the default) runs its stock forward;
- `lengthening.py`: the forward of slash and replace, which change sequence lengths;
- `hook.py`: the one-shot hook on the input embeddings that puts the vectors in;
- `wordpieces.py`: the stock wordpiece batch, from spacy-transformers' public functions;
- `plan.py`: which wordpieces get a vector (truncation, overlaps, room to lengthen);
- `builders.py`: one builder per mode (replace, slash, recentre) of the rebuilt sequences;
- `batch.py`: the dataclasses they share (stock batch, chosen words, the plan);
- `groups.py`: the rebuilt rows run in calls of rows of similar length;
- `mapping.py`: the outputs gathered back onto the stock wordpiece layout;
- `frozen_embeddings.py`: the transformer's embedding layer, frozen so that it stays in BERTRAM's space.
"""

from ..types import INJECTION_MODES, check_injection
from .lengthening import convert_lengthened_inputs, convert_lengthened_outputs
from .model import BertramTransformerModel, forward

__all__ = [
    "INJECTION_MODES",
    "BertramTransformerModel",
    "check_injection",
    "convert_lengthened_inputs",
    "convert_lengthened_outputs",
    "forward",
]
