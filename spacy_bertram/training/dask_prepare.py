"""`prepare` on a Dask cluster: the same counts and the same sampled contexts as on one machine.

The single-machine store keeps, per word, a reservoir sample drawn with one
random stream over the corpus in order, so the sample depends on the order of
every occurrence. To give the very same store from many workers, the work is
split where it is cheap to put back together:

1. counting: a Dask bag over the files, one file per partition, each counted
   on a worker (files are checked there too) and the counts summed;
2. offers: each worker tokenises its file and returns, for every occurrence
   of a selected word, only (word index, 64-bit digest of its context);
3. replay: the driver makes the single-machine pass's reservoir decisions
   over those pairs, file by file in corpus order as the workers finish, and
   notes which occurrence holds each slot (`replay_file`: the same random
   stream and the same `_Reservoirs.place`, with the draws vectorised);
4. contexts: each worker cuts the winning contexts of its file, and the
   driver writes the store (`write_context_store`, as on one machine).

All tokenising and context cutting runs on the workers; the driver's part is
numpy over integer pairs plus a loop over the occurrences that take a slot. Corpus files must be at the same path on
every worker.
"""

from __future__ import annotations

import warnings
from array import array
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy

from ..errors import Errors, Warnings
from ..context_store import Context
from .store_builder import StorePlan, _Reservoirs, context_digest, make_context, write_context_store
from .corpus import check_file, expand_paths, iter_lines, tokenize, tokenize_spans
from .progress import progress_bar
from ..types import PathLike

#: Occurrence ids: file index in the high bits, occurrence within the file below.
FILE_SHIFT = 40


def count_file(path: str, lowercase: bool, errors: str) -> Tuple[str, Optional[Counter], int, Optional[str]]:
    """(path, word counts, lines, None) for a good file, (path, None, 0, reason) for a skipped one."""
    try:
        check_file(Path(path))
    except ValueError as err:
        if errors == "raise":
            raise
        return path, None, 0, str(err)
    counts: Counter = Counter()
    n_lines = 0
    for line in iter_lines([Path(path)]):
        counts.update(tokenize(line, lowercase))
        n_lines += 1
    return path, counts, n_lines, None


