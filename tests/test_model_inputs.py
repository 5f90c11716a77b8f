"""How (word, context) pairs become encoder rows in each mode, and the character n-gram vocabulary
(n-grams, min count, UNK/PAD, and its JSON round trip)."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from spacy_bertram.model.encoder import word_piece_ids
from spacy_bertram.model.inputs import (
    BOUNDARY,
    PAD_ID,
    UNK_ID,
    EncodedContext,
    InputBuilder,
    NgramVocab,
    batch_by_token_budget,
    length_cuts,
    word_ngrams,
)

B = BOUNDARY


@pytest.mark.parametrize("word", ["", "   ", "two words"])
def test_empty_blank_or_multiword_words_are_rejected_by_name(network, word):
    with pytest.raises(ValueError) as err:
        network.infer([(word, ["a context"])])
    assert repr(word) in str(err.value)


def test_non_string_word_is_rejected(network):
    with pytest.raises(ValueError, match=r"\[E018\].*strings"):
        network.infer([(None, [])])


def test_context_that_is_not_a_string(network):
    with pytest.raises(ValueError, match=r"\[E023\].*kumquat"):
        network.infer([("kumquat", [123])])


def test_a_string_where_the_list_of_contexts_belongs_is_refused(network):
    # Read as a list, the string would be one-character contexts and the form vector comes back.
    with pytest.raises(TypeError, match=r"\[E016\].*item 0 \('kumquat'\).*list of strings.*string 'a sentence'"):
        network.infer([("kumquat", "a sentence")])
    with pytest.raises(TypeError, match=r"\[E015\].*item 1 must be a \(word, \[contexts\]\) pair, got \('kumquat',\)"):
        network.infer([("kumquat", []), ("kumquat",)])
    with pytest.raises(TypeError, match=r"\[E015\].*item 0 must be a"):
        network.infer(["kumquat"])


@pytest.mark.parametrize("budget", [-1, -100])
def test_a_token_budget_below_one_is_refused(network, budget):
    """(0 is not refused: `infer(token_budget=0)` takes the device's default budget.)"""
    with pytest.raises(
        ValueError,
        match=rf"\[E024\] token_budget must be a number of encoder tokens per call, a whole number from 1 "
        rf"to 10,000,000, got {budget}",
    ):
        network.infer([("kumquat", ["a kumquat here"])], token_budget=budget)


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_path):
    return AutoTokenizer.from_pretrained(tiny_bert_path)


def tokens(tokenizer, row: EncodedContext):
    return tokenizer.convert_ids_to_tokens(list(row.input_ids))


def test_add_mode_prefix_mask_and_slot(tokenizer):
    builder = InputBuilder(tokenizer, "add", max_length=64)
    row = builder.encode(0, "kumquat", "the farmer sold a kumquat at the market")
    toks = tokens(tokenizer, row)
    # [CLS] <form slot> : context-with-mask [SEP]; the mask moves by two.
    assert toks[:3] == ["[CLS]", "[MASK]", ":"]
    assert row.slot_position == 1
    assert toks[row.mask_position] == "[MASK]"
    assert toks[3:] == ["the", "farmer", "sold", "a", "[MASK]", "at", "the", "market", "[SEP]"]
    assert row.mask_position == 3 + 4


@pytest.mark.parametrize("mode, slot", [("context", False), ("shallow", False), ("replace", True)])
def test_plain_modes_mask_position(tokenizer, mode, slot):
    builder = InputBuilder(tokenizer, mode, max_length=64)
    row = builder.encode(0, "kumquat", "a kumquat is a small fruit")
    toks = tokens(tokenizer, row)
    assert toks == ["[CLS]", "a", "[MASK]", "is", "a", "small", "fruit", "[SEP]"]
    assert row.mask_position == 2
    assert row.slot_position == (2 if slot else -1)


def test_every_occurrence_masked_case_insensitively_on_word_boundaries(tokenizer):
    builder = InputBuilder(tokenizer, "context", max_length=64)
    row = builder.encode(0, "cat", "Cat and dog; the concatenated cat, cats.")
    toks = tokens(tokenizer, row)
    assert toks.count("[MASK]") == 2  # "Cat" and "cat", not "concatenated" or "cats"
    assert row.mask_position == 1


def test_context_without_word_is_skipped_with_warning(tokenizer):
    builder = InputBuilder(tokenizer, "add", max_length=64)
    assert builder.encode(0, "kumquat", "no such fruit here") is None
    with pytest.warns(UserWarning, match=r"\[W001\] Skipped 1 context\(s\) that do not contain their word: 'kumquat'"):
        rows = builder.encode_many(["kumquat"], [["no fruit", "a kumquat"]], max_contexts=8)
    assert len(rows) == 1


