"""network.py: the BERTRAM network on a tiny encoder: modes, attentive mimicking, batching, bad words and contexts."""

from __future__ import annotations

import warnings
from typing import List

import numpy
import pytest
import torch

from spacy_bertram import CountTable, create_bertram, load_bertram, save_bertram
from spacy_bertram.model.inputs import NgramVocab
from spacy_bertram.model.config import MODES, PAPER_SETTINGS, BertramConfig
from spacy_bertram.model.encoder import load_encoder
from spacy_bertram.model.network import AttentiveMimicking, BertramNetwork


@pytest.mark.parametrize("word", ["!!!", "...", "\U0001f600", "\U0001f34a\U0001f34a", "\u6c34\u679c"])
def test_punctuation_emoji_and_unknown_script_words_get_vectors(network, word):
    out = network.infer([(word, [f"she ate a {word} today", "no match"])])
    assert out.shape == (1, network.width) and numpy.isfinite(out).all()


def test_zero_contexts_and_contexts_without_the_word(network):
    out = network.infer([("garden", []), ("garden", ["the sea", "the sky"])])
    assert numpy.allclose(out[0], out[1])


def test_ten_thousand_word_context(network):
    long_context = " ".join(["tree"] * 5000 + ["kumquat"] + ["sea"] * 4999)
    batch = network.prepare(["kumquat"], [[long_context]])
    assert len(batch.rows) == 1 and len(batch.rows[0]) <= 32
    out = network.infer([("kumquat", [long_context])])
    assert numpy.isfinite(out).all()


def test_word_whose_ngrams_are_all_unknown(network):
    assert set(network.ngram_vocab.encode("zzqqxxj")) == {1}
    out = network.infer([("zzqqxxj", ["a zzqqxxj here"])])
    assert numpy.isfinite(out).all() and numpy.abs(out).sum() > 0


WORDS = ["kumquat", "kumquats", "farmer", "garden", "tasty", "orange"]
ITEMS = [
    (
        "kumquat",
        [
            "the farmer sold a kumquat at the market",
            "a kumquat is a small sour fruit",
            "she ate a kumquat",
            "kumquat trees grow in the garden",
        ],
    ),
    ("garden", ["the old garden", "a garden with a tree and a bird"]),
    ("tasty", ["tasty food", "the tasty orange was sweet", "he liked tasty fruit"]),
    ("orange", []),
    ("farmer", ["the farmer ran", "no such word here"]),
]


#: The reference's values of the settings that mix other vectors into BERTRAM's (PAPER_SETTINGS' part).
MIXES = ("read_layer", "subword_share", "own_embedding_for_one_piece", "context_mean_share")
WITHOUT_MIXES = {key: PAPER_SETTINGS[key] for key in (*MIXES, "context_mean_share_with_form", "context_mean_smoothing")}


def make_network(path, mode, seed=0, **settings):
    """The network without the defaults' mixes (no output mix, form vectors for every word) in `mode`, unless
    `settings` say otherwise."""
    vocab = NgramVocab.from_words(WORDS, min_count=1)
    network = create_bertram(path, ngram_vocab=vocab, **{**WITHOUT_MIXES, "mode": mode, **settings})
    torch.manual_seed(seed)
    with torch.no_grad():  # move away from the identity/zero init so every part matters
        for name, param in network.bertram_state_dict().items():
            param.add_(0.1 * torch.randn_like(param))
    return network


@pytest.mark.parametrize("mode", MODES)
def test_forward_and_backward_reach_the_right_parameters(tiny_bert_path, mode):
    network = make_network(tiny_bert_path, mode)
    network.train()
    batch = network.prepare([w for w, _ in ITEMS], [c for _, c in ITEMS])
    vectors = network(batch)
    assert vectors.shape == (len(ITEMS), network.width)
    assert torch.isfinite(vectors).all()
    vectors.pow(2).sum().backward()
    groups = network.parameter_groups()
    expect_grad = {
        "form": ["form"],
        "context": ["context", "form"],  # words without contexts fall back to the form
        "shallow": ["context", "gate", "form"],
        "replace": ["context", "form"],
        "add": ["context", "form"],
        "inplace": ["context"],  # the encoder reads the word's own pieces: no n-gram form
    }[mode]
    for group in expect_grad:
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in groups[group]), group
    assert all(p.grad is None for p in network.encoder.parameters())


