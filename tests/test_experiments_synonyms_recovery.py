"""bertram_experiments/synonyms/recovery.py and synonym_systems.py: cosine, rank and hits@10 of the replaced word's
embedding on a toy encoder with known answers, the clustered bootstrap, the systems, the command, the project."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy
import pytest
import srsly

from spacy_bertram.model.encoder import word_piece_ids
from bertram_experiments.intrinsic.similarity import SubwordMean
from bertram_experiments.synonyms.pairs import SynonymPair
from bertram_experiments.synonyms.recovery import BASELINE, compare, format_markdown, ranks, unit_rows
from bertram_experiments.synonyms.systems import pair_scores, whole_word_ids
from spacy_bertram.rarity.frequencies import WordfreqFrequencies
from spacy_bertram.rarity.rare_words import RareWordFinder, RareWordRule

from tests.util import SYNONYM_ROWS, invoke, needs_wordnet, write_synonym_set

ROOT = Path(__file__).parent.parent

#: The toy encoder's input embeddings (3 dimensions); every other row is zero.
TOY = {
    "fruit": (1, 0, 0),
    "kum": (0, 1, 0),
    "##qua": (0, 1, 0),
    "##t": (1, 0, 0),
    "apple": (1, 2, 0),
    "lemon": (0, 0, 1),
}


@pytest.fixture(scope="module")
def toy(tiny_bert_path):
    """The tiny BERT's tokenizer with embeddings by hand: kumquat = kum ##qua ##t, subword mean (1, 2, 0) / 3."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_path)
    embeddings = numpy.zeros((len(tokenizer), 3))
    for token, row in TOY.items():
        embeddings[tokenizer.convert_tokens_to_ids(token)] = row
    assert tokenizer.tokenize("kumquat") == ["kum", "##qua", "##t"]
    finder = RareWordFinder(
        RareWordRule(),
        WordfreqFrequencies("en"),
        lambda w: word_piece_ids(tokenizer, w),
        has_signal=lambda w: True,
        unk_id=tokenizer.unk_token_id,
    )
    return SubwordMean(tokenizer, embeddings), finder


def test_an_exact_vector_ranks_first_and_the_subword_mean_where_computed_by_hand(toy):
    """kumquat for fruit: the subword mean (1, 2, 0) / 3 has cosine 1/sqrt(5) to fruit (1, 0, 0); apple (1, 2, 0)
    is closer (cosine 1), and so is kum (2/sqrt(5)), one of kumquat's own pieces, which is left out: rank 2.
    kumquat for lemon (0, 0, 1): cosine 0, and every other whole word but kum ties or beats it: rank V - 1.
    A system that returns e(O) itself: cosine 1, rank 1."""
    subword, finder = toy
    pairs = [SynonymPair("kumquat", "fruit", "synonym"), SynonymPair("kumquat", "lemon", "synonym")]
    exact = subword.embeddings[[subword.tokenizer.convert_tokens_to_ids(p.original) for p in pairs]]
    vectors = {
        BASELINE: (numpy.arange(2), subword([(p.substitute, []) for p in pairs])),
        "exact": (numpy.arange(2), exact),
    }
    scores, size = pair_scores(pairs, vectors, subword, finder)
    vocabulary = whole_word_ids(subword.tokenizer, finder.word_pieces)
    assert size == len(vocabulary) > 100
    assert "kum" in subword.tokenizer.convert_ids_to_tokens(vocabulary)
    assert not {"##qua", "##t", "[UNK]", "[CLS]"} & set(subword.tokenizer.convert_ids_to_tokens(vocabulary))
    cosine, rank = scores[BASELINE]
    assert cosine == pytest.approx([1 / math.sqrt(5), 0.0]) and rank.tolist() == [2, size - 1]
    assert scores["exact"][0] == pytest.approx([1.0, 1.0]) and scores["exact"][1].tolist() == [1, 1]
    figures = compare(scores, ["fruit", "lemon"], n_resamples=200, seed=0)
    assert figures[BASELINE]["hits_at_10"] == 0.5 and figures[BASELINE]["median_rank"] == (2 + size - 1) / 2
    assert figures[BASELINE]["mrr"] == pytest.approx((1 / 2 + 1 / (size - 1)) / 2)
    assert figures["exact"]["hits_at_10"] == 1.0 and figures["exact"]["median_rank"] == 1
    assert figures["exact"]["gain"]["estimate"] == pytest.approx(1 - 1 / (2 * math.sqrt(5)))
    assert figures["exact"]["hits_gain"]["estimate"] == pytest.approx(0.5)
    # without leaving kumquat's own pieces out, kum would rank before fruit
    unit = unit_rows(subword.embeddings[vocabulary])
    column = vocabulary.index(subword.tokenizer.convert_tokens_to_ids("fruit"))
    assert ranks(subword([("kumquat", [])]), unit, [column], [[]]).tolist() == [3]
    assert ranks(numpy.zeros((1, 3)), unit, [column], [[]]).tolist() == [size]  # a zero vector ranks last


