"""The trained textcat as a pipeline: loading it with the injection architecture,
adding the `bertram` component, and assembling the pipeline that gets packaged.

- `load_textcat` / `set_injection`: the trained baseline with its transformer on
  `spacy-bertram.TransformerModel.v1` (injection "none" is bit-identical to the
  stock model); `make_classifier` turns it into texts -> class probabilities.
- `add_bertram`: the `bertram` component before the transformer, with rarity
  from the context store's corpus (or wordfreq) and contexts from the store,
  the doc, or both.
- `assemble_pipeline`: the baseline with the `bertram` component and slash
  injection, saved as a self-contained pipeline for `spacy package`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import List, Optional

import numpy as np
import spacy
from spacy_transformers.layers.transformer_model import TransformerModel

from .errors import Errors
from spacy_bertram import BertramTransformerModel, RareWordRule, load_bertram, save_pipeline
from spacy_bertram.project_support import (
    DEFAULT_CONTEXTS,
    DEFAULT_CONTEXTS_PER_WORD,
    DEFAULT_INJECTION,
    DEFAULT_MAX_ZIPF,
    PathLike,
    check_injection,
    check_output_dir,
    write_bytes_atomic,
)
from spacy_bertram import make_bertram  # noqa: F401  (its module registers the bertram factory and imports architectures.py)
from .outputs import ASSEMBLE_OUTPUTS

logger = logging.getLogger("spacy_bertram")

INJECTION_ARCH = "spacy-bertram.TransformerModel.v1"


# ---------------------------------------------------------------------------
# Loading the trained textcat with the injection architecture


def load_injecting(model_dir: PathLike, injection: str = "none", needs: str = "textcat"):
    """The trained pipeline with its transformer on `spacy-bertram.TransformerModel.v1`.

    The weights are the trained ones (the architectures serialise alike); only the
    forward pass differs, and with injection "none" not even that. `needs`: the
    component the pipeline must have.
    """
    path = Path(model_dir)
    if not (path / "config.cfg").is_file():
        raise ValueError(Errors.E340.format(path=path))
    overrides = {
        "components.transformer.model.@architectures": INJECTION_ARCH,
        "components.transformer.model.injection": injection,
    }
    nlp = spacy.load(path, config=overrides)
    if needs not in nlp.pipe_names:
        raise ValueError(Errors.E341.format(path=path, needs=needs))
    return nlp


def load_textcat(model_dir: PathLike, injection: str = "none"):
    """The trained textcat with its transformer on `spacy-bertram.TransformerModel.v1`."""
    return load_injecting(model_dir, injection, "textcat")


def set_injection(nlp, injection: str) -> None:
    """Switch the injection mode of every BERTRAM transformer in `nlp` in place."""
    check_injection(injection)
    found = False
    for _, proc in nlp.components:
        model = getattr(proc, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for node in model.walk():
            if isinstance(node, BertramTransformerModel):
                node.injection = injection
                found = True
    if not found:
        raise ValueError(Errors.E343)


def pipeline_transformer(nlp):
    """The pipeline's (first) spacy-transformers TransformerModel node."""
    for _, proc in nlp.components:
        model = getattr(proc, "model", None)
        for node in model.walk() if model is not None and hasattr(model, "walk") else ():
            if isinstance(node, TransformerModel):
                return node
    raise ValueError(Errors.E344)


def pipeline_tokenizer(nlp):
    """The Hugging Face tokenizer of the pipeline's transformer: the encoder whose
    wordpieces decide what is rare to it."""
    return pipeline_transformer(nlp).tokenizer


def textcat_labels(nlp) -> List[str]:
    return list(nlp.get_pipe("textcat").labels)


def make_classifier(nlp, batch_size: int = 32):
    """texts -> probabilities (n_texts, n_labels), columns in `textcat_labels(nlp)` order."""
    labels = textcat_labels(nlp)

    def classify(texts: List[str]) -> np.ndarray:
        out = np.zeros((len(texts), len(labels)), dtype=float)
        for i, doc in enumerate(nlp.pipe(texts, batch_size=batch_size)):
            out[i] = [doc.cats.get(label, 0.0) for label in labels]
        return out

    return classify