def test_attentive_mimicking_weights_sum_to_one_and_ignore_padding():
    torch.manual_seed(0)
    layer = AttentiveMimicking(8)
    with torch.no_grad():
        layer.query.weight.add_(torch.randn(8, 8))
    states = torch.randn(3, 4, 8)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    rho = layer(states, mask)
    assert torch.allclose(rho.sum(dim=1), torch.ones(3), atol=1e-6)
    assert (rho >= 0).all()
    assert (rho[~mask] == 0).all()
    assert rho[2, 0] == 1.0
    # A context that disagrees with the others gets less weight than those that agree.
    agree = torch.tensor([[1.0] * 8, [1.0] * 8, [1.0] * 8, [-1.0] * 8]).unsqueeze(0)
    plain = AttentiveMimicking(8)
    weights = plain(agree, torch.ones(1, 4, dtype=torch.bool))[0]
    assert weights[3] < weights[0] and torch.allclose(weights[0], weights[1])


def test_length_grouped_calls_give_the_one_word_path_vectors(tiny_bert_path, monkeypatch):
    """Short bare-piece rows and long contexts in separate encoder calls: the same vectors as one word at a time."""
    network = make_network(tiny_bert_path, "inplace", read_layer=-2)
    long_context = "the farmer who lived by the sea sold a kumquat at the market on a rainy day in spring"
    items = [(f"kumquat{'s' * k}", [long_context.replace("kumquat", f"kumquat{'s' * k}")]) for k in range(12)]
    items += [(f"quokka{'s' * k}", []) for k in range(12)]
    calls: List[int] = []
    run = network._run_encoder
    monkeypatch.setattr(
        network, "_run_encoder", lambda embeds, mask: calls.append(embeds.shape[1]) or run(embeds, mask)
    )
    grouped = network.infer(items)
    assert len(calls) >= 2 and min(calls) < max(calls)  # bare pieces in a short call, contexts in a long one
    single = numpy.vstack([network.infer([item]) for item in items])
    assert numpy.abs(grouped - single).max() < 1e-5


@pytest.mark.parametrize("mode", MODES)
def test_batched_inference_equals_one_word_at_a_time(tiny_bert_path, mode):
    network = make_network(tiny_bert_path, mode)
    batched = network.infer(ITEMS, token_budget=256)
    single = numpy.vstack([network.infer([item]) for item in ITEMS])
    assert numpy.abs(batched - single).max() < 1e-5
    assert not numpy.allclose(batched[0], batched[1])


def test_inference_is_deterministic_in_eval_mode(tiny_bert_path):
    network = make_network(tiny_bert_path, "add", ngram_dropout=0.5)
    first = network.infer(ITEMS)
    network.train()  # infer switches to eval and back
    assert numpy.array_equal(first, network.infer(ITEMS))
    assert network.training


def test_ngram_dropout_only_in_training(tiny_bert_path):
    network = make_network(tiny_bert_path, "form", ngram_dropout=0.5, use_subword_mean=False)
    batch = network.prepare(["kumquats"])
    network.train()
    torch.manual_seed(1)
    outs = {tuple(network(batch)[0, :4].tolist()) for _ in range(5)}
    assert len(outs) > 1
    network.eval()
    assert torch.equal(network(batch), network(batch))


def test_word_without_usable_context_gets_its_form_vector(tiny_bert_path):
    network = make_network(tiny_bert_path, "add").eval()
    form_only = network.form_vectors(*_ids(network, ["orange"])).detach().numpy()
    for contexts in ([], ["a sentence without it"]):
        assert numpy.allclose(network.infer([("orange", contexts)])[0], form_only[0], atol=1e-6)


def _ids(network, words):
    batch = network.prepare(words)
    return batch.ngram_ids, batch.subword_ids