def test_the_ci_of_a_constant_gain_is_that_constant():
    cosine = numpy.array([0.1, 0.4, -0.2, 0.3, 0.0])
    rank = numpy.array([1, 50, 3, 12, 10])
    scores = {BASELINE: (cosine, rank), "shifted": (cosine + 0.25, rank), "better": (cosine, numpy.ones(5, int))}
    figures = compare(scores, ["a", "a", "b", "c", "c"], n_resamples=500, seed=3)
    gain = figures["shifted"]["gain"]
    assert (gain["estimate"], gain["low"], gain["high"]) == pytest.approx((0.25, 0.25, 0.25))
    assert not gain["no_difference"] and figures["shifted"]["hits_gain"]["estimate"] == 0
    assert figures["shifted"]["hits_gain"]["no_difference"]
    better = figures["better"]["hits_gain"]  # 2 of 5 pairs become hits; the clusters a and c hold them
    assert better["estimate"] == pytest.approx(0.4) and 0 <= better["low"] < 0.4 < better["high"] <= 1
    assert compare(scores, ["a", "a", "b", "c", "c"], n_resamples=500, seed=3) == figures


# -- the command on the tiny BERT -------------------------------------------------------------------


def run(bertram_assets, tmp_path, *options):
    rarified = write_synonym_set(tmp_path / "rarified", SYNONYM_ROWS)
    out = tmp_path / "synonyms.json"
    result = invoke(
        "synonym-recovery",
        bertram_assets["model"],
        "--rarified",
        rarified,
        "--store",
        bertram_assets["store"],
        "--output",
        out,
        "--bootstrap",
        200,
        *options,
    )
    return result, out


def test_the_command_scores_every_system_and_writes_the_json(bertram_assets, tmp_path):
    result, out = run(bertram_assets, tmp_path)
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text(encoding="utf8"))
    assert "| pairs | system | n | mean cosine | gain [95% CI] |" in result.output
    assert "| rarified: misspellings | bertram_text_store | 1 |" in result.output
    synonyms = metrics["subsets"]["synonym"]
    assert synonyms["n"] == 3 and synonyms["clusters"] == 3 and metrics["subsets"]["misspelling"]["n"] == 1
    assert list(synonyms["systems"]) == [
        "subword_mean",
        "bertram_form",
        "bertram_text",
        "bertram_text_store",
        "bertram_store",
    ]
    assert set(synonyms["systems"]["bertram_text"]["gain"]) >= {"estimate", "low", "high", "n_resamples"}
    rows = {row["substitute"]: row for row in metrics["pairs"]}
    assert set(rows) == {"kumquat", "tarantula", "lemno", "quokka"}
    # the store has contexts for kumquat, none for tarantula: its store vector is its form vector
    assert rows["kumquat"]["cosine"]["bertram_store"] != rows["kumquat"]["cosine"]["bertram_form"]
    assert rows["tarantula"]["cosine"]["bertram_store"] == rows["tarantula"]["cosine"]["bertram_form"]
    assert rows["tarantula"]["cosine"]["bertram_text"] != rows["tarantula"]["cosine"]["bertram_form"]
    assert all(1 <= rank <= metrics["vocabulary"] for row in rows.values() for rank in row["rank"].values())
    assert metrics["pairs_read"]["substitutions"] == 4 and metrics["contexts_per_word"] == 8
    assert all(line in result.output.splitlines() for line in format_markdown(metrics))


def test_the_text_systems_read_the_window_they_are_given(bertram_assets, tmp_path):
    """A 1-token window cuts the rarified text around the word (the component's doc rule); the form is untouched."""
    outputs = {}
    for window in ("1", "50"):
        result, out = run(bertram_assets, tmp_path / window, "--context-window", window)
        assert result.exit_code == 0, result.output
        outputs[window] = json.loads(out.read_text(encoding="utf8"))
        assert outputs[window]["context_window"] == int(window)
    narrow, wide = ({row["substitute"]: row["cosine"] for row in outputs[w]["pairs"]} for w in ("1", "50"))
    assert all(narrow[word]["bertram_form"] == wide[word]["bertram_form"] for word in narrow)
    assert any(narrow[word]["bertram_text"] != wide[word]["bertram_text"] for word in narrow)
    result, _ = run(bertram_assets, tmp_path / "bad", "--context-window", 0)
    assert result.exit_code == 2 and "Invalid value for '--context-window'" in result.output  # typer's min=