def file_offers(
    path: str, lowercase: bool, window: int, slot_of: Dict[str, int]
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Word index and context digest of every occurrence of a selected word, in file order."""
    wids = array("q")
    digests = array("q")
    for line in iter_lines([Path(path)]):
        spans = tokenize_spans(line, lowercase)
        for i, span in enumerate(spans):
            k = slot_of.get(span[0])
            if k is not None:
                wids.append(k)
                digests.append(context_digest(make_context(line, spans, i, window)[0]))
    return numpy.frombuffer(wids, dtype=numpy.int64), numpy.frombuffer(digests, dtype=numpy.int64)


def file_contexts(
    path: str, lowercase: bool, window: int, slot_of: Dict[str, int], wanted: Sequence[Tuple[int, int, int]]
) -> List[Tuple[int, int, Context]]:
    """The contexts of the occurrences `wanted` = [(occurrence, word index, slot)], as (word index, slot, context)."""
    targets = {occurrence: (k, slot) for occurrence, k, slot in wanted}
    out: List[Tuple[int, int, Context]] = []
    occurrence = 0
    last = max(targets) if targets else -1
    for line in iter_lines([Path(path)]):
        spans = tokenize_spans(line, lowercase)
        for i, span in enumerate(spans):
            if span[0] in slot_of:
                if occurrence in targets:
                    k, slot = targets[occurrence]
                    out.append((k, slot, make_context(line, spans, i, window)))
                occurrence += 1
        if occurrence > last:
            break
    return out


def replay_file(
    sample: _Reservoirs, caps: numpy.ndarray, wids: numpy.ndarray, digests: numpy.ndarray, base_id: int, winners: array
) -> None:
    """`_Reservoirs.offer` over one file's occurrences, in order, without their texts.

    A word draws from the random stream only once its reservoir is full, and
    stays full, so: first the occurrences of words not yet full are placed in
    order (no draws); then every later occurrence of a full word draws, in
    corpus order, its slot int(random() * seen); those below the cap are
    placed in order. Words do not interact except through the stream, so this
    is the sequential pass's result.
    """
    n = len(wids)
    if n == 0:
        return
    stored = numpy.frombuffer(sample.stored, dtype=numpy.int64)  # views: place() updates them
    seen = numpy.frombuffer(sample.seen, dtype=numpy.int64)
    offsets, place = sample.offsets, sample.place
    draws = stored[wids] >= caps[wids]
    for j in numpy.flatnonzero(~draws).tolist():
        k = int(wids[j])
        slot = sample.stored[k]
        if slot >= sample.caps[k]:
            draws[j] = True  # filled earlier in this file
        elif place(k, slot, int(digests[j])):
            winners[offsets[k] + slot] = base_id | j
    order = numpy.argsort(wids, kind="stable")
    ranked = wids[order]
    starts = numpy.flatnonzero(numpy.r_[True, ranked[1:] != ranked[:-1]])
    within = numpy.empty(n, dtype=numpy.int64)
    within[order] = numpy.arange(n) - numpy.repeat(starts, numpy.diff(numpy.r_[starts, n]))
    seen_at = seen[wids] + within + 1
    numpy.add.at(seen, wids, 1)
    positions = numpy.flatnonzero(draws)
    rand = sample.random
    slots = (
        numpy.fromiter((rand() for _ in range(len(positions))), float, len(positions)) * seen_at[positions]
    ).astype(numpy.int64)
    keep = slots < caps[wids[positions]]
    for j, slot in zip(positions[keep].tolist(), slots[keep].tolist()):
        k = int(wids[j])
        if place(k, slot, int(digests[j])):
            winners[offsets[k] + slot] = base_id | j


def count_words_dask(
    client: Any, paths: Union[PathLike, Iterable[PathLike]], lowercase: bool, errors: str = "raise"
) -> Tuple[List[Path], Counter, int]:
    """Pass 1 on a Dask bag: the usable files (corpus order), the word counts, the line count."""
    import dask.bag as db

    if errors not in ("raise", "skip"):
        raise ValueError(Errors.E213.format(errors=errors))
    files = [str(p.resolve()) for p in expand_paths(paths)]
    if not files:
        raise ValueError(Errors.E214.format(what="no files", paths=paths))
    bag = db.from_sequence(files, partition_size=1).map(count_file, lowercase=lowercase, errors=errors)
    results = client.compute(bag).result()
    good, counts, n_lines = [], Counter(), 0
    for path, file_counts, file_lines, skipped in results:  # bag order is corpus order
        if skipped is not None:
            warnings.warn(Warnings.W006.format(reason=skipped))
            continue
        good.append(Path(path))
        counts.update(file_counts)
        n_lines += file_lines
    if not good:
        raise ValueError(Errors.E214.format(what="no readable text files", paths=files))
    if not counts:
        raise ValueError(Errors.E214.format(what="no words found", paths=[str(p) for p in good]))
    return good, counts, n_lines


def build_context_store_dask(
    client: Any,
    files: Sequence[Path],
    path: PathLike,
    counts: Dict[str, int],
    caps: Dict[str, int],
    lowercase: bool,
    window: int,
    seed: int = 0,
    extra_meta: Optional[Dict[str, object]] = None,
    progress: bool = True,
) -> Path:
    """Pass 2 on the cluster; the store is the one `build_context_store` writes for the same files."""
    import dask
    import dask.bag as db
    from distributed import as_completed

    plan = StorePlan.make(counts, caps)
    names = [str(f) for f in files]
    slot_of = dask.delayed(plan.slot_of, traverse=False)
    offers = db.from_sequence(names, partition_size=1).map(file_offers, lowercase, window, slot_of)
    futures = client.compute(offers.to_delayed())

    def fill(sample: _Reservoirs) -> None:
        winners = array("q", [-1]) * sample.offsets[-1]
        offsets, caps = sample.offsets, numpy.asarray(sample.caps, dtype=numpy.int64)
        for index, future in enumerate(
            progress_bar(futures, progress=progress, desc="Sampling contexts", unit=" files")
        ):
            ((wids, digests),) = future.result()
            future.release()
            replay_file(sample, caps, wids, digests, index << FILE_SHIFT, winners)
        wanted: Dict[int, List[Tuple[int, int, int]]] = {}
        mask = (1 << FILE_SHIFT) - 1
        for k in range(len(sample.caps)):
            for slot in range(sample.stored[k]):
                occurrence = winners[offsets[k] + slot]
                wanted.setdefault(occurrence >> FILE_SHIFT, []).append((occurrence & mask, k, slot))
        slots = client.scatter(plan.slot_of, broadcast=True)
        jobs = [
            client.submit(file_contexts, names[i], lowercase, window, slots, items, pure=False)
            for i, items in sorted(wanted.items())
        ]
        for future in progress_bar(
            as_completed(jobs), progress=progress, total=len(jobs), desc="Cutting contexts", unit=" files"
        ):
            for k, slot, context in future.result():
                sample.add(k, slot, context)
            future.release()

    return write_context_store(path, plan, fill, lowercase, window, seed, extra_meta=extra_meta)