@pytest.mark.parametrize("mode", ["add", "replace"])
def test_window_respects_max_length_and_centres_on_first_mask(tokenizer, mode):
    builder = InputBuilder(tokenizer, mode, max_length=24)
    left = " ".join(["dog"] * 200)
    right = " ".join(["tree"] * 200)
    row = builder.encode(0, "kumquat", f"{left} kumquat {right}")
    toks = tokens(tokenizer, row)
    assert len(row) == 24
    assert toks[row.mask_position] == "[MASK]"
    window = toks[1 + builder.prefix_length : -1]
    mask_in_window = window.index("[MASK]")
    assert abs(mask_in_window - (len(window) - 1 - mask_in_window)) <= 1
    assert set(window) == {"dog", "tree", "[MASK]"}


def test_word_at_context_edge_keeps_full_window(tokenizer):
    builder = InputBuilder(tokenizer, "context", max_length=16)
    row = builder.encode(0, "kumquat", "kumquat " + " ".join(["tree"] * 100))
    assert len(row) == 16 and row.mask_position == 1


def test_batching_by_token_budget_covers_every_row_once():
    rows = [EncodedContext(0, tuple(range(n)), 1, -1) for n in (5, 30, 7, 12, 30, 3)]
    batches = list(batch_by_token_budget(rows, token_budget=40))
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(len(rows)))
    for batch in batches:
        longest = max(len(rows[i]) for i in batch)
        assert longest * len(batch) <= 40 or len(batch) == 1


def padded_cost(lengths, cuts, call_cost):
    starts = [0] + cuts[:-1]
    return sum((end - start) * lengths[end - 1] + call_cost for start, end in zip(starts, cuts))


def test_length_cuts_are_the_cheapest_split_of_the_sorted_lengths():
    """Against every way of cutting: padded positions plus the call cost is least."""
    import itertools
    import random

    rng = random.Random(0)
    for _ in range(30):
        lengths = sorted(rng.choice([3, 4, 5, 12, 14, 18, 40]) for _ in range(rng.randint(1, 9)))
        call_cost = rng.choice([0, 8, 64])
        cuts = length_cuts(lengths, call_cost)
        assert cuts[-1] == len(lengths) and cuts == sorted(set(cuts))
        best = min(
            padded_cost(lengths, list(inner) + [len(lengths)], call_cost)
            for k in range(len(lengths))
            for inner in itertools.combinations(range(1, len(lengths)), k)
        )
        assert padded_cost(lengths, cuts, call_cost) == best


def test_bare_pieces_and_contexts_go_in_separate_calls_when_padding_outweighs_a_call():
    rows = [EncodedContext(0, tuple(range(n)), 1, -1) for n in [4] * 40 + [18] * 40]
    batches = list(batch_by_token_budget(rows, token_budget=8192, call_cost=64))
    assert sorted(len(rows[b[0]]) for b in batches) == [4, 18]
    assert all(len({len(rows[i]) for i in b}) == 1 for b in batches)
    # a call costlier than the padding it saves: one call
    assert len(list(batch_by_token_budget(rows, token_budget=8192, call_cost=10_000))) == 1


