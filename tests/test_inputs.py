"""How (word, context) pairs become encoder rows in each mode."""
import pytest
from transformers import AutoTokenizer

from spacy_bertram.inputs import EncodedContext, InputBuilder, batch_by_token_budget


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


def test_context_without_word_is_skipped_with_warning(tokenizer, caplog):
    builder = InputBuilder(tokenizer, "add", max_length=64)
    assert builder.encode(0, "kumquat", "no such fruit here") is None
    with caplog.at_level("WARNING", logger="spacy_bertram"):
        rows = builder.encode_many(["kumquat"], [["no fruit", "a kumquat"]], max_contexts=8)
    assert len(rows) == 1
    assert "kumquat" in caplog.text and "do not contain" in caplog.text


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


def test_add_mode_wraps_form_slot_in_quotes_for_bpe(tiny_roberta_path):
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta_path)
    builder = InputBuilder(tokenizer, "add", max_length=64)
    assert builder.is_bpe
    row = builder.encode(0, "kumquat", "the farmer sold a kumquat at the market")
    toks = tokenizer.convert_ids_to_tokens(list(row.input_ids))
    # <s> " <form slot> " : context </s>
    assert toks[0] == "<s>" and toks[-1] == "</s>"
    assert tokenizer.convert_tokens_to_string(toks[1:2]).strip() == '"'
    assert row.slot_position == 2
    after = tokenizer.convert_tokens_to_string(toks[3 : 3 + len(builder.prefix_right)])
    assert after.split() == ['"', ":"]
    assert toks[row.mask_position] == "<mask>"
    context = [t.lstrip("\u0120") for t in toks[3 + len(builder.prefix_right) : -1]]
    assert "".join(context) == "thefarmersolda<mask>atthemarket"
    assert context.count("<mask>") == 1


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
