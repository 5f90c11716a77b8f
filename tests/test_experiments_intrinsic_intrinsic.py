"""bertram_experiments/intrinsic/intrinsic.py: the intrinsic evaluation on real rare words: Card reader use, paired
bootstrap, command, project."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy
import pytest
import srsly
from scipy.stats import spearmanr
from typer.testing import CliRunner

from spacy_bertram import create_bertram, load_bertram, save_bertram
from spacy_bertram.model.inputs import NgramVocab
from bertram_experiments.bootstrap import paired_difference as paired_bootstrap
from bertram_experiments.intrinsic.intrinsic import (
    evaluate_intrinsic,
    format_table,
    fed_contexts_per_word,
    fed_vectors,
    windowed_contexts,
    normalised_mix,
)
from bertram_experiments.intrinsic.rare_sets import parse_chimera_line, read_card
from bertram_experiments.intrinsic.similarity import spearman_rho

from tests.util import CHIMERA_L2, PROBES, TINY_TEXT, invoke


ROOT = Path(__file__).parent.parent
runner = CliRunner()

CRW_PAIRS = [
    ("fruit", "kumquat", 8.0),
    ("dog", "kumquats", 1.0),
    ("lemon", "oranges", 7.5),
    ("road", "gardener", 2.0),
    ("apple", "sweetest", 5.0),
    ("tree", "farmers", 4.0),
    ("sell", "market", 3.0),
]
CARD_LINES = [
    "fruit\tkumquat\t3.5",
    "Pocket_Monsters\tpokemon\t3.8",
    "black-and-white\tcolor\t2",
    "1080p\tvideo\t1",
    "apple\tlemon\t2.5",
    "dog\tfox\t2.0",
    "sea\triver\t1.5",
]
CHIMERA_L4 = [
    f"7\tthe ___ grew in the garden @@ a ___ is sweet @@ we eat ___ @@ the ___ is red\t{PROBES}\t3,1,2,1,3,2",
    f"8\tthe ___ ran @@ the ___ ate food @@ a big ___ @@ the ___ saw a cat\t{PROBES}\t1,3,1,1,1,1.5",
    f"9\tthe ___ sold fruit @@ a ___ at the market @@ the ___ @@ ___ and a farm\t{PROBES}\t1,1,1,1,1.5,1",
]


@pytest.fixture(scope="module")
def data(tiny_bert_path, tmp_path_factory):
    """A tiny model and tiny CRW, Card-660 and Chimera sets."""
    import torch

    root = tmp_path_factory.mktemp("intrinsic")
    crw = root / "crw"
    (crw / "contexts").mkdir(parents=True)
    (crw / "pairs.tsv").write_text("".join(f"{a}\t{b}\t{s}\n" for a, b, s in CRW_PAIRS), encoding="utf8")
    for i, (_, rare, _) in enumerate(CRW_PAIRS[:5]):  # farmers and market have no file: form vector
        lines = [f"the farmer sold a {rare} at the market", f"we like the {rare} .", f"a {rare} is small"]
        (crw / "contexts" / f"{rare}.txt").write_text("\n".join(lines * (i + 1)) + "\n", encoding="utf8")
    (root / "card.tsv").write_text("\n".join(CARD_LINES) + "\n", encoding="utf8")
    chimera = root / "chimera"
    chimera.mkdir()
    (chimera / "dataset.l2.fixed.train.txt").write_text("\n".join(CHIMERA_L2) + "\n", encoding="utf8")
    (chimera / "dataset.l4.fixed.test.txt").write_text("\n".join(CHIMERA_L4) + "\n", encoding="utf8")
    (chimera / "README.md").write_text("not a data file\n", encoding="utf8")
    vocab = NgramVocab.from_words([w for line in TINY_TEXT for w in line.split()], min_count=1)
    torch.manual_seed(0)
    network = create_bertram(tiny_bert_path, ngram_vocab=vocab, mode="add", max_seq_length=32)
    with torch.no_grad():  # away from the identity/zero init, so BERTRAM differs from the subword mean
        for param in network.bertram_state_dict().values():
            param.add_(0.1 * torch.randn_like(param))
    save_bertram(network, root / "model")
    return root


def _subword_mean(network, word):
    table = network.encoder.get_input_embeddings().weight.detach().numpy().astype(float)
    return table[network.inputs.tokenizer(word, add_special_tokens=False)["input_ids"]].mean(axis=0)


def _cos(a, b):
    return float(numpy.dot(a, b) / numpy.linalg.norm(a) / numpy.linalg.norm(b))


def _rho_by_ranks(x, y):
    """Spearman without ties: 1 - 6 sum d^2 / (n (n^2 - 1))."""
    assert len(set(x)) == len(x) and len(set(y)) == len(y)
    rx, ry = numpy.argsort(numpy.argsort(x)), numpy.argsort(numpy.argsort(y))
    n = len(x)
    return 1 - 6 * float(((rx - ry) ** 2).sum()) / (n * (n * n - 1))


def _rho_rows(rows):
    return spearman_rho(rows[:, 0], rows[:, 1])


def test_paired_bootstrap_known_answers():
    rng = numpy.random.default_rng(1)
    human = rng.normal(size=60)
    base = human + rng.normal(scale=2.0, size=60)
    a = numpy.column_stack([human, base])
    ci = paired_bootstrap(_rho_rows, a, a.copy(), n_resamples=300)
    assert (ci.estimate, ci.low, ci.high) == (0.0, 0.0, 0.0)
    monotone = numpy.column_stack([human, numpy.exp(3 * base)])  # same ranks, different values
    ci = paired_bootstrap(_rho_rows, monotone, a, n_resamples=300)
    assert (ci.estimate, ci.low, ci.high) == (0.0, 0.0, 0.0)
    better = numpy.column_stack([human, human + rng.normal(scale=0.2, size=60)])
    ci = paired_bootstrap(_rho_rows, better, a, n_resamples=500, seed=3)
    assert ci.low > 0 and ci.low <= ci.estimate <= ci.high and not ci.contains_zero
    assert paired_bootstrap(_rho_rows, better, a, n_resamples=500, seed=3) == ci
    assert paired_bootstrap(_rho_rows, better, a, n_resamples=500, seed=4) != ci
    worse = paired_bootstrap(_rho_rows, a, better, n_resamples=500, seed=3)
    assert worse.high < 0 and worse.estimate == pytest.approx(-ci.estimate)
    # generic: any statistic of per-item rows, e.g. accuracy of 0/1 correctness
    acc = paired_bootstrap(numpy.mean, numpy.ones(20), numpy.r_[numpy.ones(10), numpy.zeros(10)], n_resamples=200)
    assert acc.estimate == 0.5 and 0 < acc.low <= 0.5 <= acc.high <= 1
    with pytest.raises(AssertionError):
        paired_bootstrap(numpy.mean, numpy.ones(3), numpy.ones(4))


# ---------------------------------------------------------------- bootstrap


# -- readers ---------------------------------------------------------------------------


def test_card_keeps_single_alphabetic_words(data):
    card = read_card(data / "card.tsv")
    assert [p[:2] for p in card.pairs] == [("fruit", "kumquat"), ("apple", "lemon"), ("dog", "fox"), ("sea", "river")]
    assert card.dropped == {"multiword": 1, "not alphabetic": 2}
    assert card.dropped_examples["multiword"] == ["Pocket_Monsters / pokemon"]


def test_bad_inputs_name_file_and_line(data, tmp_path):
    model = data / "model"
    bad = tmp_path / "crw"
    (bad / "contexts").mkdir(parents=True)
    (bad / "pairs.tsv").write_text("fruit\tkumquat\t1\ndog\tfox\t2\napple\tlemon\thigh\n", encoding="utf8")
    result = invoke("intrinsic", model, "--crw", bad)
    assert result.exit_code == 1 and "pairs.tsv: line 3" in result.output and "'high'" in result.output
    (bad / "pairs.tsv").write_text("word1\tword2\tscore\nfruit\tkumquat\t1\n", encoding="utf8")  # no header allowed
    result = invoke("intrinsic", model, "--crw", bad)
    assert result.exit_code == 1 and "pairs.tsv: line 1" in result.output
    (bad / "pairs.tsv").write_text("fruit\tkumquat\t1\ndog\tfox\t2\n", encoding="utf8")  # no context file at all
    result = invoke("intrinsic", model, "--crw", bad)
    assert result.exit_code == 1 and "no rare word" in result.output and "<rare word>.txt" in result.output
    chim = tmp_path / "chim"
    chim.mkdir()
    lines = [CHIMERA_L2[0], CHIMERA_L2[1].rsplit(",", 1)[0]]  # 6 probes, 5 ratings
    (chim / "dataset.l2.fixed.test.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    result = invoke("intrinsic", model, "--chimera", chim)
    assert result.exit_code == 1
    assert "dataset.l2.fixed.test.txt: line 2: 6 probe words but 5 ratings" in result.output
    (chim / "dataset.l2.fixed.test.txt").write_text(CHIMERA_L2[0].replace("\t3,1,3", "\t3,x,3") + "\n")
    result = invoke("intrinsic", model, "--chimera", chim)
    assert result.exit_code == 1 and "line 1: ratings" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("intrinsic", model, "--chimera", empty)
    assert result.exit_code == 1 and "dataset.l{2,4,6}" in result.output


# -- the command -----------------------------------------------------------------------


def test_no_set_and_missing_sets(data, tmp_path):
    result = invoke("intrinsic", data / "model")
    assert result.exit_code == 1 and "at least one set" in result.output
    result = invoke("intrinsic", data / "model", "--crw", tmp_path / "nope")
    assert result.exit_code == 1 and "CRW: no such file or directory" in result.output
    out = tmp_path / "metrics" / "intrinsic.json"
    # skipped sets are reported, and nothing is loaded (the model's files are only checked to be there)
    result = invoke(
        "intrinsic",
        data / "model",
        "--crw",
        tmp_path / "nope",
        "--card",
        tmp_path / "no.tsv",
        "--chimera",
        tmp_path / "nochim",
        "--skip-missing",
        "--output",
        out,
    )
    assert result.exit_code == 0, result.output
    assert "python -m spacy project assets --extra" in result.output
    assert len(result.output.strip().splitlines()) == 1
    metrics = json.loads(out.read_text())
    assert set(metrics["missing"]) == {"crw", "card", "chimera"} and metrics["sets"] == {}
    assert [p.name for p in out.parent.iterdir()] == ["intrinsic.json"]  # written atomically, no temp left


def test_end_to_end_on_tiny_sets(data, tmp_path):
    out = tmp_path / "intrinsic.json"
    result = invoke(
        "intrinsic",
        data / "model",
        "--crw",
        data / "crw",
        "--card",
        data / "card.tsv",
        "--chimera",
        data / "chimera",
        "--output",
        out,
        "--bootstrap",
        200,
        "--seed",
        7,
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())
    assert metrics["bootstrap"] == 200 and metrics["seed"] == 7 and metrics["missing"] == {}
    crw = metrics["sets"]["crw"]
    assert crw["pairs"] == 7 and crw["rare_words_without_contexts"] == 2
    # the rule's subsets: multi-piece rare words below each candidate max_zipf (wordfreq), and above the last
    assert {s: c["n"] for s, c in crw["subsets"].items() if s.startswith(("rule", "multi_piece_"))} == {
        "rule_zipf<2.5": 2,
        "rule_zipf<3.0": 2,
        "rule_zipf<3.5": 4,
        "multi_piece_zipf>=3.5": 2,
    }
    systems = ["subword_mean", "bertram_form", "bertram_4", "bertram_16", "bertram_32", "slash_mix", "fed"]
    assert list(crw["subsets"]["all"]["systems"]) == systems
    assert crw["subsets"]["multi_piece"]["n"] == 6  # "market" is one wordpiece
    for cell in crw["subsets"].values():
        for name, entry in cell["systems"].items():
            assert entry["n"] == cell["n"]
            assert ("difference" in entry) == (name != "subword_mean")
    card = metrics["sets"]["card"]
    assert card["pairs"] == 4 and card["pairs_read"] == 7 and card["dropped"] == {"multiword": 1, "not alphabetic": 2}
    assert list(card["subsets"]["all"]["systems"]) == ["subword_mean", "bertram_form", "slash_mix_form"]
    chimera = metrics["sets"]["chimera"]
    assert chimera["files"] == {"l2.train": 4, "l4.test": 3}
    assert list(chimera["subsets"]) == ["l2.train", "l4.test", "all"]
    assert list(chimera["subsets"]["all"]["systems"]) == ["context_mean", "bertram_contexts"]
    # the printed table: every set and system, and a verdict for every difference
    for word in ("CRW", "Card-660", "Chimeras", "bertram_contexts", "slash_mix_form", "multi_piece", "l4.test"):
        assert word in result.output
    verdicts = [
        line
        for line in result.output.splitlines()
        if re.search(r"\| (no difference|higher|lower) \|( [^|]* \|){0,2}$", line)
    ]
    n_diffs = sum(max(0, len(c["systems"]) - 1) for s in metrics["sets"].values() for c in s["subsets"].values())
    assert len(verdicts) == n_diffs == 6 + 6 + 2 + 3 + 6  # CRW rule_zipf<3.5 is the one rule subset with 3+ pairs
    assert re.search(r"^\| multi_piece \| - \| 1 \| fewer than 3 items: not scored \|", result.output, re.M)
    assert format_table(metrics) == result.output


def test_scores_match_hand_computed_vectors(data):
    metrics = evaluate_intrinsic(data / "model", crw=data / "crw", chimera=data / "chimera", n_resamples=50)
    network = load_bertram(data / "model")
    human = [s for _, _, s in CRW_PAIRS]
    first = [_subword_mean(network, a) for a, _, _ in CRW_PAIRS]
    sub = [_cos(f, _subword_mean(network, b)) for f, (_, b, _) in zip(first, CRW_PAIRS)]
    cells = metrics["sets"]["crw"]["subsets"]["all"]["systems"]
    assert cells["subword_mean"]["spearman"] == pytest.approx(_rho_by_ranks(human, sub), abs=1e-9)
    contexts = {
        b: (data / "crw" / "contexts" / f"{b}.txt").read_text().split("\n") if i < 5 else []
        for i, (_, b, _) in enumerate(CRW_PAIRS)
    }
    contexts = {b: [c for c in lines if c] for b, lines in contexts.items()}
    rare = [b for _, b, _ in CRW_PAIRS]
    b4 = network.infer([(b, contexts[b][:4]) for b in rare])
    b16 = network.infer([(b, contexts[b][:16]) for b in rare])
    mixed = normalised_mix(numpy.stack([_subword_mean(network, b) for b in rare]), b16)
    for name, vectors in (("bertram_4", b4), ("slash_mix", mixed)):
        cos = [_cos(f, v) for f, v in zip(first, vectors)]
        assert cells[name]["spearman"] == pytest.approx(spearmanr(human, cos)[0], abs=1e-6), name
    # Chimeras: the baseline is the mean input embedding of the passage's words, nonce left out
    item = parse_chimera_line(CHIMERA_L2[0], "l2")
    vector = _subword_mean(network, item.context_text)
    rho = spearmanr(item.ratings, [_cos(vector, _subword_mean(network, p)) for p in item.probes])[0]
    rhos = [rho]
    for line in CHIMERA_L2[1:]:
        item = parse_chimera_line(line, "l2")
        vector = _subword_mean(network, item.context_text)
        rhos.append(spearmanr(item.ratings, [_cos(vector, _subword_mean(network, p)) for p in item.probes])[0])
    l2 = metrics["sets"]["chimera"]["subsets"]["l2.train"]["systems"]["context_mean"]
    assert l2["spearman"] == pytest.approx(numpy.mean(rhos), abs=1e-9) and l2["n"] == 4
    # the item rows a paired comparison of two models reads: the same cosines and rhos
    rows = metrics["sets"]["crw"]["items"]
    assert [(r["word"], r["rare"], r["human"], r["occurrence"]) for r in rows] == [(*p, 0) for p in CRW_PAIRS]
    assert [r["cosine"]["subword_mean"] for r in rows] == pytest.approx(sub, abs=1e-9)
    assert set(rows[0]["cosine"]) == set(cells)
    chimera_rows = [r for r in metrics["sets"]["chimera"]["items"] if r["file"] == "l2.train"]
    assert [r["rho"]["context_mean"] for r in chimera_rows] == pytest.approx(rhos, abs=1e-9)
    assert [r["item"] for r in chimera_rows] == [parse_chimera_line(line, "l2").item_id for line in CHIMERA_L2]


def test_card_with_store_contexts_gets_the_context_systems(data, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "kumquat.txt").write_text("the farmer sold a kumquat\na kumquat is small\n", encoding="utf8")
    metrics = evaluate_intrinsic(data / "model", card=data / "card.tsv", store=store, n_resamples=50)
    card = metrics["sets"]["card"]
    assert card["rare_words_with_contexts"] == 1 and card["subsets"]["with_contexts"]["n"] == 1
    assert "not scored" in card["subsets"]["with_contexts"]["note"]
    assert {"bertram_16", "slash_mix", "fed", "slash_mix_form"} <= set(card["subsets"]["all"]["systems"])


def test_fed_is_what_the_component_puts_on_the_doc(data):
    """The component feeds infer's output unchanged, with its default number of contexts."""
    import spacy

    import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory)

    model = str(data / "model")
    network = load_bertram(model)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "bertram",
        config={
            "model": {"model_path": model, "base_model": network.config.base_model},
            "rare_words": {"frequencies": "wordfreq"},
            "contexts": "doc",  # `fed` is what the component puts on the doc with the doc's contexts
        },
    )
    text = "the farmer sold a Kumquat at the market"
    doc = nlp(text)
    index = [t.text for t in doc].index("Kumquat")
    assert index in doc._.bertram
    fed = fed_vectors(network, ["Kumquat"], {"Kumquat": [text]})[0]
    assert numpy.allclose(doc._.bertram[index], fed, atol=1e-6)
    assert fed_contexts_per_word() == nlp.get_pipe("bertram").word_sources.contexts_per_word


