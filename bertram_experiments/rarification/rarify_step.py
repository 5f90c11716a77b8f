"""The rarify step: the trained baseline guides `rarify` over the test candidates, resumably.

The baseline textcat (its probabilities, one column per label) is the classifier
that decides which words to mask. The expensive, seed-free half (`masking`) runs
over chunks of candidates whose results are saved as they finish, so a killed run
resumes where it stopped with identical results, and every rarification seed
reuses the same chunks; the seeded half (substitutes) runs per seed. Output:
train/dev/test.spacy and test.jsonl (`rarify.write_rarified_dataset`) plus
rarify.json with the counts of what was kept and skipped; further seeds' test
sets in OUTPUT/seed-N (`seed_sets`).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Union

from spacy_bertram import CountTable, open_context_store
from spacy_bertram.project_support import (
    COUNTS_FILE,
    PathLike,
    load_wordnet,
    progress_bar,
    use_device,
    word_piece_ids,
    write_json_atomic,
)
from ..errors import Errors
from ..outputs import RARIFY_OUTPUTS
from .datasets import read_records
from .masking import MaskingResult, mask_candidates, substitute_masked
from ..pipelines import load_textcat, make_classifier, pipeline_tokenizer, textcat_labels
from .rarify import spacy_tagger, write_rarified_dataset, write_substitutions_jsonl
from .records import Record, write_docbin
from .seed_sets import parse_seeds, remove_unlisted, seed_set_name
from .substitution import DEFAULT_RARIFY_MAX_ZIPF, SubstitutionDictionary, substitute_rarity


def load_count_table(path: PathLike, lang: str = "en") -> CountTable:
    """The word counts rarification reads: `prepare`'s counts.tsv ("word<TAB>count"), its
    directory, or a context store; words they lack are estimated from wordfreq for `lang`."""
    path = Path(path)
    if path.is_dir():
        path = path / COUNTS_FILE
    if path.suffix in (".sqlite", ".db"):
        with open_context_store(path) as store:
            return CountTable(dict(store.counts(min_count=1)), unseen=lang)
    if not path.is_file():
        raise ValueError(Errors.E366.format(path=path))
    return CountTable.from_file(path, unseen=lang)


def _bucket_counts(values: Sequence[float], edges: Sequence[float], labels: Sequence[str]) -> Dict[str, int]:
    """How many values fall in each bucket [edges[k], edges[k+1])."""
    out = {label: 0 for label in labels}
    for value in values:
        for k, label in enumerate(labels):
            if edges[k] <= value < edges[k + 1]:
                out[label] += 1
                break
    return out


def substitute_statistics(items: Sequence[Any], table: CountTable) -> Dict[str, Any]:
    """The substitutes of a rarified set on the encoder's scale: wordpieces, Zipf and how
    often the corpus behind the context store has them (contexts available)."""
    subs = [sub for item in items for sub in item.substitutions]
    pieces = [float(sub.wordpieces or 0) for sub in subs]
    zipfs = [float(sub.zipf or 0.0) for sub in subs]
    corpus = [float(table.count(sub.substitute)) for sub in subs]
    inf = float("inf")
    return {
        "n": len(subs),
        "wordpieces": _bucket_counts(pieces, [0, 2, 3, 4, inf], ["1", "2", "3", "4+"]),
        "zipf": _bucket_counts(zipfs, [0, 0.001, 1, 2, 3, inf], ["unlisted", "(0,1)", "[1,2)", "[2,3)", "3+"]),
        "corpus_occurrences": _bucket_counts(corpus, [0, 1, 4, 16, inf], ["0", "1-3", "4-15", "16+"]),
    }


def _settings_key(settings: Dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(settings, sort_keys=True).encode("utf8")).hexdigest()[:12]


def directory_fingerprint(path: PathLike) -> str:
    """Names, sizes and modification times of every file below `path` (or of the file
    `path`): a retrained model at the same path gets a new fingerprint, so stale
    partial results are not reused."""
    digest = hashlib.sha1()
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for file in files:
        stat = file.stat()
        name = file.name if file == root else file.relative_to(root)
        digest.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns};".encode("utf8"))
    return digest.hexdigest()


def mask_in_chunks(
    candidates: Sequence[Record],
    classify,
    labels: Sequence[str],
    subs,
    tagger,
    partial_dir: PathLike,
    chunk_size: int = 25,
    max_masks: int = 5,
    batch_size: int = 64,
    progress: bool = True,
):
    """`masking.mask_candidates` (the seed-free half of rarification) over chunks of
    candidates, each chunk's result saved in `partial_dir` as it finishes; chunks
    found there are loaded, not recomputed."""
    partial = Path(partial_dir)
    partial.mkdir(parents=True, exist_ok=True)
    total = MaskingResult()
    bar = progress_bar(progress=progress, total=len(candidates), desc="Masking", unit=" items")
    for k in range(0, len(candidates), chunk_size):
        chunk = candidates[k : k + chunk_size]
        path = partial / f"chunk-{k // chunk_size:05d}.json"
        if path.is_file():
            result = MaskingResult.from_dict(json.loads(path.read_text(encoding="utf8")))
        else:
            result = mask_candidates(
                list(chunk), classify, labels, subs, tagger=tagger, max_masks=max_masks, batch_size=batch_size
            )
            write_json_atomic(path, result.to_dict(), indent=None, overwrite=True)
        total.extend(result)
        bar.update(len(chunk))
        bar.set_postfix(items=len(total.items))
    bar.close()
    return total


def run_rarification(
    model_dir: PathLike,
    splits_dir: PathLike,
    output_dir: PathLike,
    counts: PathLike,
    max_zipf: float = DEFAULT_RARIFY_MAX_ZIPF,
    max_candidates: Optional[int] = None,
    max_masks: int = 5,
    misspelling_rate: float = 0.1,
    seed: Union[int, str, Sequence[int]] = 0,
    gpu_id: int = -1,
    chunk_size: int = 25,
    wordnet_dir: Optional[PathLike] = None,
    batch_size: int = 64,
    progress: bool = True,
) -> Dict[str, Any]:
    """Rarify the test candidates in `splits_dir` with the baseline at `model_dir`.

    Several seeds ("0,1,2") share one masking pass: the first seed's set goes to
    `output_dir`, each further one's to `output_dir/seed-N` (see `seed_sets`).
    """
    start = time.time()
    seeds = parse_seeds(seed)
    splits = Path(splits_dir)
    out = Path(output_dir)
    train, dev, candidates = (read_records(splits / n) for n in ("train.jsonl", "dev.jsonl", "test_candidates.jsonl"))
    if max_candidates:
        candidates = candidates[:max_candidates]
    use_device(gpu_id)  # spaCy/thinc on the GPU too (a named error for a bad id or a missing CuPy)
    table = load_count_table(counts)
    # WordNet next: its absence is the likeliest set-up problem, say so before any work.
    wordnet = load_wordnet(wordnet_dir, command="rarify")
    nlp = load_textcat(model_dir)
    labels = textcat_labels(nlp)
    tokenizer = pipeline_tokenizer(nlp)
    rarity = substitute_rarity(
        max_zipf, table if table.counts else None, lambda word: word_piece_ids(tokenizer, word), tokenizer.unk_token_id
    )
    subs = SubstitutionDictionary(table, wordnet=wordnet, rarity=rarity)
    # No seed in the key: masking is seed-free, so every seed reuses the same chunks.
    settings = {
        "format": "masking-2",
        "model": directory_fingerprint(model_dir),
        "max_zipf": max_zipf,
        "max_masks": max_masks,
        "counts": directory_fingerprint(counts),
        "candidates": hashlib.sha1(json.dumps([r.to_dict() for r in candidates]).encode("utf8")).hexdigest(),
    }
    masking = mask_in_chunks(
        candidates,
        make_classifier(nlp, batch_size),
        labels,
        subs,
        spacy_tagger(),
        out / ".partial" / _settings_key(settings),
        chunk_size,
        max_masks,
        batch_size,
        progress,
    )
    if not masking.items:
        raise ValueError(Errors.E367.format(n_candidates=len(candidates), counts=masking.counts()))
    masking_seconds = round(time.time() - start, 2)
    extra = [seed_set_name(s) for s in seeds[1:]]
    summaries = []
    for k, s in enumerate(seeds):
        t0 = time.time()
        total = substitute_masked(masking, subs, s, misspelling_rate)
        target = out if k == 0 else out / seed_set_name(s)
        if k == 0:
            write_rarified_dataset(out, train, dev, total.items, labels)
        else:  # train / dev are the same for every seed: only the test set is written
            write_docbin(target / "test.spacy", [Record(it.text, it.label, it.id) for it in total.items], labels)
            write_substitutions_jsonl(target / "test.jsonl", total.items)
        kinds = [sub.kind for it in total.items for sub in it.substitutions]
        summaries.append(
            (
                target,
                {
                    **total.summary(),
                    "labels": labels,
                    "max_zipf": max_zipf,
                    "max_masks": max_masks,
                    "misspelling_rate": misspelling_rate,
                    "seed": s,
                    "gpu_id": gpu_id,
                    "substitutions": len(kinds),
                    "synonyms": kinds.count("synonym"),
                    "misspellings": kinds.count("misspelling"),
                    "mean_masks": round(len(kinds) / len(total.items), 2),
                    "substitutes": substitute_statistics(total.items, table),
                    "seconds_substitution": round(time.time() - t0, 2),
                },
            )
        )
    remove_unlisted(out, extra, RARIFY_OUTPUTS)
    for k, (target, summary) in enumerate(summaries):
        if k == 0:  # the first set carries the whole step's time and lists the others
            summary.update(
                seeds=seeds, seed_sets=extra, seconds_masking=masking_seconds, seconds=round(time.time() - start, 2)
            )
        write_json_atomic(target / "rarify.json", summary, overwrite=True)
    return summaries[0][1]


__all__ = ["directory_fingerprint", "load_count_table", "mask_in_chunks", "run_rarification"]
