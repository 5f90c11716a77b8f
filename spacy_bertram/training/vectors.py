"""`python -m spacy_bertram vectors`: BERTRAM vectors for a whole vocabulary, once.

The driver: it picks the words (a count range in the context store, a word
list, or both; with `rare_only`, only those the component's rare-word rule
calls rare), plans the table's shards (`shards.ShardStore`), and
fills the shards still missing, either in this process (`workers=0`) or on a
Dask cluster (`distributed.py`, one model per worker). Every row is what the
`bertram` component would infer for the word with `contexts="store"`: the
word's first `max_contexts` store contexts through `BertramNetwork.infer`.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ..errors import Errors, Warnings
from ..explain import rule_pipeline
from ..fileio import remove_written
from ..context_store import ContextStore, check_casing, open_context_store
from ..pipeline.table_files import SHARD_FILES, check_table_output
from ..pipeline.vector_table import META_FILE, SHARDS_DIR, VectorTable, encoder_identity
from ..pipeline.word_sources import word_key_function
from ..model.storage import load_bertram
from ..types import DEFAULT_CONTEXTS_PER_WORD, PathLike
from .distributed import describe_client, local_threads, open_client, run_on_dask
from .progress import progress_bar
from .settings import (
    DEFAULT_LANG,
    VECTORS_OUTPUTS,
    check_rare_settings,
    check_vector_request,
    check_vector_settings,
    read_word_list,
    VectorSelection,
    store_summary,
    vector_request_changes,
)
from .shards import JobSettings, ShardStore, infer_words, worker_state

logger = logging.getLogger(__name__)

DEFAULT_SHARD_SIZE = 256


def select_words(
    store: ContextStore,
    word_key: Callable[[str], str],
    min_count: int = 1,
    max_count: Optional[int] = None,
    word_list: Optional[Iterable[str]] = None,
    min_contexts: int = 1,
) -> List[str]:
    """Words with min_count <= count < max_count (most frequent first), or those of a word list.

    With a word list and a count range, the list's words in the range. Words
    with fewer than `min_contexts` store contexts are left out: the component
    infers those from the document's own sentences, which beats a form-only
    vector. Words are keyed as the component keys tokens (`word_key`). A
    listed word the store has never seen is logged as a warning (a typo, or a
    list for another corpus); one outside the count range or short of
    contexts is left out by design.
    """
    if max_count is not None and max_count <= min_count:
        raise ValueError(Errors.E261.format(max_count=max_count, min_count=min_count))
    if word_list is not None:
        candidates: Iterable[str] = (w for w in word_list)
    else:
        candidates = (w for w, n in store.counts(min_count, min_contexts) if max_count is None or n < max_count)
    words: List[str] = []
    seen = set()
    missing: List[str] = []
    for word in candidates:
        key = word_key(word)
        if key in seen:
            continue
        if word_list is not None:
            if store.count(key) == 0 and key not in missing:
                missing.append(key)
            if not selectable(store, key, min_count, max_count, min_contexts):
                continue
        seen.add(key)
        words.append(key)
    if missing:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        warnings.warn(Warnings.W011.format(n=len(missing), words=shown))
    return words


def selectable(
    store: ContextStore, key: str, min_count: int = 1, max_count: Optional[int] = None, min_contexts: int = 1
) -> bool:
    """Whether the store's `key` is in the count range with at least `min_contexts` contexts."""
    count = store.count(key)
    if count < min_count or (max_count is not None and count >= max_count):
        return False
    return store.num_contexts(key) >= min_contexts


def rare_words_of(
    model_path: PathLike,
    words: Sequence[str],
    max_zipf: Optional[float] = None,
    lang: Optional[str] = None,
    progress: bool = True,
) -> Tuple[List[str], float]:
    """(the tokens of `words` the `bertram` component calls rare, in order, each once; the rule's max_zipf).

    The rule is the component's own, built as `rare-words` builds it around a
    BERTRAM model directory (`explain.rule_pipeline`: the default rule, this
    model's encoder and counts, `lang`'s wordfreq), asked of each word as a
    text of its own (`finder.find`, the one answer to "which tokens of a text
    are rare"), so a table never holds a row the component would not look
    up: a word spaCy cuts into tokens ("twinkly-eyed") gives its rare ones
    ("twinkly"), as the component meets them in the text.
    """
    nlp, pipe = rule_pipeline(model_path, max_zipf=max_zipf, lang=lang or DEFAULT_LANG)
    finder = pipe.finder
    rare: Dict[str, None] = {}
    for word in progress_bar(words, progress=progress, desc="Rare words", unit=" words"):
        doc = nlp.make_doc(word)
        rare.update((doc[i].text, None) for i in finder.find(doc))
    return list(rare), finder.rule.max_zipf