@pytest.mark.parametrize("mode", ["add", "shallow"])
def test_saved_and_loaded_model_gives_identical_vectors(tiny_bert_path, tmp_path, mode):
    network = make_network(tiny_bert_path, mode)
    before = network.infer(ITEMS)
    path = save_bertram(network, tmp_path / "bertram")
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json",
        "digests.json",
        "ngrams.json",
        "weights.safetensors",
    ]
    loaded = load_bertram(path)
    assert loaded.config.mode == mode
    assert len(loaded.ngram_vocab) == len(network.ngram_vocab)
    assert numpy.array_equal(before, loaded.infer(ITEMS))
    # Saving again over an existing directory replaces it atomically.
    save_bertram(loaded, path)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_subword_override_changes_only_the_surface_signal(tiny_bert_path):
    network = make_network(tiny_bert_path, "form")
    pieces = network.inputs.word_pieces("farmer")
    assert len(pieces) == 1
    split = network.tokenizer.convert_tokens_to_ids(["f", "##armer"])
    split = [i for i in split if i != network.tokenizer.unk_token_id] or [network.tokenizer.unk_token_id]
    a = network.prepare(["farmer"])
    b = network.prepare(["farmer"], subword_ids=[split])
    assert torch.equal(a.ngram_ids, b.ngram_ids)
    network.eval()
    assert not torch.allclose(network(a), network(b))


@pytest.mark.parametrize("mode", ["add", "replace", "shallow", "context", "inplace"])
def test_use_form_false_ignores_the_spelling(tiny_bert_path, mode):
    """Contexts only: the vector of a masked word does not depend on how it is written."""
    network = make_network(tiny_bert_path, mode)
    word, contexts = ITEMS[0]
    nonce = [c.replace(word, "wug") for c in contexts]
    real = network.infer([(word, contexts)], use_form=False)
    made_up = network.infer([("wug", nonce)], use_form=False)
    assert numpy.allclose(real, made_up, atol=1e-6)
    assert numpy.array_equal(network.infer(ITEMS), network.infer(ITEMS, use_form=True))
    if mode != "context":  # there the form only stands in for missing contexts
        assert not numpy.allclose(real, network.infer([(word, contexts)]), atol=1e-4)
    # no usable context: nothing is left but the (zeroed) form
    assert not network.infer([("orange", []), ("farmer", ["no such word"])], use_form=False).any()


def test_inplace_reads_the_words_own_pieces_in_context(tiny_bert_path):
    """Inplace rows keep the word, spelled with the given pieces; a span covers all of them."""
    network = make_network(tiny_bert_path, "inplace")
    pieces = network.inputs.word_pieces("kumquat")
    assert len(pieces) > 1  # ku ##m ##qua ##t in the tiny vocabulary
    batch = network.prepare(["kumquat", "orange"], [["she ate a kumquat"], []])
    row, kumquat_alone, orange_alone = batch.rows
    assert list(row.input_ids[row.mask_position : row.mask_position + row.span]) == pieces
    assert network.inputs.mask_id not in row.input_ids
    # Every word is also read from its pieces alone, [CLS] pieces [SEP]: all a word without contexts has.
    cls, sep = network.inputs.cls_id, network.inputs.sep_id
    assert list(kumquat_alone.input_ids) == [cls, *pieces, sep] and kumquat_alone.span == len(pieces)
    orange = network.inputs.word_pieces("orange")
    assert orange_alone.word_index == 1 and list(orange_alone.input_ids) == [cls, *orange, sep]
    # Another spelling (the rare-like pieces of training) changes the input, not the context.
    other = network.prepare(["kumquat"], [["she ate a kumquat"]], subword_ids=[pieces[:1]])
    assert other.rows[0].span == 1 and len(other.rows[0]) == len(row) - (len(pieces) - 1)


