"""training/dask_prepare.py: the Dask prepare equals the single-machine one."""

from __future__ import annotations

import pytest

from spacy_bertram.training.prepare import prepare


def _store_rows(path):
    import sqlite3

    with sqlite3.connect(str(path)) as conn:
        return {
            table: list(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")) for table in ("meta", "words", "contexts")
        }


@pytest.mark.parametrize("caps", [(5, 3), (30, 12)])  # reservoirs full in the first file, or later
def test_dask_prepare_equals_single_machine_prepare(tmp_path, caps):
    """Counts and sampled contexts from a Dask bag over many files = the single-machine store."""
    import random

    distributed = pytest.importorskip("distributed")
    rng = random.Random(0)
    vocab = [f"w{i}" for i in range(40)] + ["kumquat", "Quokka", "the", "a"]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for f in range(5):
        lines = [
            " ".join(rng.choices(vocab, weights=range(len(vocab), 0, -1), k=rng.randint(3, 30))) for _ in range(60)
        ]
        lines += lines[:10]  # repeated lines: de-duplicated contexts
        (corpus / f"part{f}.txt").write_text("\n".join(lines) + "\n\n", encoding="utf8")
    settings = dict(
        min_count=40, max_contexts=caps[0], rare_max_contexts=caps[1], context_words=4, seed=7, progress=False
    )
    single = prepare(corpus, tmp_path / "single", **settings)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        spread = prepare(corpus, tmp_path / "dask", client=client, **settings)
        prepare(corpus, tmp_path / "seed8", client=client, **{**settings, "seed": 8})
    assert (spread.total_words, spread.vocab_size, spread.lines, spread.files) == (
        single.total_words,
        single.vocab_size,
        single.lines,
        5,
    )
    assert (tmp_path / "dask" / "counts.tsv").read_bytes() == (tmp_path / "single" / "counts.tsv").read_bytes()
    ours, theirs = (
        _store_rows(tmp_path / "dask" / "contexts.sqlite"),
        _store_rows(tmp_path / "single" / "contexts.sqlite"),
    )
    assert ours == theirs and len(theirs["contexts"]) > 150
    assert any(n > caps[0] for _, _, n, _ in theirs["words"])  # reservoirs were full: the random stream mattered
    assert _store_rows(tmp_path / "seed8" / "contexts.sqlite")["contexts"] != theirs["contexts"]