@pytest.mark.parametrize("add_quotes", [False, True])
def test_add_prefix_for_bpe_is_the_references(tiny_roberta_path, add_quotes):
    """`<s> v :` (the reference's "add", ':' the vocabulary's bare token) or `<s> Ġ" v Ġ" :` ("add-quotes")."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta_path)
    builder = InputBuilder(tokenizer, "add", max_length=64, add_quotes=add_quotes)
    assert builder.is_bpe
    sentence = "the farmer sold a kumquat at the market"
    row = builder.encode(0, "kumquat", sentence)
    toks = tokenizer.convert_ids_to_tokens(list(row.input_ids))
    slot = toks[row.slot_position]  # any token: the form vector replaces its embedding
    prefix = ["<s>", '\u0120"', slot, '\u0120"', ":"] if add_quotes else ["<s>", slot, ":"]
    assert toks[: len(prefix)] == prefix and toks[-1] == "</s>"
    assert row.slot_position == (2 if add_quotes else 1)
    assert toks[row.mask_position] == "<mask>"
    natural = tokenizer.convert_ids_to_tokens(tokenizer(" " + sentence, add_special_tokens=False)["input_ids"])
    pieces = tokenizer.convert_ids_to_tokens(word_piece_ids(tokenizer, "kumquat"))
    assert toks[len(prefix) : -1] == _with_marker(natural, pieces, "<mask>")


def _with_marker(tokens, pieces, marker):
    """`tokens` with every run of `pieces` replaced by `marker`."""
    out, i = [], 0
    while i < len(tokens):
        if tokens[i : i + len(pieces)] == pieces:
            out.append(marker)
            i += len(pieces)
        else:
            out.append(tokens[i])
            i += 1
    return out


@pytest.mark.parametrize(
    "sentence",
    [
        "the farmer sold a kumquat at the market",
        "kumquat trees grow in the garden",
        "the farmer sold a kumquat.",
        "a kumquat, then   another kumquat (sweet) at the  market",
        "  the\tfarmer\n sold a kumquat  ",
    ],
)
@pytest.mark.parametrize("mode", ["replace", "context"])
def test_bpe_rows_have_the_tokens_of_the_unmasked_sentence_outside_the_word(tiny_roberta_path, sentence, mode):
    """No lone 'Ġ' beside the mask: outside the word a row has the tokens of the sentence as natural
    text (whitespace runs as one space) tokenised whole."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta_path)
    builder = InputBuilder(tokenizer, mode, max_length=64)
    row = builder.encode(0, "kumquat", sentence)
    toks = tokenizer.convert_ids_to_tokens(list(row.input_ids))
    natural = " " + " ".join(sentence.split())
    expected = tokenizer.convert_ids_to_tokens(tokenizer(natural, add_special_tokens=False)["input_ids"])
    pieces = tokenizer.convert_ids_to_tokens(word_piece_ids(tokenizer, "kumquat"))
    assert toks[1:-1] == _with_marker(expected, pieces, "<mask>")


def test_inplace_spells_every_occurrence_and_keeps_the_first_in_the_window(tokenizer):
    builder = InputBuilder(tokenizer, "inplace", max_length=12)
    pieces = tokenizer.convert_tokens_to_ids(["kum", "##qua", "##t"])
    context = "the old dog ran down the road to the river and a kumquat fell in a kumquat tree"
    row = builder.encode(0, "kumquat", context, pieces)
    assert len(row) <= 12 and row.span == 3
    toks = tokens(tokenizer, row)
    assert toks[0] == "[CLS]" and toks[-1] == "[SEP]" and "[MASK]" not in toks
    assert toks[row.mask_position : row.mask_position + row.span] == ["kum", "##qua", "##t"]
    # The caller's spelling is used as given (training passes a rare-like segmentation).
    short = builder.encode(0, "kumquat", "a kumquat is a small fruit", pieces[:2])
    assert tokens(tokenizer, short) == ["[CLS]", "a", "kum", "##qua", "is", "a", "small", "fruit", "[SEP]"]
    assert (short.mask_position, short.span) == (2, 2)
    assert builder.encode(0, "kumquat", "no such word here", pieces) is None


@pytest.mark.parametrize("mode", ["inplace", "add", "replace", "shallow"])
@pytest.mark.parametrize("bpe", [False, True])
def test_contexts_tokenised_in_one_batch_give_the_rows_of_one_call_each(tokenizer, tiny_roberta_path, mode, bpe):
    """encode_many sends every word's contexts to the tokenizer at once (again only for words whose contexts
    came out unusable) and gives exactly the rows of `encode` called context by context, in the same order:
    the first max_contexts usable contexts of each word, unusable ones skipped and counted."""
    tok = AutoTokenizer.from_pretrained(tiny_roberta_path) if bpe else tokenizer
    builder = InputBuilder(tok, mode, max_length=16)
    words = ["kumquat", "farmer", "quokka", "river", "zorbing"]
    contexts = [
        [
            "no such word",
            "a kumquat fell",
            "the kumquat tree by the kumquat grove",
            "nothing",
            "kumquat jam",
            "kumquat",
        ],
        ["the farmer sold a kumquat at the market to another farmer " * 3, "farmers only", "farmer"],
        [],
        ["the river ran", "no word", "no word either", "a river bank", "river", "rivers", "the river"],
        ["zorbing down a hill", "nothing here"],
    ]
    pieces = [builder.word_pieces(w) for w in words] if mode == "inplace" else None
    if mode == "inplace":
        pieces[1] = pieces[1] * 20  # longer than the window: every context of this word is unusable
    reference = InputBuilder(tok, mode, max_length=16)
    reference.batched_tokenising = False  # one tokenizer call per context, through `encode`
    for max_contexts in (1, 2, 3, 10):
        with pytest.warns(UserWarning, match=r"\[W001\]") as batched_warnings:
            batched = builder.encode_many(words, contexts, max_contexts, pieces)
        with pytest.warns(UserWarning, match=r"\[W001\]") as reference_warnings:
            one_by_one = reference.encode_many(words, contexts, max_contexts, pieces)
        assert batched == one_by_one and batched
        assert [str(w.message) for w in batched_warnings] == [str(w.message) for w in reference_warnings]
    expected = [
        builder.encode(i, w, c, pieces[i] if pieces else None) for i, w in enumerate(words) for c in contexts[i]
    ]
    with pytest.warns(UserWarning, match=r"\[W001\]"):
        assert builder.encode_many(words, contexts, 10, pieces) == [row for row in expected if row is not None]