def test_windowed_contexts_cut_as_the_component_cuts_a_doc():
    contexts = {"kumquat": ["one two three a kumquat at the old market", "no such word here"]}
    assert windowed_contexts(contexts, 2) == {"kumquat": ["three a kumquat at the", "no such word here"]}


def test_fed_window_is_fed_with_cut_contexts_and_says_how_far_it_moved(data):
    metrics = evaluate_intrinsic(data / "model", crw=data / "crw", n_resamples=50, context_window=1)
    systems = metrics["sets"]["crw"]["subsets"]["all"]["systems"]
    assert metrics["context_window"] == 1 and {"vs_fed", "vs_form", "difference"} <= set(systems["fed_window"])
    wide = evaluate_intrinsic(data / "model", crw=data / "crw", n_resamples=50, context_window=500)
    same = wide["sets"]["crw"]["subsets"]["all"]["systems"]
    assert same["fed_window"]["spearman"] == pytest.approx(same["fed"]["spearman"])
    assert same["fed_window"]["vs_fed"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    assert "fed_window - fed (contexts cut to 500 tokens on each side)" in format_table(wide)


# -- the project -----------------------------------------------------------------------


def test_project_has_the_intrinsic_step_and_optional_assets():
    project = srsly.read_yaml(ROOT / "project.yml")
    steps = project["workflows"]["all"]
    assert steps.index("intrinsic") == steps.index("wordsim") + 1
    command = next(c for c in project["commands"] if c["name"] == "intrinsic")
    assert command["outputs"] == ["metrics/intrinsic.json"]
    assert "training/bertram/model" in command["deps"]
    script = " ".join(command["script"])
    assert "--skip-missing" in script and "--output metrics/intrinsic.json" in script
    assets = [a for a in project["assets"] if "git" in a]
    assert len(assets) == 3 and all(a.get("extra") and "needs internet" in a["description"] for a in assets)
    for asset in assets:
        assert asset["dest"] in script, asset["dest"]


@pytest.fixture()
def definitions(tmp_path):
    from spacy_bertram.dictionary.store import write_definition_store

    entries = {
        "kumquat": [("gcide", "kumquat: a small sweet orange fruit.", 0, 7)],
        "orange": [("wordnet", "orange: a round yellow to orange fruit.", 0, 6)],
        "lemon": [("wordnet", "lemon: a yellow sour fruit.", 0, 5)],
    }
    return write_definition_store(tmp_path / "definitions.sqlite", entries)


def test_definitions_add_two_systems_their_subset_and_coverage(data, definitions):
    metrics = evaluate_intrinsic(
        data / "model", crw=data / "crw", card=data / "card.tsv", dictionary=definitions, n_resamples=50
    )
    crw = metrics["sets"]["crw"]
    assert crw["definitions"] == {"rare_words": 7, "with_definitions": 3, "share": round(3 / 7, 4)}
    assert crw["subsets"]["with_definitions"]["n"] == 3  # kumquat, kumquats and oranges (by their lemmas)
    systems = crw["subsets"]["all"]["systems"]
    assert {"bertram_dict", "bertram_both"} <= set(systems)
    assert {name for name, entry in systems.items() if "vs_form" in entry} == {
        "bertram_4",
        "bertram_16",
        "bertram_32",
        "bertram_dict",
        "bertram_both",
        "fed",
    }
    card = metrics["sets"]["card"]  # no store: definitions alone
    assert card["definitions"]["with_definitions"] == 2 and "bertram_both" not in card["subsets"]["all"]["systems"]
    assert "bertram_dict" in card["subsets"]["all"]["systems"]


def test_definition_vectors_fall_back_to_the_form(data, definitions):
    from bertram_experiments.intrinsic.definition_contexts import load_definitions
    from bertram_experiments.intrinsic.intrinsic import rare_word_tables
    from bertram_experiments.intrinsic.similarity import SubwordMean

    network = load_bertram(data / "model")
    words = ["kumquats", "gardener"]
    defs = load_definitions(definitions, words)
    assert defs == {"kumquats": ["kumquats: a small sweet orange fruit."], "gardener": []}
    corpus = {"kumquats": ["we like the kumquats ."] * 20}
    tables = rare_word_tables(
        network, SubwordMean.from_model(network.encoder, network.inputs.tokenizer), words, corpus, definitions=defs
    )
    assert numpy.allclose(tables["bertram_dict"]["gardener"], tables["bertram_form"]["gardener"])
    # Definitions first, then the corpus contexts, distinct (chain_contexts, as the component mixes sources).
    expected = network.infer([("kumquats", defs["kumquats"] + ["we like the kumquats ."])])[0]
    assert numpy.allclose(tables["bertram_both"]["kumquats"], expected, atol=1e-5)


def test_two_folds_split_the_rare_words(data):
    folds = [evaluate_intrinsic(data / "model", crw=data / "crw", fold=f"{i}/2", n_resamples=20) for i in (0, 1)]
    assert [m["fold"] for m in folds] == ["0/2", "1/2"]
    assert sum(m["sets"]["crw"]["pairs"] for m in folds) == len(CRW_PAIRS)
    result = invoke("intrinsic", data / "model", "--crw", data / "crw", "--fold", "2/2")
    assert result.exit_code == 1 and "--fold '2/2'" in result.output


# -- the table -------------------------------------------------------------------------------


def test_table_says_when_the_model_caps_the_contexts():
    table = format_table({"sets": {}, "model_max_contexts": 16})
    assert "at most 16 contexts per word" in table and "bertram_32 used 16" in table
    assert "bertram_16" not in table


def _diff(estimate, low, high):
    return {"estimate": estimate, "low": low, "high": high, "no_difference": low <= 0 <= high}


def test_rows_give_the_difference_to_the_form_and_the_header_the_coverage():
    cell = {
        "n": 10,
        "systems": {
            "subword_mean": {"spearman": 0.3, "n": 10},
            "bertram_form": {"spearman": 0.2, "n": 10, "difference": _diff(-0.1, -0.2, 0.05)},
            "bertram_dict": {
                "spearman": 0.4,
                "n": 10,
                "difference": _diff(0.1, 0.02, 0.2),
                "vs_form": _diff(0.2, -0.01, 0.3),
            },
        },
    }
    crw = {
        "path": "crw",
        "pairs": 10,
        "rare_words": 8,
        "rare_words_without_contexts": 0,
        "baseline": "subword_mean",
        "definitions": {"rare_words": 8, "with_definitions": 5, "share": 0.625},
        "subsets": {"all": cell, "with_definitions": cell},
    }
    table = format_table({"sets": {"crw": crw}, "bootstrap": 100, "seed": 0, "fold": "1/2"})
    assert "\n| with_definitions | bertram_form | 10 |" in table and "\n| all | bertram_form | 10 |" in table
    assert "dictionary entries for 5 of 8 rare words" in table and "Fold 1/2 of the rare words." in table
    row = next(line for line in table.splitlines() if "bertram_dict" in line)
    assert row.endswith("| 0.400 | +0.100 [+0.020, +0.200] | higher | +0.200 [-0.010, +0.300] | no difference |")