def test_folds_of_the_command_split_the_rare_words(bertram_assets, tmp_path):
    words = []
    for index in (0, 1):
        result, out = run(bertram_assets, tmp_path / str(index), "--fold", f"{index}/2")
        assert result.exit_code == 0, result.output
        metrics = json.loads(out.read_text(encoding="utf8"))
        assert metrics["fold"] == f"{index}/2" and f"Fold {index}/2 of the rare words." in result.output
        words.append({row["substitute"] for row in metrics["pairs"]})
    assert words[0] and words[1] and not words[0] & words[1]
    assert words[0] | words[1] == {"kumquat", "tarantula", "lemno", "quokka"}


def test_the_command_names_bad_input(bertram_assets, tmp_path):
    result = invoke("synonym-recovery", bertram_assets["model"])
    assert result.exit_code == 1 and "[E393]" in result.output
    result, _ = run(bertram_assets, tmp_path, "--bootstrap", 0)
    assert result.exit_code == 2 and "Invalid value for '--bootstrap'" in result.output  # up front (typer's min=)
    result, _ = run(bertram_assets, tmp_path, "--max-pairs", -2)
    assert result.exit_code == 2 and "Invalid value for '--max-pairs'" in result.output
    from bertram_experiments.synonyms.systems import evaluate_synonym_recovery

    with pytest.raises(ValueError, match=r"\[E394\] --bootstrap must be at least 1, got 0"):  # from Python too
        evaluate_synonym_recovery(bertram_assets["model"], wordnet=True, n_resamples=0)
    lonely = write_synonym_set(tmp_path / "lonely", [("the kumquat grows", 1, "kumquats", "kumquat", "synonym")])
    result = invoke("synonym-recovery", bertram_assets["model"], "--rarified", lonely)
    assert result.exit_code == 1 and "[E395]" in result.output and "original_not_one_wordpiece" in result.output


@needs_wordnet
@pytest.mark.slow
def test_the_command_adds_wordnet_pairs_with_store_contexts_only(bertram_assets, tmp_path):
    result, out = run(bertram_assets, tmp_path, "--wordnet", "--max-pairs", 40)
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text(encoding="utf8"))
    wordnet = metrics["subsets"]["wordnet"]
    assert wordnet["n"] == 40 < metrics["pairs_read"]["wordnet_pairs"]
    assert list(wordnet["systems"]) == ["subword_mean", "bertram_form", "bertram_store"]
    assert "| WordNet synonyms | bertram_store | 40 |" in result.output
    # WordNet alone: no pair has a text, so the text systems score nothing and are left out
    alone = tmp_path / "wordnet-only.json"
    result = invoke(
        "synonym-recovery",
        bertram_assets["model"],
        "--wordnet",
        "--max-pairs",
        40,
        "--store",
        bertram_assets["store"],
        "--output",
        alone,
        "--bootstrap",
        200,
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(alone.read_text(encoding="utf8"))
    assert list(metrics["subsets"]) == ["wordnet"] and metrics["subsets"]["wordnet"]["n"] == 40
    assert list(metrics["subsets"]["wordnet"]["systems"]) == ["subword_mean", "bertram_form", "bertram_store"]


def test_the_project_runs_the_step_and_reports_it():
    project = srsly.read_yaml(ROOT / "project.yml")
    steps = project["workflows"]["all"]
    assert steps.index("intrinsic") < steps.index("synonyms") < steps.index("report")
    command = next(c for c in project["commands"] if c["name"] == "synonyms")
    assert command["outputs"] == ["metrics/synonyms.json"]
    script = " ".join(command["script"])
    for dep in command["deps"]:
        assert dep.rsplit("/test.jsonl", 1)[0] in script, dep
    help_text = invoke("synonym-recovery", "--help").output
    options = [word for word in script.split() if word.startswith("--")]
    assert {"--rarified", "--wordnet", "--store", "--max-pairs", "--gpu-id"} <= set(options)
    assert all(option in help_text for option in options)
    report = next(c for c in project["commands"] if c["name"] == "report")
    assert "--synonyms metrics/synonyms.json" in " ".join(report["script"])
    assert "metrics/synonyms.json" in report["deps"]
