"""rare_words.py: count tables, the rare-word rule, and which frequencies the component uses."""

from __future__ import annotations

import shutil

import numpy
import pytest
import spacy

import spacy_bertram.pipeline.component  # noqa: F401  (registers the factory until the entry point is installed)
from spacy_bertram.model.layers import bertram_shim
from spacy_bertram.rarity.rare_words import RareWordFinder, RareWordRule
from spacy_bertram.rarity.frequencies import CountTable, WordfreqFrequencies, WorldFrequencies

from tests.util import bertram_config, make_bertram_dir, make_nlp, same_vectors


# -- rare-word rule ----------------------------------------------------------------------


def test_rule_settings_are_validated():
    with pytest.raises(ValueError, match=r"\[E156\].*frequencies"):
        RareWordRule(frequencies="web")
    with pytest.raises(ValueError, match=r"\[E040\].*min_wordpieces"):
        RareWordRule(min_wordpieces=0)
    for bad in (-1, 0, 12, float("nan")):  # no token, or every token, would be rare
        with pytest.raises(ValueError, match=f"max_zipf must be a Zipf value above 0 and at most 9.*got {bad}"):
            RareWordRule(max_zipf=bad)


@pytest.fixture(scope="module")
def minilm_finder(minilm_path):
    """The default rule over the real MiniLM tokenizer and wordfreq (no BERTRAM model needed)."""
    from transformers import AutoTokenizer

    from spacy_bertram.model.encoder import word_piece_ids

    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    return RareWordFinder(
        RareWordRule(),
        WorldFrequencies(WordfreqFrequencies("en"), None),
        lambda word: word_piece_ids(tokenizer, word),
        lambda word: True,
        unk_id=tokenizer.unk_token_id,
    )


def test_rare_means_rare_to_the_encoder_on_hand_picked_tokens(minilm_finder):
    doc = spacy.blank("en")(
        "The kumquat harvest was anticipated a quarter ago, but I won't go and can't recieve a kumqaut."
    )
    decisions = {t.text: minilm_finder.explain(t) for t in doc}
    assert decisions["kumquat"].rare and decisions["kumquat"].wordpieces == 4  # Zipf 1.86, ku ##m ##qua ##t
    assert decisions["kumqaut"].rare and decisions["kumqaut"].zipf == 0  # a misspelling: unknown everywhere
    for word in ("harvest", "quarter", "anticipated"):  # one wordpiece and Zipf >= 4: the encoder knows them
        assert not decisions[word].rare and "frequent" in decisions[word].reason
    for piece in ("wo", "ca"):  # won't -> wo|n't, can't -> ca|n't
        assert not decisions[piece].rare and decisions[piece].reason == "a piece of a word the tokenizer split"
    assert not decisions["n't"].rare and not decisions["."].rare


def test_one_piece_words_keep_their_embedding_unless_opted_in():
    pieces = {"tapir": [7], "zyzzyva": [1, 2, 3], "glorp": [0]}  # 0: the tokenizer's unknown token
    frequencies = CountTable({"the": 10**6}, total=10**9)  # every other word: Zipf 0
    finder = RareWordFinder(
        RareWordRule(frequencies="model"), frequencies, pieces.__getitem__, lambda word: True, unk_id=0
    )
    assert not finder.is_rare_word("tapir") and "1 wordpiece(s)" in finder.decide_word("tapir").reason
    assert finder.is_rare_word("zyzzyva")
    assert finder.is_rare_word("glorp") and "unknown to the encoder" in finder.decide_word("glorp").reason
    opted_in = RareWordFinder(
        RareWordRule(frequencies="model", min_wordpieces=1),
        frequencies,
        pieces.__getitem__,
        lambda word: True,
        unk_id=0,
    )
    assert opted_in.is_rare_word("tapir")


def test_split_pieces_are_skipped_only_when_glued():
    rule = RareWordRule()
    doc = spacy.blank("en")("I'm gonna say wo and ca , and cannot")
    glued = {t.text for t in doc if rule.reject_token(t) == "a piece of a word the tokenizer split"}
    assert glued == {"gon", "na", "can", "not"}  # "wo" and "ca" stand alone here: real tokens ("I" is short)
    assert RareWordRule(skip_split_pieces=False).is_candidate(doc[2])  # "gon"