def test_subword_share_mixes_unit_vectors_at_the_subword_means_norm(tiny_bert_path):
    own = make_network(tiny_bert_path, "add")
    mixed = make_network(tiny_bert_path, "add", subword_share=0.5)
    only = make_network(tiny_bert_path, "add", subword_share=1.0)
    batch = own.prepare([w for w, _ in ITEMS], [c for _, c in ITEMS])
    for net in (own, mixed, only):
        net.eval()
    v = own(batch)
    sub = own.subword_mean(batch.subword_ids)
    unit = torch.nn.functional.normalize
    assert torch.allclose(only(batch), sub, atol=1e-5)
    expected = sub.norm(dim=1, keepdim=True) * (0.5 * unit(v, dim=1) + 0.5 * unit(sub, dim=1))
    assert torch.allclose(mixed(batch), expected, atol=1e-5)
    with pytest.raises(ValueError, match=r"\[E052\] subword_share must be in \[0, 1\], got 1.5"):
        make_network(tiny_bert_path, "add", subword_share=1.5)


@pytest.mark.parametrize("mode", ["add", "inplace"])
def test_one_piece_word_without_contexts_keeps_its_own_embedding(tiny_bert_path, tmp_path, mode):
    network = make_network(tiny_bert_path, mode, subword_share=0.5, own_embedding_for_one_piece=True).eval()
    own = network.embedding_matrix()[network.inputs.word_pieces("orange")[0]].detach().numpy()
    items = [
        ("orange", []),
        ("orange", ["no such word here"]),  # one piece, no usable context
        ("orange", ["the orange was sweet"]),
        ("kumquat", []),
        ("kumquat", ["she ate a kumquat"]),
    ]
    ours = network.infer(items)
    assert len(network.inputs.word_pieces("orange")) == 1 and len(network.inputs.word_pieces("kumquat")) > 1
    numpy.testing.assert_allclose(ours[:2], [own, own], atol=1e-6)
    network.config.own_embedding_for_one_piece = False  # the paper: the form vector for every word
    paper = network.infer(items)
    assert numpy.abs(paper[0] - own).max() > 1e-3
    numpy.testing.assert_allclose(ours[2:], paper[2:], atol=1e-6)  # contexts or several pieces: unchanged
    network.config.own_embedding_for_one_piece = True
    save_bertram(network, tmp_path / "m")
    numpy.testing.assert_allclose(load_bertram(tmp_path / "m").infer(items[:1]), [own], atol=1e-6)


def test_the_callers_config_is_left_as_it_was(tiny_bert_path):
    """The network records the encoder's widths in a copy: a config can build several networks."""
    config = BertramConfig(base_model=tiny_bert_path, mode="add")
    before = config.to_dict()
    encoder, tokenizer = load_encoder(tiny_bert_path)
    network = BertramNetwork(config, NgramVocab(), encoder, tokenizer)
    assert config.to_dict() == before and config.encoder_embedding_width is None
    assert network.config is not config and network.config.encoder_embedding_width == network.width
    assert network.config == BertramConfig(
        **{**before, **{k: v for k, v in network.config.to_dict().items() if k.startswith("encoder_")}}
    )


# -- exact shortcuts of the context encoder: shared rows, no layer above the read layer ------


def plain_and_shortcut_vectors(network, items):
    """The same items inferred with every shortcut off, then on (the default)."""
    network.share_equal_rows = network.stop_at_read_layer = network.length_grouped_calls = False
    plain = network.infer(items)
    network.share_equal_rows = network.stop_at_read_layer = network.length_grouped_calls = True
    return plain, network.infer(items)


@pytest.mark.parametrize("n_layers", [0, 1, 2])
@pytest.mark.parametrize("kind", ["bert", "roberta", "mpnet"])
def test_a_view_of_the_first_layers_gives_that_hidden_state_with_the_same_parameters(request, kind, n_layers):
    from spacy_bertram.model.encoder import encoder_up_to

    encoder, tokenizer = load_encoder(request.getfixturevalue(f"tiny_{kind}_path"))
    ids = torch.as_tensor([tokenizer("the farmer sold a kumquat")["input_ids"]])
    full = encoder(input_ids=ids, output_hidden_states=True).hidden_states[n_layers]
    view = encoder_up_to(encoder, n_layers)
    assert torch.allclose(view(input_ids=ids).last_hidden_state, full, atol=1e-6)
    assert {id(p) for p in view.parameters()} <= {id(p) for p in encoder.parameters()}  # shared, not copied
    assert len(encoder.encoder.layer) == 2 and encoder_up_to(encoder, n_layers) is view  # original intact, cached


