"""training/vectors.py: building vector tables: word selection, in process and on a 2-worker LocalCluster, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest

from spacy_bertram import load_bertram
from spacy_bertram.context_store import ContextStore
from spacy_bertram.pipeline.vector_table import SHARDS_DIR, VectorTable, encoder_identity
from spacy_bertram.pipeline.word_sources import word_key_function
from spacy_bertram.model.storage import model_fingerprint
from spacy_bertram.training.prepare import prepare
from spacy_bertram.training.vectors import build_vector_table, read_word_list, select_words

from tests.util import make_bertram_dir


ROOT = Path(__file__).resolve().parents[1]
RARE = ["kumquat", "quokka", "tarantula", "zorbing", "kumquats"]
LINES = [
    f"the {adj} farmer saw a {word} near the {place} and {verb} it"
    for i, (word, adj, place, verb) in enumerate(
        (w, a, p, v)
        for w in RARE
        for a in ("old", "small", "good", "new")
        for p, v in (("market", "liked"), ("river", "sold"), ("garden", "ate"))
    )
]


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("vectors-store")
    (directory / "corpus.txt").write_text("\n".join(LINES) + "\n", encoding="utf8")
    prepare(
        directory / "corpus.txt", directory / "out", min_count=30, max_contexts=4, rare_max_contexts=6, progress=False
    )
    return directory / "out"


@pytest.fixture(scope="module")
def model_dir(tiny_bert_path, tmp_path_factory) -> str:
    return make_bertram_dir(tmp_path_factory.mktemp("vectors-model") / "model", tiny_bert_path)


def reference(model_dir: str, store_dir: Path, words, max_contexts: int) -> numpy.ndarray:
    """What a single process gets from `network.infer` on the words' store contexts."""
    network = load_bertram(model_dir)
    with ContextStore.open(store_dir / "contexts.sqlite") as store:
        return network.infer([(w, store.contexts(w, limit=max_contexts)) for w in words])


def test_table_round_trips_and_refuses_another_model(model_dir, tmp_path):
    network = load_bertram(model_dir)
    encoder = encoder_identity(network)
    rows = numpy.arange(12, dtype="float32").reshape(3, 4) / 7
    table = VectorTable(["kumquat", "quokka", "zorbing"], rows, {"model_id": "abc", "encoder": encoder})
    assert numpy.array_equal(table.get("quokka"), rows[1]) and table.get("apple") is None
    table.to_disk(tmp_path / "t")
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["table.json", "vectors.safetensors"]
    for loaded in (VectorTable.from_disk(tmp_path / "t"), VectorTable.from_bytes(table.to_bytes())):
        assert loaded.words == table.words and numpy.array_equal(loaded.vectors, rows)
        assert loaded.vectors.dtype == numpy.float32 and loaded.meta == table.meta
    table.check_model("abc", encoder)
    with pytest.raises(ValueError, match=r"\[E130\].*another BERTRAM model"):
        table.check_model("other", encoder)
    with pytest.raises(ValueError, match=r"\[E131\].*another encoder.*embedding_digest"):
        table.check_model("abc", {**encoder, "embedding_digest": "0" * 32})
    with pytest.raises(ValueError, match=r"\[E129\].*occurs twice"):
        VectorTable(["a", "a"], rows[:2], {})
    with pytest.raises(ValueError, match=r"\[E128\].*non-finite"):
        VectorTable(["a"], numpy.full((1, 4), numpy.nan, "float32"), {})
    (tmp_path / "t" / "table.json").write_text("{}", encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E135\] Not a spacy-bertram-vector-table"):
        VectorTable.from_disk(tmp_path / "t")