def test_a_word_in_the_possessive_or_in_quotes_is_judged_as_a_word(minilm_finder):
    """The word before "'s" is a whole written word; clitic stems ("wo", "ca", "gon") stay skipped."""
    split = "a piece of a word the tokenizer split"
    doc = spacy.blank("en")(
        "kumquat's peel, Brzezinski's book, Zelenskyy\u2019s speech, McDonald's menu, "
        "the Joneses' 'kumquat' and I won't, can't, gonna"
    )
    decisions = {t.text: minilm_finder.explain(t) for t in doc}
    for name in ("kumquat", "Brzezinski", "Zelenskyy", "McDonald", "Joneses"):
        assert decisions[name].reason != split, (name, decisions[name])
        assert decisions[name].wordpieces is not None  # judged by frequency and wordpieces
    assert decisions["kumquat"].rare  # "kumquat's" and "'kumquat'" alike
    assert decisions["Zelenskyy"].rare and decisions["Zelenskyy"].zipf < 3
    for piece in ("wo", "ca", "gon", "na"):
        assert decisions[piece].reason == split, (piece, decisions[piece])
    assert not decisions["'s"].rare and not decisions["\u2019s"].rare  # the endings are not words


def test_rare_tokens_by_wordfreq_alpha_only_and_wordpieces(bertram_dir, tiny_bert_path):
    text = "The kumquat and 42 quokkas ate a tarantula ! cat"
    nlp = make_nlp(bertram_dir, tiny_bert_path)
    doc = nlp(text)
    assert sorted(doc[i].text for i in doc._.bertram) == ["kumquat", "quokkas", "tarantula"]
    assert all(v.dtype == numpy.float32 and v.shape == (32,) for v in doc._.bertram.values())
    # Only words the encoder splits into 2+ pieces; "cat" is one piece (and rare by this table).
    nlp = make_nlp(bertram_dir, tiny_bert_path, rare_words={"max_zipf": 8.0, "min_wordpieces": 2})
    rare = {doc[i].text for i in nlp(text)._.bertram}
    assert "kumquat" in rare and "cat" not in rare and "The" not in rare
    nlp = make_nlp(bertram_dir, tiny_bert_path, rare_words={"max_zipf": 8.0, "alpha_only": False, "min_length": 1})
    assert "42" not in {doc[i].text for i in nlp(text)._.bertram}  # still needs a letter


def test_model_counts_replace_wordfreq(bertram_dir, tiny_bert_path, tmp_path):
    counts = {"the": 10**6, "kumquat": 10**5, "ate": 10**5}
    model = make_bertram_dir(tmp_path / "m", tiny_bert_path, counts=counts)
    nlp = make_nlp(model, tiny_bert_path, rare_words={"frequencies": "model"})
    pipe = nlp.get_pipe("bertram")
    counts = bertram_shim(pipe.model).counts  # the model's counts, held with its weights by the layer
    assert counts is not None and pipe.finder.frequencies is counts
    doc = nlp("the kumquat ate tarantulas")  # kumquat is frequent in the model's own corpus
    assert [doc[i].text for i in doc._.bertram] == ["tarantulas"]
    # under "auto" wordfreq decides for the words it lists ("kumquat": Zipf 1.9, rare to the world)
    auto = make_nlp(model, tiny_bert_path)("the kumquat ate tarantulas")
    assert [auto[i].text for i in auto._.bertram] == ["kumquat", "tarantulas"]
    nlp.to_disk(tmp_path / "pipeline")
    shutil.rmtree(model)  # the table now travels with the pipeline
    loaded = spacy.load(tmp_path / "pipeline")
    assert bertram_shim(loaded.get_pipe("bertram").model).counts.counts == counts.counts
    assert same_vectors(loaded("the kumquat ate tarantulas"), doc)
    doc = make_nlp(bertram_dir, tiny_bert_path, rare_words={"frequencies": "wordfreq"})("the kumquat ate tarantulas")
    assert [doc[i].text for i in doc._.bertram] == ["kumquat", "tarantulas"]


# -- 5. word frequencies: the model's counts, in the pipeline's language --------------------


def test_wordfreq_is_asked_in_the_pipeline_language(bertram_dir, tiny_bert_path):  # noqa: F811
    nlp = spacy.blank("ru")
    nlp.add_pipe(
        "bertram", config={**bertram_config(bertram_dir, tiny_bert_path), "rare_words": {"frequencies": "wordfreq"}}
    )
    nlp.initialize()
    frequencies = nlp.get_pipe("bertram").finder.frequencies
    assert frequencies.lang == "ru" and frequencies.zipf("привет") > 4  # an everyday Russian word
    unknown = spacy.blank("xx")
    unknown.add_pipe("bertram", config=bertram_config(bertram_dir, tiny_bert_path))
    with pytest.raises(
        ValueError,
        match=r"\[E013\] wordfreq has no word frequencies for the pipeline's language 'xx'"
        r'.*frequencies = "model"',
    ):
        unknown.initialize()


def test_devanagari_words_are_alphabetic(tmp_path, minilm_path):
    assert RareWordRule().is_candidate(spacy.blank("hi")("किताब")[0])  # "किताब".isalpha() is False
    nlp = spacy.blank("hi")
    nlp.add_pipe(
        "bertram",
        config={
            **bertram_config(make_bertram_dir(tmp_path / "m", "default"), "default"),
            "rare_words": {"frequencies": "wordfreq", "max_zipf": 5.6},
        },
    )
    nlp.initialize()
    doc = nlp("हिन्दी की किताब")
    assert {doc[i].text for i in doc._.bertram} == {"हिन्दी", "किताब"}  # "की" is frequent