@pytest.mark.parametrize("mode", ["inplace", "add", "replace", "shallow"])
@pytest.mark.parametrize("read_layer", [-1, -2, 1])
def test_the_shortcuts_give_the_plain_paths_vectors(tiny_bert_path, mode, read_layer):
    network = make_network(tiny_bert_path, mode, read_layer=read_layer)
    sentence = "the farmer sold a kumquat in the garden"  # three words share it
    items = ITEMS + [("farmer", [sentence]), ("kumquat", [sentence]), ("garden", [sentence, "the old garden"])]
    plain, shortcut = plain_and_shortcut_vectors(network, items)
    assert numpy.abs(plain - shortcut).max() < 1e-5


def test_rows_with_the_same_input_are_encoded_once(tiny_bert_path, monkeypatch):
    network = make_network(tiny_bert_path, "inplace", read_layer=-2)
    sentence = "the farmer sold a kumquat in the garden"
    items = [("farmer", [sentence]), ("kumquat", [sentence]), ("garden", [sentence])]
    encoded = []
    run = network._run_encoder
    monkeypatch.setattr(
        network, "_run_encoder", lambda embeds, attention: encoded.append(len(embeds)) or run(embeds, attention)
    )
    batch = network.prepare(*zip(*[(w, c) for w, c in items]))
    context_rows = [r for r in batch.rows if len(r) > 6]
    assert len(context_rows) == 3 and len({r.input_ids for r in context_rows}) == 1
    network.infer(items)
    assert sum(encoded) == len(batch.rows) - 2  # three context rows, one encoded; the bare rows each


# -- the int8 context encoder (an option, not exact) -------------------------------------------------


def test_the_int8_encoder_quantizes_every_linear_layer_and_shares_the_rest(tiny_bert_path):
    from torch import nn
    from torch.ao.nn.quantized.dynamic import Linear as Int8Linear
    from spacy_bertram.model.encoder import int8_encoder

    encoder, _ = load_encoder(tiny_bert_path)
    quantized = int8_encoder(encoder)
    linears = [name for name, m in encoder.named_modules() if isinstance(m, nn.Linear)]
    int8 = [name for name, m in quantized.named_modules() if isinstance(m, Int8Linear)]
    assert linears and int8 == linears  # every one, in its place
    assert all(isinstance(m, nn.Linear) for name, m in encoder.named_modules() if name in linears)  # original intact
    assert quantized.get_input_embeddings().weight is encoder.get_input_embeddings().weight  # shared, not copied
    assert int8_encoder(encoder) is quantized  # made once


def test_int8_vectors_are_near_the_float_ones_and_the_setting_is_the_networks(tiny_bert_path):
    network = make_network(tiny_bert_path, "inplace", read_layer=-2)
    sentence = "the farmer sold a kumquat in the garden"
    items = ITEMS + [("kumquat", [sentence]), ("garden", [sentence, "the old garden"])]
    exact = network.infer(items)
    network.int8_encoder = True
    try:
        quantized = network.infer(items)
    finally:
        network.int8_encoder = False
    cosines = (exact * quantized).sum(1) / (numpy.linalg.norm(exact, axis=1) * numpy.linalg.norm(quantized, axis=1))
    assert cosines.min() > 0.95 and numpy.abs(exact - quantized).max() > 1e-5  # close, and not the same path
    assert numpy.array_equal(network.infer(items), exact)  # off again: the float encoder


# -- the context mean's share: mixed in where a word has contexts -----------------------------


@pytest.mark.parametrize("mode", ["inplace", "add"])
@pytest.mark.parametrize("use_form", [True, False])
def test_context_mean_share_zero_is_the_old_output_bit_for_bit(tiny_bert_path, monkeypatch, mode, use_form):
    network = make_network(tiny_bert_path, mode, subword_share=0.3).eval()
    batch = network.prepare([w for w, _ in ITEMS], [c for _, c in ITEMS], use_form=use_form)
    with torch.no_grad():
        ours = network(batch, use_form=use_form)
        monkeypatch.setattr(network, "mix_context_mean", lambda vectors, *args, **kwargs: vectors)
        old = network(batch, use_form=use_form)
    assert torch.equal(ours, old)