def test_word_selection_by_count_range_and_word_list(model_dir, store_dir, tmp_path):
    network = load_bertram(model_dir)
    key = word_key_function(network)
    with ContextStore.open(store_dir / "contexts.sqlite") as store:
        assert store.count("kumquat") == 12 and store.count("the") == 120
        rare = select_words(store, key, min_count=1, max_count=30)
        counts = dict(store.counts())
        assert set(RARE) <= set(rare) and len(rare) == 15 and all(1 <= counts[w] < 30 for w in rare)
        assert [counts[w] for w in rare] == sorted((counts[w] for w in rare), reverse=True)  # most frequent first
        assert select_words(store, key, min_count=13, max_count=30) == rare[:10]  # not the 12-count words
        (tmp_path / "words.txt").write_text("# my domain\nQuokka\t7\nunseenword\nkumquat\nthe\n", encoding="utf8")
        listed = read_word_list(tmp_path / "words.txt")
        assert listed == ["Quokka", "unseenword", "kumquat", "the"]
        # In range and with store contexts, keyed as the component keys tokens (cased for this network).
        with pytest.warns(
            UserWarning, match=r"\[W011\] 1 word\(s\) of the word list are not in the context store"
        ) as said:
            assert key is str and select_words(store, key, 1, 30, listed) == ["Quokka", "kumquat"]
        # "the" is out of the count range (by design, silent); "unseenword" is not in the store: said
        message = str(said[0].message)
        assert message.count("unseenword") == 1 and not message.endswith("the")
        assert select_words(store, str.lower, 1, None, listed) == ["quokka", "kumquat", "the"]
    with pytest.raises(ValueError, match=r"\[E261\].*must be above"):
        select_words(store, key, 5, 5)