def test_encode_many_calls_the_tokenizer_once_per_round(tokenizer, monkeypatch):
    import spacy_bertram.model.inputs as inputs_module

    calls = []
    real = inputs_module.texts_ids
    monkeypatch.setattr(inputs_module, "texts_ids", lambda tok, texts: calls.append(len(texts)) or real(tok, texts))
    builder = InputBuilder(tokenizer, "inplace", max_length=16)
    words = [f"word{i}" for i in range(40)]
    rows = builder.encode_many(words, [[f"a {w} here", f"the {w} there"] for w in words], 8)
    assert len(rows) == 80 and calls == [80]  # one call for all 80 contexts, not 80 calls
    calls.clear()
    with pytest.warns(UserWarning, match=r"\[W001\] Skipped 1 context"):
        builder.encode_many(["kumquat"], [["nothing", "a kumquat", "the kumquat"]], 1)
    assert calls == [1]  # the context without the word never reaches the tokenizer


def test_word_ngrams_are_3_to_5_grams_of_the_boundary_padded_word():
    assert word_ngrams("cat") == [f"{B}ca", "cat", f"at{B}", f"{B}cat", f"cat{B}", f"{B}cat{B}"]
    assert word_ngrams("a") == [f"{B}a{B}"]  # shorter than min_n: the whole padded word


def test_min_count_unk_and_pad():
    vocab = NgramVocab.from_words(["cat", "cats", "dog"], min_count=2)
    # only the n-grams that "cat" and "cats" share are kept, ordered by count then text
    # (the boundary symbol U+2581 sorts after ASCII letters)
    assert vocab.itos == ["<pad>", "<unk>", "cat", f"{B}ca", f"{B}cat"]
    assert vocab.encode("cat") == [3, 2, UNK_ID, 4, UNK_ID, UNK_ID]
    assert vocab.encode("dog") == [UNK_ID] * 6
    assert PAD_ID == 0 and vocab.stoi["<pad>"] == PAD_ID


def test_round_trip_through_json_on_disk(tmp_path):
    words = ["kumquat", "kumquats", "quatrain", "Quality", "squat"]
    vocab = NgramVocab.from_words(words, min_n=2, max_n=4, min_count=2, lowercase=True)
    vocab.to_disk(tmp_path / "ngrams.json")
    data = json.loads((tmp_path / "ngrams.json").read_text(encoding="utf8"))
    assert (data["min_n"], data["max_n"], data["min_count"], data["lowercase"]) == (2, 4, 2, True)
    loaded = NgramVocab.from_disk(tmp_path / "ngrams.json")
    assert loaded.itos == vocab.itos and loaded.stoi == vocab.stoi
    for word in words + ["QUAT", "unseen"]:
        assert loaded.encode(word) == vocab.encode(word)
    assert loaded.encode("QUAT") == vocab.encode("quat")  # lowercase survives the round trip


def test_another_boundary_symbol_is_refused():
    data = NgramVocab.from_words(["cat"], min_count=1).to_dict()
    data["boundary"] = "#"
    with pytest.raises(ValueError, match=r"\[E031\].*boundary"):
        NgramVocab.from_dict(data)


@pytest.mark.parametrize("mode", ["inplace", "add", "replace", "context"])
def test_context_ids_are_the_context_words_only(tokenizer, mode):
    """What the context mean averages: no [CLS]/[SEP], no ADD prefix, no occurrence of the word (spelled
    with its pieces inplace, masked otherwise), and a bare row of the word's pieces has none."""
    builder = InputBuilder(tokenizer, mode, max_length=64)
    pieces = tokenizer.convert_tokens_to_ids(["kum", "##qua", "##t"])
    row = builder.encode(0, "kumquat", "a kumquat, the kumquat tree", pieces)
    expected = tokenizer.convert_tokens_to_ids(["a", ",", "the", "tree"])
    assert builder.context_ids(row, pieces if mode == "inplace" else ()) == expected
    assert builder.context_ids(builder.bare(0, pieces), pieces) == []
    if mode == "inplace":  # without the pieces only the first occurrence is known: the second stays
        assert builder.context_ids(row) == tokenizer.convert_tokens_to_ids(
            ["a", ",", "the", *["kum", "##qua", "##t"], "tree"]
        )