@pytest.mark.parametrize("mode", ["inplace", "add"])
@pytest.mark.parametrize("use_form", [True, False])
def test_the_context_mean_moves_words_with_contexts_only(tiny_bert_path, mode, use_form):
    """A word without a usable context keeps its vector bit for bit; one with contexts gets
    (1 - s) unit(v) + s unit(context mean) at v's norm, the share of its path (spelling or not)."""
    own = make_network(tiny_bert_path, mode).eval()  # no mix after the network's own vector
    mixed = make_network(tiny_bert_path, mode, context_mean_share=0.4, context_mean_share_with_form=0.2).eval()
    share = mixed.context_mean_share_for(use_form)
    assert share == (0.2 if use_form else 0.4)
    items = [*ITEMS, ("kumquat", ["no such word"])]
    alone = [3, 5]  # orange (no contexts) and kumquat (no usable one)
    v, ours = own.infer(items, use_form=use_form), mixed.infer(items, use_form=use_form)
    assert numpy.array_equal(ours[alone], v[alone])
    batch = own.prepare([w for w, _ in items], [c for _, c in items], use_form=use_form)
    assert batch.has_contexts.tolist() == [i not in alone for i in range(len(items))]
    with torch.no_grad():
        mean = own.context_mean(batch, use_form).numpy()
    for i in sorted(set(range(len(items))) - set(alone)):
        unit = v[i] / numpy.linalg.norm(v[i]), mean[i] / numpy.linalg.norm(mean[i])
        expected = numpy.linalg.norm(v[i]) * ((1 - share) * unit[0] + share * unit[1])
        numpy.testing.assert_allclose(ours[i], expected, atol=1e-5)
        assert numpy.abs(ours[i] - v[i]).max() > 1e-4


@pytest.mark.parametrize("mode, use_form", [("inplace", True), ("inplace", False), ("add", True), ("context", True)])
def test_the_context_mean_is_the_hand_computed_mean_of_the_context_words(tiny_bert_path, mode, use_form):
    """Pooled over a word's contexts, without the word's own pieces (every occurrence), the special tokens,
    the ADD prefix or the padding of a shorter row; a word without contexts gets zeros."""
    network = make_network(tiny_bert_path, mode).eval()
    contexts = ["the farmer sold a kumquat at the market", "a kumquat and a kumquat tree"]
    batch = network.prepare(["kumquat", "garden"], [contexts, []], use_form=use_form)
    assert len({len(r) for r in batch.rows if r.word_index == 0}) == 2  # rows of two lengths: padding
    table = network.embedding_matrix().detach()
    words = "the farmer sold a at the market a and a tree".split()
    ids = network.tokenizer.convert_tokens_to_ids(words)
    assert network.tokenizer.unk_token_id not in ids
    with torch.no_grad():
        mean = network.context_mean(batch, use_form)
    torch.testing.assert_close(mean[0], table[ids].mean(dim=0), atol=1e-6, rtol=0)
    assert not mean[1].any()
    if mode == "inplace" and use_form:
        assert len(network.inputs.word_pieces("kumquat")) > 1  # several pieces, each occurrence left out


def test_the_context_mean_shares_round_trip(tiny_bert_path, tmp_path):
    network = make_network(tiny_bert_path, "inplace", context_mean_share=0.5, context_mean_share_with_form=0.25)
    save_bertram(network, tmp_path / "m")
    loaded = load_bertram(tmp_path / "m")
    assert (loaded.config.context_mean_share, loaded.config.context_mean_share_with_form) == (0.5, 0.25)
    assert loaded.config == network.config
    numpy.testing.assert_array_equal(loaded.infer(ITEMS, use_form=False), network.eval().infer(ITEMS, use_form=False))
    defaults = BertramConfig()
    assert (defaults.context_mean_share, defaults.context_mean_share_with_form, defaults.context_mean_smoothing) == (
        0.7,
        0.0,
        1e-4,
    )
    without_shares = {k: v for k, v in network.config.to_dict().items() if not k.startswith("context_mean_")}
    with pytest.raises(ValueError, match=r"\[E059\] The BERTRAM config lacks \['context_mean_share'"):
        BertramConfig.from_dict(without_shares)
    with pytest.raises(ValueError, match=r"\[E052\] context_mean_share must be in \[0, 1\], got -0.1"):
        BertramConfig(context_mean_share=-0.1)
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError, match=r"\[E052\] context_mean_smoothing must be in \[0, 1\)"):
            BertramConfig(context_mean_smoothing=bad)