def table_meta(
    model_id: str, encoder: Dict[str, Any], job: JobSettings, store: ContextStore, key: str
) -> Dict[str, Any]:
    return {
        "model_id": model_id,
        "encoder": encoder,
        "word_key": key,
        "max_contexts": job.max_contexts,
        "store": store_summary(store),
    }


def run_in_process(shards: ShardStore, todo: Sequence[int], job: JobSettings, progress: bool = True) -> None:
    """Fill the shards one after the other here (no Dask): for one device or debugging."""
    state = worker_state(job)
    for index in progress_bar(todo, progress=progress, desc="Shards", unit=" shards"):
        shards.write(
            index,
            infer_words(state.network, state.store, shards.shard_words(index), job.max_contexts, job.token_budget),
        )


def build_vector_table(
    model_path: PathLike,
    store_path: PathLike,
    output: PathLike,
    *,
    then_stores: Sequence[PathLike] = (),
    min_count: int = 1,
    max_count: Optional[int] = None,
    word_list: Optional[PathLike] = None,
    min_contexts: int = 1,
    rare_only: bool = False,
    max_zipf: Optional[float] = None,
    lang: Optional[str] = None,
    max_contexts: int = DEFAULT_CONTEXTS_PER_WORD,
    shard_size: int = DEFAULT_SHARD_SIZE,
    workers: Optional[int] = None,
    scheduler: Optional[str] = None,
    gpu_ids: Sequence[int] = (),
    token_budget: int = 0,
    progress: bool = True,
    force: bool = False,
) -> Dict[str, Any]:
    """Compute (or finish) the vector table at `output`; returns a summary.

    Re-running the same command after a kill computes only the missing
    shards. `workers=0` runs in this process; otherwise a Dask cluster at
    `scheduler`, or a new LocalCluster of `workers` processes (default: one
    per core), or a LocalCUDACluster with one worker per id in `gpu_ids`.
    Every setting is checked before anything is written; an `output` that
    holds other files than a table or an unfinished run is refused unless
    `force` (the finished table replaces the directory). `rare_only` keeps
    only the selected words the component's rare-word rule calls rare
    (`max_zipf` overrides its threshold, `lang` is wordfreq's language,
    "en" by default): a store of the user's own texts holds every word of
    them, and the component only ever looks up rare ones. The summary and
    table.json's `rare_only` say how many it dropped (`not_rare`).
    `then_stores` are read after `store_path` for the contexts a word lacks
    there (the component's chained store sources: the user's texts first, a
    general store behind); the words still come from `store_path` alone.
    """
    start = time.perf_counter()
    check_vector_settings(
        min_count, max_count, max_contexts, token_budget, shard_size, workers, scheduler, min_contexts
    )
    check_rare_settings(rare_only, max_zipf, lang)
    check_table_output(output, command="vectors", force=force)
    model_path, store_path = Path(model_path).resolve(), Path(store_path).resolve()
    then_paths = tuple(str(Path(path).resolve()) for path in then_stores)
    selection = VectorSelection(
        then_paths, min_count, max_count, word_list, min_contexts, rare_only, max_zipf, lang, max_contexts
    )
    request = selection.request(model_path, store_path)  # every store opened now: a bad one fails before any work
    check_vector_request(output, request, force)  # other settings than the output's: refused before the work
    network = load_bertram(model_path)  # here for the word key and the encoder identity
    model_id = request["model_id"]
    encoder = encoder_identity(network)
    key_fn = word_key_function(network)
    key = "lower" if key_fn is str.lower else "cased"
    store = open_context_store(store_path)
    check_casing(store, key_fn is str.lower, "STORE")  # the component refuses it too: no contexts for "Quokka"
    for path in then_paths:  # each checked now: fails before any work
        with open_context_store(path) as then_store:
            check_casing(then_store, key_fn is str.lower, "--then-store")
    listed = read_word_list(word_list) if word_list is not None else None
    words = select_words(store, key_fn, min_count, max_count, listed, min_contexts)
    selection = ", from the word list" if listed is not None else ""
    rare: Dict[str, Any] = {}
    if rare_only and words:
        tokens, rule_max_zipf = rare_words_of(model_path, words, max_zipf, lang, progress)
        selected = set(words)
        # A rare token of a selected word (a part of a hyphen-joined one) is selected as a word of its own would be.
        kept = [t for t in tokens if t in selected or selectable(store, t, min_count, max_count, min_contexts)]
        not_rare = len(selected.difference(kept))
        rare = {"max_zipf": rule_max_zipf, "lang": lang or DEFAULT_LANG, "not_rare": not_rare}
        selection += f", rare to the component's rule at max_zipf {rule_max_zipf}: {not_rare} word(s) were not"
        words = kept
    if not words:
        raise ValueError(
            Errors.E265.format(
                store_path=str(store_path),
                min_count=min_count,
                max_count=max_count,
                min_contexts=min_contexts,
                listed=selection,
            )
        )
    device = "cuda" if gpu_ids else "cpu"
    job = JobSettings(str(model_path), str(store_path), max_contexts, token_budget, device, then_store_paths=then_paths)
    meta = table_meta(model_id, encoder, job, store, key)
    if then_paths:
        meta["then_stores"] = request["then_stores"]
    if rare:
        meta["rare_only"] = rare
    meta["selection"] = request["selection"]
    said = {"not_rare": rare["not_rare"]} if rare else {}
    out = Path(output)
    if (out / META_FILE).is_file():
        done = VectorTable.from_disk(out)
        changed = vector_request_changes(done.meta, request) or _word_changes(done.words, words)
        if not changed and all(done.meta.get(k) == meta[k] for k in ("encoder", "word_key")):
            return {"output": str(out), "words": len(done), **said, "computed_shards": 0, "already_done": True}
        if not force:
            raise ValueError(Errors.E266.format(out=str(out), changed=changed or "the model's encoder or word key"))
        remove_written(out, VECTORS_OUTPUTS)  # another job's table and shards; others' files stay
    del network  # the workers load their own
    new = [path for path in (out, out / SHARDS_DIR) if not path.exists()]
    try:
        shards = ShardStore.open(out, words, shard_size, {k: v for k, v in meta.items() if k != "encoder"})
        todo = shards.missing()
        logger.info(
            "Vector table %s: %d words in %d shards, %d to compute", out, len(words), shards.n_shards, len(todo)
        )
        compute_start = time.perf_counter()
        where = "this process"
        if todo and workers == 0:
            if gpu_ids:
                job = JobSettings(**{**asdict(job), "device": f"cuda:{gpu_ids[0]}"})
            run_in_process(shards, todo, job, progress)
        elif todo:
            client, close = open_client(scheduler, workers, gpu_ids)
            try:
                where = describe_client(client)
                if scheduler is None and not gpu_ids:
                    job = JobSettings(**{**asdict(job), "torch_threads": local_threads(client)})
                run_on_dask(client, shards, todo, job, model_id, progress)
            finally:
                close()
        compute_seconds = time.perf_counter() - compute_start
        table = shards.merge(meta)
        table.to_disk(out, overwrite=True)  # the output rule ran first
        computed = sum(len(shards.shard_words(i)) for i in todo)
        return {
            "output": str(out),
            "words": len(table),
            **said,
            "width": table.width,
            "shards": shards.n_shards,
            "computed_shards": len(todo),
            "resumed_shards": shards.n_shards - len(todo),
            "computed_words": computed,
            "on": where,
            "compute_seconds": round(compute_seconds, 2),
            "words_per_s": round(computed / compute_seconds, 1) if computed and compute_seconds > 0 else None,
            "seconds": round(time.perf_counter() - start, 2),
        }
    except BaseException:
        _remove_unstarted(out, new)
        raise


def _word_changes(recorded: Sequence[str], selected: Sequence[str]) -> str:
    """How a table's words differ from those selected now, in words (not the lists)."""
    if list(recorded) == list(selected):
        return ""
    others = " (others)" if len(recorded) == len(selected) else ""
    return f"words: {len(recorded)} in the table, {len(selected)}{others} selected now"


def _remove_unstarted(out: Path, new: Sequence[Path]) -> None:
    """A run that failed before it finished a shard leaves nothing: the shards directory (its plan alone) and
    the output directory, where this run created them. Finished shards stay, for the run that resumes them."""
    shards = out / SHARDS_DIR
    if shards in new and shards.is_dir() and not any(shards.glob("shard-*.safetensors")):
        remove_written(shards, SHARD_FILES)  # its plan; a file of a user's there stays, with the directory
    if out in new:
        remove_written(out, ())  # the directory, if this run made it and it is empty now