def add_bertram(
    nlp,
    bertram_path: PathLike,
    contexts: str = DEFAULT_CONTEXTS,
    context_store: Optional[PathLike] = None,
    max_zipf: float = DEFAULT_MAX_ZIPF,
    contexts_per_word: int = DEFAULT_CONTEXTS_PER_WORD,
    name: str = "bertram",
    dictionary_store: Optional[PathLike] = None,
    int8_encoder: bool = False,
):
    """Add the `bertram` component before the transformer, with its own default rule
    (rare to the encoder: 2+ wordpieces, wordfreq Zipf below `max_zipf`), as a user
    who adds it to a pipeline gets it; contexts as the component's `contexts` names them
    ("doc", "store", "dictionary", mixes such as "doc+store", or "none")."""
    model_dir = Path(bertram_path)
    network = load_bertram(model_dir)  # clear error for a missing / corrupt model
    config = {
        "contexts": contexts,
        "context_store": str(context_store) if context_store else None,
        "dictionary_store": str(dictionary_store) if dictionary_store else None,
        "contexts_per_word": int(contexts_per_word),
        "rare_words": {"@misc": "spacy-bertram.RareWords.v1", "max_zipf": float(max_zipf)},
        "model": {
            "@architectures": "spacy-bertram.Bertram.v1",
            "base_model": network.config.base_model,
            "model_path": str(model_dir),
            "int8_encoder": bool(int8_encoder),
        },
    }
    return nlp.add_pipe("bertram", name=name, before="transformer", config=config)


# ---------------------------------------------------------------------------
# The pipeline that gets packaged


PACKAGE_CODE = '''"""Registers spacy-bertram's factory, layers and misc functions when the package loads."""
import spacy_bertram.pipeline.component  # noqa: F401
import spacy_bertram.injection  # noqa: F401
'''


def assemble_pipeline(
    model_dir: PathLike,
    bertram_path: PathLike,
    output_dir: PathLike,
    injection: str = DEFAULT_INJECTION,
    max_zipf: float = DEFAULT_MAX_ZIPF,
    contexts_per_word: int = DEFAULT_CONTEXTS_PER_WORD,
    name: str = "textcat_bertram",
    contexts: str = DEFAULT_CONTEXTS,
    version: str = "0.1.0",
    vector_table: Optional[PathLike] = None,
    force: bool = False,
) -> Path:
    """The trained textcat + `bertram` (+ injection) saved as one self-contained pipeline,
    with a `code.py` beside it for `spacy package --code`. Contexts are the component's
    (default: none, the spelling alone; "doc" reads the doc's own) and rarity is the component's
    rule (Zipf < `max_zipf`, 2+ wordpieces): a packaged
    pipeline cannot rely on a local context store, but it can carry a `vector_table`
    (from `vectors`) whose words get their corpus-context vectors with no inference.

    The pipeline is saved with `save_pipeline` (one rename); other files in `output_dir`, and
    inside the pipeline's directories, stay, and a directory holding only others' files is
    refused unless `force`."""
    RareWordRule(max_zipf=max_zipf)  # a bad value is refused before anything is read or written
    out = Path(output_dir)
    check_output_dir(out, ASSEMBLE_OUTPUTS, command="assemble", force=force, replaces=True)
    nlp = load_textcat(model_dir, injection=injection)
    pipe = add_bertram(nlp, bertram_path, contexts, None, max_zipf, contexts_per_word)
    # Loads the weights (a save loads nothing) and the table (refusing another model's).
    pipe.initialize(lambda: [], nlp=nlp, vector_table=str(vector_table) if vector_table is not None else None)
    nlp.meta["name"] = name
    nlp.meta["version"] = version
    nlp.meta["description"] = f"Text classifier on the MiniLM with BERTRAM vectors ({injection}) for rare words"
    reqs = list(nlp.meta.get("requirements", []))
    if not any(r.startswith("spacy-bertram") for r in reqs):
        reqs.append("spacy-bertram>=0.1.0")
    nlp.meta["requirements"] = reqs
    # The output rule ran above: the pipeline replaces a previous one in one rename, keeping every file it
    # does not write (beside its components and inside them), and code.py is assemble's own file.
    save_pipeline(nlp, out / "pipeline", overwrite=True)
    write_bytes_atomic(out / "code.py", PACKAGE_CODE.encode("utf8"), overwrite=True)
    return out


__all__ = [
    "INJECTION_ARCH",
    "add_bertram",
    "assemble_pipeline",
    "load_injecting",
    "load_textcat",
    "make_classifier",
    "pipeline_tokenizer",
    "pipeline_transformer",
    "set_injection",
    "textcat_labels",
]