def test_a_model_with_counts_is_read_with_them_under_auto(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    from spacy_bertram import load_bertram, save_bertram

    model = save_bertram(load_bertram(bertram_dir), tmp_path / "m", counts={"kumquat": 10**6, "the": 10**6})
    assert (model / "counts.tsv").read_text(encoding="utf8").splitlines() == ["kumquat\t1000000", "the\t1000000"]
    pipe = make_nlp(str(model), tiny_bert_path).get_pipe("bertram")
    counts = bertram_shim(pipe.model).counts
    assert isinstance(pipe.finder.frequencies, WorldFrequencies)
    assert pipe.finder.frequencies.counts is counts and counts.count("kumquat") == 10**6


def test_the_frequent_form_table_keeps_every_decision_and_skips_wordfreq_and_the_tokenizer(minilm_path):
    """The same rare tokens and the same explanations with the table as without it; a form the table holds
    costs neither a wordfreq call nor a tokenizer call, a form it does not hold costs both, once."""
    from transformers import AutoTokenizer

    from spacy_bertram.model.encoder import word_piece_ids

    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    world = WorldFrequencies(WordfreqFrequencies("en"), None)
    asked = {"zipf": [], "pieces": []}

    class Counted:
        source = "counted"

        def zipf(self, word):
            asked["zipf"].append(word)
            return world.zipf(word)

    def pieces(word):
        asked["pieces"].append(word)
        return word_piece_ids(tokenizer, word)

    def finder(table):
        return RareWordFinder(
            RareWordRule(), Counted(), pieces, lambda word: True, unk_id=tokenizer.unk_token_id, frequent=table
        )

    text = (
        "The kumquat harvest was anticipated a quarter ago, but I won't go. Naïve QUOKKAS, the Quokka and "
        "3D-printed tarantulas met Antananarivo's café owners; THE END of the marzipan"
    )
    docs = [spacy.blank("en")(text), spacy.blank("en")(text.lower())]
    table = world.frequent_forms(3.0)
    plain, fast = finder(None), finder(table)
    assert [fast.find(doc) for doc in docs] == [plain.find(doc) for doc in docs]
    assert [[fast.explain(t) for t in doc] for doc in docs] == [[plain.explain(t) for t in doc] for doc in docs]
    asked["zipf"].clear(), asked["pieces"].clear()
    fresh = finder(table)
    found = fresh.find(docs[0])
    assert [docs[0][i].text for i in found] == [
        "kumquat",
        "QUOKKAS",
        "Quokka",
        "tarantulas",
        "Antananarivo",
        "marzipan",
    ]
    held = {t.text for t in docs[0] if table.zipf(t.text) is not None}
    assert {"The", "harvest", "quarter", "THE", "END"} <= held
    assert not held & set(asked["zipf"]) and not held & set(asked["pieces"])  # the table's forms: no call
    assert sorted(asked["zipf"]) == sorted(set(asked["zipf"]))  # the others: once each (memo)
    assert fresh.decide_word("harvest") == plain.decide_word("harvest")  # explain still counts its pieces
    assert finder(world.frequent_forms(2.0)).frequent.min_zipf < RareWordRule().max_zipf
    assert finder(world.frequent_forms(2.0)).is_rare_word("kumquat")  # a lower-threshold table is not used


def test_the_finder_is_built_one_way_with_the_frequent_form_table(minilm_path):
    """`RareWordFinder.build` (the component's, rarification's and the experiments' finder) takes wordfreq's
    table of frequent forms at the rule's max_zipf, and without `has_signal` sees signal in every word."""
    from transformers import AutoTokenizer

    from spacy_bertram.model.encoder import word_piece_ids

    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    world = WorldFrequencies(WordfreqFrequencies("en"), None)
    rule = RareWordRule(max_zipf=2.5)
    pieces = lambda word: word_piece_ids(tokenizer, word)  # noqa: E731
    built = RareWordFinder.build(rule, world, pieces, unk_id=tokenizer.unk_token_id)
    assert built.frequent is not None and built.frequent.min_zipf == 2.5 and len(built.frequent) > 10_000
    assert built.has_signal("zzqx")
    plain = RareWordFinder(
        rule, world, lambda word: word_piece_ids(tokenizer, word), lambda word: True, unk_id=tokenizer.unk_token_id
    )
    doc = spacy.blank("en")("The kumquat and the quokka met a tarantula in Antananarivo")
    assert built.find(doc) == plain.find(doc) == [1, 4, 9]  # kumquat, quokka, Antananarivo