def test_vectors_in_process_equal_single_process_infer(model_dir, store_dir, tmp_path):
    out = tmp_path / "table"
    summary = build_vector_table(
        model_dir,
        store_dir / "contexts.sqlite",
        out,
        max_count=30,
        max_contexts=3,
        shard_size=4,
        workers=0,
        progress=False,
    )
    table = VectorTable.from_disk(out)
    assert summary["words"] == len(table) == summary["computed_words"] and summary["shards"] == -(-len(table) // 4)
    assert not (out / SHARDS_DIR).exists()
    expected = reference(model_dir, store_dir, table.words, 3)
    assert numpy.allclose(table.vectors, expected, atol=1e-5) and numpy.abs(expected).max() > 0.01
    assert table.model_id == model_fingerprint(model_dir) and table.meta["max_contexts"] == 3
    assert table.meta["encoder"] == encoder_identity(load_bertram(model_dir)) and table.meta["word_key"] == "cased"
    again = build_vector_table(
        model_dir,
        store_dir / "contexts.sqlite",
        out,
        max_count=30,
        max_contexts=3,
        shard_size=4,
        workers=0,
        progress=False,
    )
    assert again["already_done"] and again["computed_shards"] == 0
    with pytest.raises(ValueError, match=r"\[E266\].*a vector table of another model, words or settings.*--force"):
        build_vector_table(
            model_dir,
            store_dir / "contexts.sqlite",
            out,
            max_count=30,
            max_contexts=2,
            shard_size=4,
            workers=0,
            progress=False,
        )
    (out / "notes.txt").write_text("mine")
    other = build_vector_table(
        model_dir,
        store_dir / "contexts.sqlite",
        out,
        max_count=30,
        max_contexts=2,
        shard_size=4,
        workers=0,
        progress=False,
        force=True,
    )
    assert not other.get("already_done") and VectorTable.from_disk(out).meta["max_contexts"] == 2
    assert (out / "notes.txt").read_text() == "mine"


def test_a_rerun_with_other_settings_is_refused_before_the_model_loads_naming_them(
    model_dir, store_dir, tmp_path, monkeypatch
):
    """`vectors` rerun with other options refused with E266 after loading the model and selecting the words (10.4 s
    with --rare-only), naming no setting. The table records what selected its words, and a rerun compares first."""
    import spacy_bertram.training.vectors as vectors_mod

    out = tmp_path / "table"
    args = (model_dir, store_dir / "contexts.sqlite", out)
    settings = dict(max_count=30, max_contexts=3, shard_size=4, workers=0, progress=False)
    build_vector_table(*args, **settings)
    before = {path.name: path.read_bytes() for path in out.iterdir()}

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the refusal")

    monkeypatch.setattr(vectors_mod, "load_bertram", no_model)
    for change, named in (
        ({"max_contexts": 2}, r"\(max_contexts: 3 -> 2\)"),
        ({"min_count": 2}, r"\(selection\.min_count: 1 -> 2\)"),
        ({"max_count": 20}, r"\(selection\.max_count: 30 -> 20\)"),
        ({"rare_only": True}, r"\(rare_only: '\(unset\)' -> \{'max_zipf': 3\.0, 'lang': 'en'\}\)"),
    ):
        with pytest.raises(
            ValueError,
            match=r"\[E266\] .*table' holds a vector table of another model, words or "
            r"settings " + named + ": give a new output directory, or pass --force",
        ):
            build_vector_table(*args, **{**settings, **change})
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


def test_a_table_or_plan_recorded_without_its_selection_is_refused_naming_it(model_dir, store_dir, tmp_path):
    """Every table and plan records what selected its words: one without it is a changed setting, not a match."""
    from spacy_bertram.pipeline.table_files import META_FILE, PLAN_FILE
    from spacy_bertram.training.shards import ShardStore

    out = tmp_path / "table"
    args = (model_dir, store_dir / "contexts.sqlite", out)
    settings = dict(max_count=30, max_contexts=3, shard_size=4, workers=0, progress=False)
    build_vector_table(*args, **settings)
    record = json.loads((out / META_FILE).read_text(encoding="utf8"))
    selection = record.pop("selection")
    (out / META_FILE).write_text(json.dumps(record), encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E266\] .*\(selection: None -> \{'min_count': 1, 'max_count': 30"):
        build_vector_table(*args, **settings)
    plan_settings = {"model_id": record["model_id"], "selection": selection}
    ShardStore.open(tmp_path / "plan", ["kumquat"], 4, plan_settings)
    plan = tmp_path / "plan" / SHARDS_DIR / PLAN_FILE
    written = json.loads(plan.read_text(encoding="utf8"))
    del written["settings"]["selection"]
    plan.write_text(json.dumps(written), encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E236\] .*\(settings\.selection: '\(unset\)' -> \{'min_count': 1"):
        ShardStore.open(tmp_path / "plan", ["kumquat"], 4, plan_settings)


def test_a_run_that_fails_before_a_shard_is_finished_leaves_nothing(model_dir, store_dir, tmp_path, monkeypatch):
    """A store read that failed in the first shard (`vectors --rare-only` on a damaged store, after 9 s) left an
    empty shards/ behind; a run that finished some shards keeps them, for the run that resumes."""
    import spacy_bertram.training.vectors as vectors_mod

    def unreadable(network, store, words, max_contexts, token_budget=0):
        raise ValueError("(spacy-bertram) [E187] The context store cannot be read whole")

    monkeypatch.setattr(vectors_mod, "infer_words", unreadable)
    out = tmp_path / "table"
    with pytest.raises(ValueError, match=r"\[E187\]"):
        build_vector_table(model_dir, store_dir / "contexts.sqlite", out, max_count=30, workers=0, progress=False)
    assert not out.exists()
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf8")
    with pytest.raises(ValueError, match=r"\[E187\]"):
        build_vector_table(
            model_dir, store_dir / "contexts.sqlite", out, max_count=30, workers=0, progress=False, force=True
        )
    assert sorted(path.name for path in out.iterdir()) == ["notes.txt"]  # the user's directory and file stay


def test_a_killed_run_resumes_with_the_missing_shards(model_dir, store_dir, tmp_path, monkeypatch):
    import spacy_bertram.training.vectors as vectors_mod

    calls = []
    real = vectors_mod.infer_words
    killed = []

    def dies_on_third_shard(network, store, words, max_contexts, token_budget=0):
        calls.append(list(words))
        if len(calls) == 3 and not killed:
            killed.append(True)
            raise KeyboardInterrupt  # the run is killed while computing shard 3
        return real(network, store, words, max_contexts, token_budget)

    monkeypatch.setattr(vectors_mod, "infer_words", dies_on_third_shard)
    out = tmp_path / "table"
    args = (model_dir, store_dir / "contexts.sqlite", out)
    settings = dict(max_count=30, max_contexts=3, shard_size=3, workers=0, progress=False)
    with pytest.raises(KeyboardInterrupt):
        build_vector_table(*args, **settings)
    assert not (out / "table.json").exists()
    assert sorted(p.name for p in (out / SHARDS_DIR).iterdir()) == [
        "plan.json",
        "shard-00000.safetensors",
        "shard-00001.safetensors",
    ]
    with pytest.raises(ValueError, match=r"\[E132\] No vector table.*resume"):
        VectorTable.from_disk(out)
    with pytest.raises(ValueError, match=r"\[E236\].*other words or settings"):
        build_vector_table(*args, **{**settings, "max_contexts": 2})
    calls.clear()
    summary = build_vector_table(*args, **settings)
    assert summary["resumed_shards"] == 2 and summary["computed_shards"] == summary["shards"] - 2
    table = VectorTable.from_disk(out)
    assert calls[0] == table.words[6:9]  # it went on at shard 3
    assert numpy.allclose(table.vectors, reference(model_dir, store_dir, table.words, 3), atol=1e-5)


def test_vectors_on_a_two_worker_local_cluster(model_dir, store_dir, tmp_path):
    """A real LocalCluster of 2 processes gives the single-process rows."""
    pytest.importorskip("distributed")
    out = tmp_path / "table"
    summary = build_vector_table(
        model_dir,
        store_dir / "contexts.sqlite",
        out,
        max_count=30,
        max_contexts=3,
        shard_size=3,
        workers=2,
        progress=False,
    )
    assert "with 2 workers" in summary["on"]
    table = VectorTable.from_disk(out)
    assert summary["computed_words"] == len(table) >= 10
    assert numpy.allclose(table.vectors, reference(model_dir, store_dir, table.words, 3), atol=1e-5)


def test_vectors_cli_help_and_errors(model_dir, store_dir, tmp_path):
    from typer.testing import CliRunner

    from spacy_bertram.cli import app

    def cli(*args):
        return CliRunner().invoke(app, ["vectors", *map(str, args)])

    shown = cli("--help")
    assert shown.exit_code == 0
    for option in ("--min-count", "--max-count", "--words", "--max-contexts", "--workers", "--scheduler", "--gpu-id"):
        assert option in shown.output
    bad = cli(model_dir, store_dir / "contexts.sqlite", tmp_path / "t", "--gpu-id", "x")
    assert bad.exit_code == 1 and "--gpu-id must be" in bad.output
    none = cli(model_dir, store_dir / "contexts.sqlite", tmp_path / "t", "--min-count", "1000", "--workers", "0")
    assert none.exit_code == 1 and "No words selected" in none.output
    ok = cli(
        model_dir, store_dir / "contexts.sqlite", tmp_path / "t", "--max-count", "30", "--workers", "0", "--no-progress"
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output[ok.output.index("{") :])["words"] == len(VectorTable.from_disk(tmp_path / "t"))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    foreign = cli(model_dir, store_dir / "contexts.sqlite", tmp_path / "mine", "--max-count", "30", "--workers", "0")
    assert foreign.exit_code == 1 and "holds nothing vectors wrote (notes.txt)" in foreign.output
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_the_command_checks_the_names_a_table_is_written_under():
    """`vectors` checks its output before importing torch, by the names the table writes (shards/ holds a run's
    plan and shards: what else is in it stays)."""
    from spacy_bertram.pipeline.vector_table import META_FILE, SHARDS_DIR, VECTORS_FILE
    from spacy_bertram.training.settings import VECTORS_OUTPUTS

    assert VECTORS_OUTPUTS == (META_FILE, VECTORS_FILE, f"{SHARDS_DIR}/plan.json", f"{SHARDS_DIR}/shard-*.safetensors")


@pytest.mark.filterwarnings(r"ignore:.*\[W002\]")  # the fixture's model ships no counts.tsv
def test_rare_only_keeps_the_words_the_component_calls_rare(model_dir, store_dir, tmp_path):
    """--rare-only asks the component's own rule (as `rare-words` builds it): frequent words and one-piece words
    of the store get no row, the rare multi-piece ones do, and the summary and table.json count those dropped."""
    from spacy_bertram.explain import rule_pipeline

    store_path = store_dir / "contexts.sqlite"
    with ContextStore.open(store_path) as store:
        every = select_words(store, word_key_function(load_bertram(model_dir)))
    assert {"the", "near", "farmer", *RARE} <= set(every) and len(every) == 22
    out = tmp_path / "table"
    settings = dict(rare_only=True, max_contexts=3, shard_size=2, workers=0, progress=False)
    with pytest.warns(UserWarning, match=r"\[W002\]"):  # the component's own warning: the model has no counts.tsv
        summary = build_vector_table(model_dir, store_path, out, **settings)
    table = VectorTable.from_disk(out)
    # "the" (one wordpiece, frequent), "near" (4 wordpieces, but Zipf 5.3) and the other 15 frequent words: no row
    assert sorted(table.words) == sorted(RARE) and summary["words"] == 5
    assert summary["not_rare"] == len(every) - 5 == 17
    assert table.meta["rare_only"] == {"max_zipf": 3.0, "lang": "en", "not_rare": 17}
    assert json.loads((out / "table.json").read_text(encoding="utf8"))["rare_only"]["not_rare"] == 17
    assert numpy.allclose(table.vectors, reference(model_dir, store_dir, table.words, 3), atol=1e-5)
    # The component, on the corpus's own sentences, calls exactly the table's words rare.
    nlp, pipe = rule_pipeline(model_dir)
    called = {doc[i].text for doc in map(nlp.make_doc, LINES) for i in pipe.rare_tokens(doc)}
    assert called == set(table.words)
    again = build_vector_table(model_dir, store_path, out, **settings)
    assert again["already_done"] and again["not_rare"] == 17


@pytest.mark.filterwarnings(r"ignore:.*\[W002\]")  # the fixture's model ships no counts.tsv
def test_rare_only_combines_with_the_count_range_the_word_list_and_max_zipf(model_dir, store_dir, tmp_path):
    store_path = store_dir / "contexts.sqlite"
    settings = dict(rare_only=True, max_contexts=2, workers=0, progress=False)
    ranged = build_vector_table(model_dir, store_path, tmp_path / "ranged", max_count=30, **settings)
    assert ranged["words"] == 5 and ranged["not_rare"] == 10  # 15 words counted below 30, "the" (120) not among them
    (tmp_path / "words.txt").write_text("kumquat\nthe\nquokka\nmarket\n", encoding="utf8")
    listed = build_vector_table(
        model_dir, store_path, tmp_path / "listed", word_list=tmp_path / "words.txt", **settings
    )
    assert VectorTable.from_disk(tmp_path / "listed").words == ["kumquat", "quokka"] and listed["not_rare"] == 2
    # max_zipf 1.6: quokka (Zipf 1.50) and zorbing (1.51) stay rare; kumquats (1.67), kumquat (1.86) and
    # tarantula (2.72) are not rare any more.
    strict = build_vector_table(model_dir, store_path, tmp_path / "strict", max_zipf=1.6, **settings)
    table = VectorTable.from_disk(tmp_path / "strict")
    assert sorted(table.words) == ["quokka", "zorbing"] and strict["not_rare"] == 20
    assert table.meta["rare_only"]["max_zipf"] == 1.6
    (tmp_path / "frequent.txt").write_text("the\nmarket\n", encoding="utf8")
    with pytest.raises(
        ValueError, match=r"\[E265\].*rare to the component's rule at max_zipf 3.0: 2 word\(s\) were not"
    ):
        build_vector_table(model_dir, store_path, tmp_path / "none", word_list=tmp_path / "frequent.txt", **settings)
    assert not (tmp_path / "none").exists()
    with pytest.raises(ValueError, match=r"\[E090\] vectors: --max-zipf set the rare-word rule of --rare-only"):
        build_vector_table(model_dir, store_path, tmp_path / "off", max_zipf=4.0, workers=0, progress=False)
    assert not (tmp_path / "off").exists()


@pytest.mark.filterwarnings(r"ignore:.*\[W002\]")  # the fixture's model ships no counts.tsv
def test_vectors_cli_rare_only(model_dir, store_dir, tmp_path):
    from typer.testing import CliRunner

    from spacy_bertram.cli import app

    def cli(*args):
        return CliRunner().invoke(app, ["vectors", *map(str, args)])

    assert all(option in cli("--help").output for option in ("--rare-only", "--max-zipf", "--lang"))
    args = (model_dir, store_dir / "contexts.sqlite")
    ok = cli(*args, tmp_path / "t", "--max-count", "30", "--rare-only", "--workers", "0", "--no-progress")
    assert ok.exit_code == 0, ok.output
    summary = json.loads(ok.output[ok.output.index("{") :])
    assert summary["not_rare"] == 10 and summary["words"] == 5
    assert sorted(VectorTable.from_disk(tmp_path / "t").words) == sorted(RARE)
    strict = cli(*args, tmp_path / "s", "--rare-only", "--max-zipf", "1.6", "--workers", "0", "--no-progress")
    assert strict.exit_code == 0, strict.output
    assert sorted(VectorTable.from_disk(tmp_path / "s").words) == ["quokka", "zorbing"]
    off = cli(*args, tmp_path / "o", "--max-zipf", "4", "--lang", "de", "--workers", "0")
    assert off.exit_code == 1 and "[E090] vectors: --max-zipf and --lang set the rare-word rule" in off.output
    bad = cli(*args, tmp_path / "o", "--rare-only", "--max-zipf", "0", "--workers", "0")
    assert bad.exit_code == 1 and "[E039]" in bad.output and "--max-zipf" in bad.output
    assert not (tmp_path / "o").exists()
    assert "--then-store" in cli("--help").output
    (tmp_path / "notes.txt").write_text("not a store")
    then = cli(*args, tmp_path / "o", "--then-store", tmp_path / "notes.txt", "--workers", "0")
    assert then.exit_code == 1 and "[E286] --then-store" in then.output, then.output
    assert not (tmp_path / "o").exists()


def test_then_store_fills_a_words_contexts_as_the_components_chained_stores_do(
    model_dir, store_dir, tiny_bert_path, tmp_path
):
    """The words come from the first store; each word's contexts from it first, then from the next store for
    what it lacks (distinct texts, up to max_contexts): the contexts the component's chain of the two stores
    gives, so the table's row is what the component infers with them."""
    from spacy_bertram.training.text_store import add_texts
    from spacy_bertram.pipeline.context_sources import chain_contexts

    from tests.util import make_nlp

    own = tmp_path / "own.sqlite"
    add_texts(own, ["my kumquat was sour today", "a quokka and a kumquat met"], progress=False)
    general = store_dir / "contexts.sqlite"
    out = tmp_path / "table"
    summary = build_vector_table(model_dir, own, out, then_stores=[general], max_contexts=3, workers=0, progress=False)
    table = VectorTable.from_disk(out)
    with ContextStore.open(own) as first, ContextStore.open(general) as second:
        assert set(table.words) == {word for word, _ in first.counts()}  # the words: the first store's alone
        chained = {
            w: chain_contexts([(first.contexts(w, 3), None), (second.contexts(w, 3), None)], 3) for w in table.words
        }
        assert len(first.contexts("kumquat", 3)) == 2 and len(chained["kumquat"]) == 3
        assert chained["kumquat"][:2] == first.contexts("kumquat", 3)
        assert table.meta["then_stores"][0]["total_words"] == second.meta["total_words"]
    expected = load_bertram(model_dir).infer([(w, chained[w]) for w in table.words])
    assert numpy.allclose(table.vectors, expected, atol=1e-5) and summary["words"] == len(table)
    again = build_vector_table(model_dir, own, out, then_stores=[general], max_contexts=3, workers=0, progress=False)
    assert again["already_done"]
    with pytest.raises(ValueError, match=r"\[E266\]"):  # the same words from the first store alone: another table
        build_vector_table(model_dir, own, out, max_contexts=3, workers=0, progress=False)
    alone = build_vector_table(model_dir, own, tmp_path / "alone", max_contexts=3, workers=0, progress=False)
    assert alone["words"] == len(table) and "then_stores" not in VectorTable.from_disk(tmp_path / "alone").meta
    row = table.words.index("kumquat")
    assert numpy.abs(VectorTable.from_disk(tmp_path / "alone").vectors[row] - table.vectors[row]).max() > 1e-4
    stores = {
        name: {"@context_sources": "spacy-bertram.store_contexts.v1", "path": str(path)}
        for name, path in (("indomain", own), ("general", general))
    }
    nlp = make_nlp(
        model_dir,
        tiny_bert_path,
        contexts={"@context_sources": "spacy-bertram.chained_contexts.v1", "*": stores},
        contexts_per_word=3,
    )
    nlp.initialize()
    doc = nlp.make_doc("A kumquat.")
    assert nlp.get_pipe("bertram").word_sources.contexts_for(doc, "kumquat", [1]) == chained["kumquat"]


def test_commands_that_need_dask_refuse_before_any_work_when_it_is_not_installed(
    model_dir, store_dir, tmp_path, monkeypatch
):
    """With `pip install .` alone, `vectors --workers 2` counted its shards, then failed with E267 after 7 s and left
    an empty shards/ behind. Every run on Dask (vectors but with --workers 0; --workers N or --scheduler of
    prepare, targets and train) is refused first, naming the extra, and writes nothing; --workers 0 still runs."""
    import sys

    from spacy_bertram.training.settings import check_workers

    from tests.util import invoke

    for name in ("dask", "distributed"):  # as if not installed: find_spec answers None, an import fails
        monkeypatch.setitem(sys.modules, name, None)
    store = store_dir / "contexts.sqlite"
    extra = "pip install 'spacy-bertram[dask]'"
    for run in (
        ("vectors", model_dir, store, tmp_path / "table", "--workers", "2", "--no-progress"),
        ("vectors", model_dir, store, tmp_path / "table", "--no-progress"),  # one worker per core, by default
        ("vectors", model_dir, store, tmp_path / "table", "--scheduler", "tcp://127.0.0.1:1", "--no-progress"),
        ("prepare", store_dir.parent / "corpus.txt", tmp_path / "prepared", "--workers", "2"),
        ("targets", store, tmp_path / "targets", "--workers", "2", "--no-progress"),
        ("train", store, tmp_path / "run", "--scheduler", "tcp://127.0.0.1:1", "--no-progress"),
    ):
        result = invoke(*run)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert sorted(path.name for path in tmp_path.iterdir()) == []  # nothing written, not even an empty shards/
        said = " ".join(result.output.split())
        assert "[E267]" in said and extra in said and "--workers 0" in said, said
    with pytest.raises(ValueError, match=r"\[E267\]"):
        build_vector_table(model_dir, store, tmp_path / "api", workers=2, progress=False)
    assert not (tmp_path / "api").exists()
    check_workers(0, dask_by_default=True)  # in this process: no Dask needed
    check_workers(None)  # prepare, targets and train without --workers: one process
    summary = build_vector_table(model_dir, store, tmp_path / "here", workers=0, max_count=30, progress=False)
    assert summary["words"] == 15 and VectorTable.from_disk(tmp_path / "here").words


HYPHENATED = [
    "her twinkly-eyed grin was jaw-droppingly good at the market",
    "the navel-gazing farmer was self-deprecating about the dumbed-down river",
    "a twinkly lamp and a quokka sat near the old garden",
]


@pytest.mark.filterwarnings(r"ignore:.*\[W002\]")  # the fixture's model ships no counts.tsv
def test_rare_only_finds_the_rare_parts_of_hyphenated_words_with_their_contexts(model_dir, tmp_path):
    """`vectors --rare-only` missed twinkly of twinkly-eyed (and navel, deprecating, dumbed, droppingly): the store
    held the hyphenated word alone, which spaCy cuts into tokens, so the component met a rare token the table
    had no row for. The store of the texts counts the parts as words, with the contexts they occur in, and the
    rare words are the tokens the component's rule picks (`finder.find`): the table holds exactly the tokens the
    component calls rare in the store's own texts, each row from its store contexts."""
    from spacy_bertram.explain import rule_pipeline
    from spacy_bertram.training.text_store import add_texts

    store = tmp_path / "texts.sqlite"
    add_texts(store, HYPHENATED, progress=False)
    summary = build_vector_table(model_dir, store, tmp_path / "table", rare_only=True, workers=0, progress=False)
    table = VectorTable.from_disk(tmp_path / "table")
    nlp, pipe = rule_pipeline(model_dir)
    called = {doc[i].text for doc in map(nlp.make_doc, HYPHENATED) for i in pipe.rare_tokens(doc)}
    assert {"twinkly", "droppingly", "navel", "deprecating", "dumbed", "quokka"} <= called
    assert set(table.words) == called and summary["words"] == len(called)
    with ContextStore.open(store) as opened:
        assert opened.contexts("twinkly") == [HYPHENATED[0], HYPHENATED[2]]  # in twinkly-eyed, and alone
        assert opened.count("twinkly-eyed") == 1 and opened.count("eyed") == 1 and opened.count("twinkly") == 2
        span = opened.context_spans("deprecating")[0]
        assert span[0][span[1] : span[2]] == "deprecating"  # the part itself is the occurrence masked
        words = [word for word, _ in opened.counts()]
    assert summary["not_rare"] == len(set(words) - called)  # twinkly-eyed among them: spaCy's tokens are its parts
    network = load_bertram(model_dir)
    with ContextStore.open(store) as opened:  # each row from the word's store contexts, the parts' included
        rows = network.infer([(word, opened.contexts(word, limit=8)) for word in table.words])
    assert numpy.allclose(table.vectors, rows, atol=1e-5)
    # A store without the parts (prepare's): a rare token of a word is selected as a word of its own would be, by
    # its count and contexts there; droppingly, there only inside jaw-droppingly, has neither: the component
    # infers it at run time (from the doc, with doc contexts), as it did.
    (tmp_path / "texts.txt").write_text("\n".join(HYPHENATED) + "\n", encoding="utf8")
    prepared = prepare([tmp_path / "texts.txt"], tmp_path / "prepared", min_count=1, progress=False).store
    build_vector_table(model_dir, prepared, tmp_path / "general", rare_only=True, workers=0, progress=False)
    general = set(VectorTable.from_disk(tmp_path / "general").words)
    assert "droppingly" not in general and {"twinkly", "quokka"} <= general
