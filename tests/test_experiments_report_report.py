"""bertram_experiments/report/report.py: the report's tables, layout and similarity section."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from bertram_experiments.downstream.pooling import pool_files

from tests.util import _two_sets, _write_rarified


def test_report_puts_the_pooled_table_first(tmp_path: Path):
    from bertram_experiments.report.report import write_report

    _two_sets(tmp_path / "metrics")
    (tmp_path / "metrics" / "a" / "metrics.json").write_text(
        json.dumps({**json.loads((tmp_path / "metrics" / "a" / "metrics.json").read_text()), "seconds": 1.0})
    )
    pool_files(
        [tmp_path / "metrics" / "a", tmp_path / "metrics" / "b"], tmp_path / "metrics" / "pooled", n_resamples=200
    )
    text = write_report(
        tmp_path / "metrics" / "report.md",
        ["a", "b"],
        corpus_dir=tmp_path / "c",
        training_dir=tmp_path / "t",
        metrics_dir=tmp_path / "metrics",
        pooled=tmp_path / "metrics" / "pooled" / "pooled.json",
    ).read_text()
    pooled_at = text.index("## Pooled")
    assert pooled_at < text.index("## a\n") < text.index("## b\n")
    assert text.index("| bertram_slash | 6 | 100.0 | +50.0 [") > pooled_at
    assert "| a/seed-1 | bertram_slash | 2 | 100.0 |" in text
    assert "Further rarification seeds evaluated: seed-1" in text
    assert "| pool |" in text and "Named entities" not in text
    (tmp_path / "metrics" / "ner").mkdir()
    (tmp_path / "metrics" / "ner" / "report.md").write_text("## Named entities\n\n![F1](f1_by_rarity.png)\n")
    text = write_report(tmp_path / "metrics" / "report.md", ["a", "b"], metrics_dir=tmp_path / "metrics").read_text()
    assert "## Named entities\n\n![F1](ner/f1_by_rarity.png)" in text
    with pytest.raises(ValueError, match=r"\[E348\].*pool step"):
        write_report(tmp_path / "r.md", ["a"], metrics_dir=tmp_path / "metrics", pooled=tmp_path / "none.json")


def test_report_shows_the_table_and_missing_datasets(trained, bertram_assets, tmp_path):
    from bertram_experiments.downstream.downstream import evaluate_systems
    from bertram_experiments.report.report import write_report

    root = tmp_path / "run"
    _write_rarified(root / "corpus" / "tiny" / "rarified")
    evaluate_systems(
        trained["model"],
        root / "corpus" / "tiny" / "rarified",
        root / "metrics" / "tiny",
        bertram_path=bertram_assets["model"],
        context_store=bertram_assets["store"],
        systems=["baseline", "bertram_slash_store"],
        progress=False,
    )
    path = write_report(
        root / "metrics" / "report.md",
        ["tiny", "other"],
        corpus_dir=root / "corpus",
        training_dir=root / "training",
        metrics_dir=root / "metrics",
    )
    text = path.read_text()
    assert "| +BERTRAM (slash, store contexts) |" in text and "All (n=4)" in text
    assert "Not run: other" in text
    assert "![accuracy by frequency](tiny/accuracy_by_frequency.png)" in text
    with pytest.raises(ValueError, match=r"\[E371\].*has been evaluated"):
        write_report(tmp_path / "r.md", ["other"], metrics_dir=root / "metrics")
    warnings.simplefilter("default")


def test_report_layout_of_a_threshold_variant_shares_splits_and_baseline():
    from bertram_experiments.report.report import DatasetDirs

    plain, high = DatasetDirs.layout("bbc"), DatasetDirs.layout("bbc-1000")
    assert high.splits == plain.splits and high.baseline == plain.baseline
    assert high.rarified == Path("corpus") / "bbc" / "rarified-1000"
    assert high.metrics == Path("metrics") / "bbc-1000"
    assert DatasetDirs.layout("rotten_tomatoes").rarified == Path("corpus") / "rotten_tomatoes" / "rarified"


def test_report_similarity_section_lists_both_systems(tmp_path):
    from bertram_experiments.report.report import similarity_metrics, similarity_section

    assert similarity_section(similarity_metrics(tmp_path / "none")) == []
    (tmp_path / "wordsim").mkdir()
    result = {"bertram": {"spearman": 0.25}, "subword_mean": {"spearman": 0.125}, "n": 40}
    (tmp_path / "wordsim" / "simlex999.json").write_text(
        json.dumps({"results": {"all": result, "multi_piece": {"n": 1}}})
    )
    lines = similarity_section(similarity_metrics(tmp_path / "wordsim"))
    assert "| simlex999 | all pairs | 40 | 0.125 | 0.250 |" in lines
    assert not any("2+ wordpieces" in line for line in lines)


def test_report_puts_the_synonym_table_after_the_pooled_one(tmp_path: Path):
    import numpy

    from bertram_experiments.report.report import write_report
    from bertram_experiments.synonyms.recovery import compare

    _two_sets(tmp_path / "metrics")
    pool_files([tmp_path / "metrics" / "a"], tmp_path / "metrics" / "pooled", n_resamples=200)
    cosine, rank = numpy.array([0.1, 0.3, 0.2]), numpy.array([40, 2, 900])
    systems = compare(
        {"subword_mean": (cosine, rank), "bertram_form": (cosine + 0.5, numpy.array([1, 2, 3]))},
        ["x", "y", "z"],
        n_resamples=200,
        seed=0,
    )
    synonyms = tmp_path / "metrics" / "synonyms.json"
    synonyms.write_text(
        json.dumps(
            {
                "subsets": {"wordnet": {"n": 3, "clusters": 3, "systems": systems}},
                "vocabulary": 900,
                "bootstrap": 200,
                "seed": 0,
                "seconds": 12.0,
            }
        )
    )
    text = write_report(
        tmp_path / "report.md",
        ["a"],
        metrics_dir=tmp_path / "metrics",
        pooled=tmp_path / "metrics" / "pooled" / "pooled.json",
        synonyms=synonyms,
    ).read_text()
    assert text.index("## Pooled") < text.index("## Synonym recovery") < text.index("## a\n")
    assert "| WordNet synonyms | subword_mean | 3 | 0.200 |  | 33.3 |  | 40 |" in text
    assert "| WordNet synonyms | bertram_form | 3 | 0.700 | +0.500 [+0.500, +0.500] * | 100.0 | +66.7 [" in text
    assert "among 900 one-wordpiece alphabetic vocabulary entries" in text and "| synonym recovery | 12 |" in text
    text = write_report(
        tmp_path / "report.md", ["a"], metrics_dir=tmp_path / "metrics", synonyms=tmp_path / "none.json"
    ).read_text()
    assert "No synonym-recovery results at" in text and "the synonyms step has not run" in text