# -- the context mean's weights: frequent words count for little --------------------------------------


def _weighted_network(path, smoothing=0.01):
    network = make_network(path, "inplace", context_mean_smoothing=smoothing).eval()
    network.context_word_counts = CountTable({"the": 500, "a": 300, "market": 5, "farmer": 1}, total=1000)
    return network


def test_the_context_mean_weighs_each_context_word_by_its_training_count(tiny_bert_path):
    """a / (a + p): p a word's share of the counts; a continuation piece or an uncounted word weighs 1."""
    network = _weighted_network(tiny_bert_path)
    tokenizer = network.tokenizer
    weights = network.context_piece_weights()
    expected = {"the": 0.01 / 0.51, "a": 0.01 / 0.31, "market": 0.01 / 0.015, "farmer": 0.01 / 0.011, "sold": 1.0}
    for word, weight in expected.items():
        assert float(weights[tokenizer.convert_tokens_to_ids(word)]) == pytest.approx(weight, rel=1e-6)
    continuation = next(i for t, i in tokenizer.get_vocab().items() if t.startswith("##"))
    assert float(weights[continuation]) == 1.0
    batch = network.prepare(["kumquat", "garden"], [["the farmer sold a kumquat at the market"], []])
    words = "the farmer sold a at the market".split()
    ids = tokenizer.convert_tokens_to_ids(words)
    table = network.embedding_matrix().detach()
    w = torch.as_tensor([expected.get(word, 1.0) for word in words], dtype=table.dtype)
    with torch.no_grad():
        mean = network.context_mean(batch)
    torch.testing.assert_close(mean[0], (table[ids] * w[:, None]).sum(0) / w.sum(), atol=1e-6, rtol=0)
    assert not mean[1].any()  # no contexts: zeros, not a division by zero
    plain = table[ids].mean(0)
    assert float(torch.linalg.vector_norm(mean[0] - plain)) > 1e-3


def test_without_counts_or_smoothing_the_context_mean_is_the_plain_mean(tiny_bert_path):
    batch_of = lambda net: net.prepare(["kumquat"], [["the farmer sold a kumquat at the market"]])  # noqa: E731
    plain = make_network(tiny_bert_path, "inplace").eval()  # smoothing 0 (a model saved before it existed)
    assert plain.context_piece_weights() is None
    unweighted = _weighted_network(tiny_bert_path, smoothing=0.0)
    assert unweighted.context_piece_weights() is None
    countless = make_network(tiny_bert_path, "inplace", context_mean_smoothing=1e-4).eval()
    with pytest.warns(UserWarning, match=r"\[W020\].*no counts.tsv"):
        assert countless.context_piece_weights() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert countless.context_piece_weights() is None
    with torch.no_grad():
        expected = plain.context_mean(batch_of(plain))
        for network in (unweighted, countless):
            assert torch.equal(network.context_mean(batch_of(network)), expected)


def test_load_bertram_gives_the_network_its_counts(tiny_bert_path, tmp_path):
    network = make_network(tiny_bert_path, "inplace", context_mean_smoothing=0.01, context_mean_share=0.7)
    save_bertram(network, tmp_path / "with", counts={"the": 500, "a": 300, "market": 5})
    save_bertram(network, tmp_path / "without")
    loaded = load_bertram(tmp_path / "with")
    assert loaded.context_word_counts.count("the") == 500
    assert load_bertram(tmp_path / "without").context_word_counts is None
    items = [("kumquat", ["the farmer sold a kumquat at the market", "a kumquat tree"])]
    network.eval().context_word_counts = CountTable({"the": 500, "a": 300, "market": 5})
    numpy.testing.assert_array_equal(loaded.infer(items, use_form=False), network.infer(items, use_form=False))
