"""spacy-bertram.TransformerModel.v1: stock equality, injection, alignment, gradients, I/O."""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.training import Example
from spacy_transformers.data_classes import FullTransformerBatch
from thinc.api import Adam
from transformers import AutoTokenizer

from spacy_bertram.injection import BertramTransformerModel
from spacy_bertram.injection.builders import slash_token_id
from spacy_bertram.injection.plan import make_injection_plan, max_sequence_length

TEXT = "the farmer sold kumquats at the market"  # kumquats -> kum ##qua ##t ##s
RARE = 3  # token index of "kumquats"
LONG = "the old man and the red dog walked to the city by the river and saw many birds"


def make_nlp(
    path: str,
    injection: Optional[str] = "slash",
    window: int = 128,
    stride: int = 96,
    tokenizer_config: Optional[dict] = None,
    transformer_config: Optional[dict] = None,
) -> spacy.Language:
    """A blank English pipeline with one transformer; injection None = stock v3."""
    model = {
        "@architectures": "spacy-transformers.TransformerModel.v3",
        "name": path,
        "tokenizer_config": {"use_fast": True, **(tokenizer_config or {})},
        "transformer_config": dict(transformer_config or {}),
        "get_spans": {
            "@span_getters": "spacy-transformers.strided_spans.v1",
            "window": window,
            "stride": stride,
        },
    }
    if injection is not None:
        model["@architectures"] = "spacy-bertram.TransformerModel.v1"
        model["injection"] = injection
    nlp = spacy.blank("en")
    nlp.add_pipe("transformer", config={"model": model})
    nlp.initialize()
    return nlp


def docs_with(nlp: spacy.Language, texts: List[str], vectors: List[Optional[Dict]]) -> List[Doc]:
    docs = [nlp.make_doc(text) for text in texts]
    for doc, vecs in zip(docs, vectors):
        doc._.bertram = vecs
    return docs


def predict(nlp: spacy.Language, docs: List[Doc]) -> FullTransformerBatch:
    return nlp.get_pipe("transformer").model.predict(docs)


def hidden(batch: FullTransformerBatch) -> numpy.ndarray:
    return numpy.asarray(batch.model_output.last_hidden_state)


def vec(seed: int, width: int = 32) -> numpy.ndarray:
    return numpy.random.default_rng(seed).normal(size=width).astype("float32")


def hf_of(nlp: spacy.Language):
    return nlp.get_pipe("transformer").model.transformer


def assert_same_layout(a: FullTransformerBatch, b: FullTransformerBatch) -> None:
    assert a.wordpieces.strings == b.wordpieces.strings
    numpy.testing.assert_array_equal(a.wordpieces.input_ids, b.wordpieces.input_ids)
    numpy.testing.assert_array_equal(a.wordpieces.attention_mask, b.wordpieces.attention_mask)
    numpy.testing.assert_array_equal(a.align.data, b.align.data)
    numpy.testing.assert_array_equal(a.align.lengths, b.align.lengths)
    assert hidden(a).shape == hidden(b).shape
    for da, db in zip(a.doc_data, b.doc_data):
        assert da.wordpieces.strings == db.wordpieces.strings
        numpy.testing.assert_array_equal(da.align.data, db.align.data)
        numpy.testing.assert_array_equal(da.align.lengths, db.align.lengths)
        assert da.tensors[0].shape == db.tensors[0].shape


@pytest.fixture(scope="module")
def stock(tiny_encoder_path):
    return make_nlp(tiny_encoder_path, None, window=6, stride=4)


@pytest.fixture(scope="module")
def nlps(tiny_encoder_path):
    return {
        mode: make_nlp(tiny_encoder_path, mode, window=6, stride=4) for mode in ("slash", "replace", "recentre", "none")
    }


def test_registered_and_validated(tiny_encoder_path):
    create = spacy.registry.architectures.get("spacy-bertram.TransformerModel.v1")
    get_spans = spacy.registry.span_getters.get("spacy-transformers.doc_spans.v1")()
    model = create(tiny_encoder_path, get_spans, injection="replace")
    assert isinstance(model, BertramTransformerModel)
    assert model.injection == "replace"
    with pytest.raises(ValueError, match=r"\[E156\] injection must be one of .*got 'prefix'"):
        create(tiny_encoder_path, get_spans, injection="prefix")


@pytest.mark.parametrize("mode", ["slash", "replace", "recentre", "none"])
def test_no_vectors_identical_to_stock(stock, nlps, mode):
    texts = [TEXT, LONG, "kumquats", "a"]
    # "none" ignores vectors that are there; the others see none (None / empty dict).
    vectors = [{RARE: vec(0)}, {1: vec(1)}, None, {}] if mode == "none" else [None, {}, None, {}]
    ours = predict(nlps[mode], docs_with(nlps[mode], texts, vectors))
    ref = predict(stock, docs_with(stock, texts, [None] * 4))
    assert len(ref.wordpieces) > len(texts)  # strided spans and padding are exercised
    assert_same_layout(ours, ref)
    assert numpy.array_equal(hidden(ours), hidden(ref))
    # Training mode (dropout) too: same seed, same ops, same numbers.
    torch.manual_seed(7)
    ours_train, _ = nlps[mode].get_pipe("transformer").model.begin_update(docs_with(nlps[mode], texts, vectors))
    torch.manual_seed(7)
    ref_train, _ = stock.get_pipe("transformer").model.begin_update(docs_with(stock, texts, [None] * 4))
    assert torch.equal(ours_train.model_output.last_hidden_state, ref_train.model_output.last_hidden_state)


@pytest.mark.parametrize("mode", ["slash", "replace", "recentre"])
def test_vector_changes_outputs_and_keeps_alignment(stock, nlps, mode):
    texts = [TEXT, LONG]
    ref = predict(stock, docs_with(stock, texts, [None, None]))
    ours = predict(nlps[mode], docs_with(nlps[mode], texts, [{RARE: vec(0)}, None]))
    assert_same_layout(ours, ref)
    # Doc 0's spans that contain "kumquats" change; doc 1 (no vectors) does not.
    doc0_ours, doc1_ours = [numpy.asarray(d.tensors[0]) for d in ours.doc_data]
    doc0_ref, doc1_ref = [numpy.asarray(d.tensors[0]) for d in ref.doc_data]
    real0 = numpy.asarray(ours.doc_data[0].wordpieces.attention_mask) > 0
    real1 = numpy.asarray(ours.doc_data[1].wordpieces.attention_mask) > 0
    changed = (numpy.abs(doc0_ours - doc0_ref).max(axis=-1) > 1e-3) & real0
    assert changed.any()
    for row, span in enumerate(ours.spans[0]):
        assert changed[row].any() == (span.start <= RARE < span.end)
    numpy.testing.assert_allclose(doc1_ours[real1], doc1_ref[real1], atol=1e-5)
    # A different vector gives different states.
    other = predict(nlps[mode], docs_with(nlps[mode], texts, [{RARE: vec(5)}, None]))
    assert not numpy.allclose(hidden(other), hidden(ours), atol=1e-4)


def word_positions(tokenizer, text: str, index: int) -> List[int]:
    """The positions in `tokenizer(text)` of the wordpieces of whitespace word `index` (by character offsets:
    "kum ##qua ##t ##s" in WordPiece, "Ġkumquat s" in the tiny byte-level BPE)."""
    encoded = tokenizer(text, return_offsets_mapping=True)
    start = len(" ".join(text.split()[:index])) + (index > 0)
    end = start + len(text.split()[index])
    return [k for k, (a, b) in enumerate(encoded["offset_mapping"]) if start <= a < b <= end]


def word_ids(tokenizer, text: str, index: int) -> List[int]:
    ids = tokenizer(text)["input_ids"]
    return [ids[k] for k in word_positions(tokenizer, text, index)]


def _hand_built_run(nlp, doc_text: str, vector: numpy.ndarray, mode: str) -> numpy.ndarray:
    """Build inputs_embeds by hand for one doc, run the HF model directly, map back."""
    hf = hf_of(nlp)
    tokenizer = nlp.get_pipe("transformer").model.tokenizer
    positions = word_positions(tokenizer, doc_text, RARE)
    i, j = positions[0], positions[-1]
    assert j > i  # a word of several pieces
    ids = torch.tensor(tokenizer(doc_text)["input_ids"])
    with torch.no_grad():
        emb = hf.get_input_embeddings()(ids)
        v = torch.tensor(vector)
        if mode == "slash":
            slash = hf.get_input_embeddings()(torch.tensor([slash_token_id(tokenizer)]))
            embeds = torch.cat([emb[: j + 1], slash, v[None], emb[j + 1 :]])
            keep = [k for k in range(len(embeds)) if k not in (j + 1, j + 2)]
        elif mode == "recentre":  # the pieces' mean moves to v
            embeds = torch.cat([emb[:i], emb[i : j + 1] + (v - emb[i : j + 1].mean(0)), emb[j + 1 :]])
            keep = list(range(len(embeds)))
        else:
            embeds = torch.cat([emb[:i], v[None], emb[j + 1 :]])
            keep = list(range(i)) + [i] * (j - i + 1) + list(range(i + 1, len(embeds)))
        hf.eval()
        out = hf(inputs_embeds=embeds[None], attention_mask=torch.ones(1, len(embeds)))
    return out.last_hidden_state[0, keep].numpy()


@pytest.mark.parametrize("mode", ["slash", "replace", "recentre"])
def test_matches_hand_built_inputs_embeds(tiny_encoder_path, mode):
    nlp = make_nlp(tiny_encoder_path, mode)  # one span per doc
    v = vec(3)
    expected = _hand_built_run(nlp, TEXT, v, mode)
    # Alone, and padded in a batch after a longer doc without vectors.
    alone = predict(nlp, docs_with(nlp, [TEXT], [{RARE: v}]))
    numpy.testing.assert_allclose(hidden(alone)[0], expected, atol=1e-5)
    batch = predict(nlp, docs_with(nlp, [LONG, TEXT], [None, {RARE: v}]))
    first = batch.doc_data[1].tensors[0][0]
    numpy.testing.assert_allclose(first[: len(expected)], expected, atol=1e-5)
    if mode != "recentre":  # recentre runs the stock forward: its padding holds the encoder's output for [PAD]
        assert not first[len(expected) :].any()  # the mapped layout's padding positions hold zeros
    if mode == "replace":  # the merged position is copied to all the word's wordpieces
        rows = first[batch.doc_data[1].align[RARE].dataXd.ravel()]
        assert len(rows) >= 2 and (rows == rows[0]).all()


def test_other_outputs_mapped(tiny_encoder_path):
    config = {"output_hidden_states": True, "output_attentions": True}
    stock = make_nlp(tiny_encoder_path, None, transformer_config=config)
    nlp = make_nlp(tiny_encoder_path, "slash", transformer_config=config)
    ref = predict(stock, docs_with(stock, [TEXT, LONG], [None, None]))
    ours = predict(nlp, docs_with(nlp, [TEXT, LONG], [{RARE: vec(0)}, None]))
    for key in ("hidden_states", "attentions"):
        assert [t.shape for t in ours.model_output[key]] == [t.shape for t in ref.model_output[key]]
    assert torch.equal(ours.model_output["hidden_states"][-1], ours.model_output.last_hidden_state)
    # The no-vector doc's attention weights are the stock ones.
    torch.testing.assert_close(ours.model_output["attentions"][0][1], ref.model_output["attentions"][0][1])
    assert len(ours.doc_data[0].model_output["hidden_states"]) == 3


@pytest.mark.parametrize("mode", ["slash", "replace"])
def test_gradients_reach_embeddings_and_encoder(tiny_encoder_path, mode):
    nlp = make_nlp(tiny_encoder_path, mode)
    model = nlp.get_pipe("transformer").model
    hf = model.transformer
    hf.zero_grad(set_to_none=True)
    docs = docs_with(nlp, [TEXT, LONG], [{RARE: vec(0)}, None])
    output, backprop = model.begin_update(docs)
    # Random, not ones: the gradient of a sum of LayerNorm outputs is zero.
    rng = numpy.random.default_rng(0)
    d_tensors = [[rng.normal(size=d.tensors[0].shape).astype("f")] for d in output.doc_data]
    backprop(output.unsplit_by_doc(d_tensors))
    tokenizer = model.tokenizer
    emb_grad = hf.get_input_embeddings().weight.grad
    assert emb_grad is not None
    (farmer,) = word_ids(tokenizer, TEXT, 1)
    assert emb_grad[farmer].abs().sum() > 0
    kum = emb_grad[word_ids(tokenizer, TEXT, RARE)[0]].abs().sum()
    slash = emb_grad[slash_token_id(tokenizer)].abs().sum()
    if mode == "slash":  # the word's own pieces and "/" are in the input
        assert kum > 0 and slash > 0
    else:  # the pieces were replaced by the vector
        assert kum == 0 and slash == 0
    for name, param in hf.named_parameters():
        if "encoder.layer" in name and name.endswith("weight"):
            assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_strided_spans_rare_word_at_edges(tiny_encoder_path):
    # window 4, stride 3: spans [0:4] [3:7] [6:9]; tokens 3 and 6 are in two spans.
    stock = make_nlp(tiny_encoder_path, None, window=4, stride=3)
    text = "kumquats grew in the farmer garden kumquats were sold"
    vectors = {0: vec(0), 3: vec(1), 6: vec(2), 8: vec(3)}
    ref = predict(stock, docs_with(stock, [text], [None]))
    assert [(s.start, s.end) for s in ref.spans[0]] == [(0, 4), (3, 7), (6, 9)]
    for mode in ("slash", "replace"):
        nlp = make_nlp(tiny_encoder_path, mode, window=4, stride=3)
        ours = predict(nlp, docs_with(nlp, [text], [vectors]))
        assert_same_layout(ours, ref)
        assert numpy.isfinite(hidden(ours)).all()
        real = numpy.asarray(ref.wordpieces.attention_mask) > 0
        diff = numpy.abs(hidden(ours) - hidden(ref)).max(axis=-1)
        assert (diff[real] > 1e-4).all()  # every span holds a word with a vector
        # Each occurrence is injected in every span that holds it.
        plan = make_injection_plan(
            ours.spans[0], ours.wordpieces, ours.align, mode, nlp.get_pipe("transformer").model.tokenizer, hf_of(nlp)
        )
        assert sorted(plan.vector_rows.tolist()) == [0, 0, 1, 1, 2, 2]


def test_truncation(tiny_encoder_path):
    # Two tokens short of TEXT's row: BERT's "[CLS] the farmer sold kum ##qua ##t ##s at the" is cut before "market".
    tokenizer = AutoTokenizer.from_pretrained(tiny_encoder_path)
    full = tokenizer.convert_ids_to_tokens(tokenizer(TEXT)["input_ids"])
    config = {"model_max_length": len(full) - 2}
    stock = make_nlp(tiny_encoder_path, None, tokenizer_config=config)
    ref = predict(stock, docs_with(stock, [TEXT, "the kumquats"], [None, None]))
    assert hidden(ref).shape[1] == len(full) - 2
    slash = make_nlp(tiny_encoder_path, "slash", tokenizer_config=config)
    tokenizer = slash.get_pipe("transformer").model.tokenizer
    assert max_sequence_length(tokenizer, hf_of(slash).config) == len(full) - 2
    # The full row has no room for "/ v": slash leaves it alone; the short row gets it.
    ours = predict(slash, docs_with(slash, [TEXT, "the kumquats"], [{RARE: vec(0)}, {1: vec(1)}]))
    assert_same_layout(ours, ref)
    numpy.testing.assert_allclose(hidden(ours)[0], hidden(ref)[0], atol=1e-5)
    assert numpy.abs(hidden(ours)[1] - hidden(ref)[1]).max() > 1e-3
    plan = make_injection_plan(
        ours.spans[0] + ours.spans[1], ours.wordpieces, ours.align, "slash", tokenizer, hf_of(slash)
    )
    assert plan.vector_rows.tolist() == [1] and plan.n_skipped == 1 and plan.input_ids.shape[1] == len(full) - 2
    # Replace merges the pieces, so it always fits; a word cut before its last piece keeps what is left.
    pieces = word_positions(tokenizer, TEXT, RARE)
    replace = make_nlp(tiny_encoder_path, "replace", tokenizer_config={"model_max_length": pieces[-1]})
    cut = predict(replace, docs_with(replace, [TEXT], [{RARE: vec(0)}]))
    assert cut.wordpieces.strings[0] == full[: pieces[-1]]
    rows = hidden(cut)[0]
    assert (rows[pieces[0] : pieces[-1]] == rows[pieces[0]]).all() and hidden(cut).shape == (1, pieces[-1], 32)


def test_bad_vectors_raise(nlps):
    nlp = nlps["slash"]
    for bad, match in [
        ({RARE: numpy.ones(31, dtype="f")}, r"\[E160\].*32 wide"),
        ({RARE: numpy.full(32, numpy.nan, dtype="f")}, r"\[E161\].*not finite"),
        ({99: vec(0)}, r"\[E159\].*7 tokens"),
    ]:
        with pytest.raises(ValueError, match=match):
            predict(nlp, docs_with(nlp, [TEXT], [bad]))


def test_round_trip_disk_and_bytes(tiny_encoder_path, tmp_path):
    nlp = make_nlp(tiny_encoder_path, "replace")
    vectors = [{RARE: vec(0)}, {2: vec(1)}]
    before = hidden(predict(nlp, docs_with(nlp, [TEXT, LONG], vectors)))
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    model = loaded.get_pipe("transformer").model
    assert isinstance(model, BertramTransformerModel) and model.injection == "replace"
    after = hidden(predict(loaded, docs_with(loaded, [TEXT, LONG], vectors)))
    assert numpy.array_equal(before, after)
    docs = list(loaded.pipe(docs_with(loaded, [TEXT, LONG], vectors)))
    assert numpy.array_equal(docs[0]._.trf_data.tensors[0], before[:1])
    # The config decides the injection of a loaded pipeline ("none": the stock model).
    as_stock = spacy.load(
        tmp_path / "pipeline", config={"components": {"transformer": {"model": {"injection": "none"}}}}
    )
    plain = hidden(predict(as_stock, docs_with(as_stock, [TEXT, LONG], vectors)))
    assert numpy.array_equal(plain, hidden(predict(nlp, docs_with(nlp, [TEXT, LONG], [None, None]))))
    fresh = make_nlp(tiny_encoder_path, "replace")
    torch.nn.init.zeros_(hf_of(fresh).get_input_embeddings().weight)
    fresh.from_bytes(nlp.to_bytes())
    again = hidden(predict(fresh, docs_with(fresh, [TEXT, LONG], vectors)))
    assert numpy.array_equal(before, again)


def _textcat_nlp(path: str) -> spacy.Language:
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "transformer",
        config={
            "model": {
                "@architectures": "spacy-bertram.TransformerModel.v1",
                "name": path,
                "injection": "slash",
                "tokenizer_config": {"use_fast": True},
                "get_spans": {"@span_getters": "spacy-transformers.doc_spans.v1"},
            }
        },
    )
    nlp.add_pipe(
        "textcat",
        config={
            "model": {
                "@architectures": "spacy.TextCatReduce.v1",
                "exclusive_classes": True,
                "use_reduce_first": False,
                "use_reduce_last": False,
                "use_reduce_max": False,
                "use_reduce_mean": True,
                "tok2vec": {
                    "@architectures": "spacy-transformers.TransformerListener.v1",
                    "grad_factor": 1.0,
                    "pooling": {"@layers": "reduce_mean.v1"},
                },
            }
        },
    )
    return nlp


def test_textcat_listener_trains(tiny_encoder_path):
    nlp = _textcat_nlp(tiny_encoder_path)
    data = [
        ("the farmer sold kumquats", "POS", {3: vec(0)}),
        ("she ate a sweet kumquat", "POS", {4: vec(1)}),
        ("the dog ran on the road", "NEG", None),
        ("a bad old car", "NEG", {3: vec(2)}),
    ]

    def examples() -> List[Example]:
        result = []
        for text, label, vectors in data:
            doc = nlp.make_doc(text)
            doc._.bertram = vectors
            cats = {"POS": float(label == "POS"), "NEG": float(label == "NEG")}
            result.append(Example.from_dict(doc, {"cats": cats}))
        return result

    optimizer = nlp.initialize(examples)
    optimizer = Adam(1e-3)
    hf = hf_of(nlp)
    layer0 = hf.encoder.layer[0].attention.self.query.weight.detach().clone()
    losses = []
    for _ in range(8):
        step: Dict[str, float] = {}
        nlp.update(examples(), sgd=optimizer, losses=step)
        losses.append(step["textcat"])
    assert losses[-1] < losses[0]
    assert not torch.equal(layer0, hf.encoder.layer[0].attention.self.query.weight)


def test_replace_listeners_keeps_injection(tiny_encoder_path):
    nlp = _textcat_nlp(tiny_encoder_path)
    nlp.get_pipe("textcat").add_label("POS")
    nlp.get_pipe("textcat").add_label("NEG")
    nlp.initialize()
    nlp.replace_listeners("transformer", "textcat", ["model.tok2vec"])
    cfg = nlp.config["components"]["textcat"]["model"]["tok2vec"]
    assert cfg["@architectures"] == "spacy-bertram.Tok2VecTransformer.v1"
    assert cfg["injection"] == "slash"
    doc = nlp.make_doc(TEXT)
    doc._.bertram = {RARE: vec(0)}
    assert set(nlp(doc).cats) == {"POS", "NEG"}


def test_recentre_with_the_subword_mean_changes_nothing(stock, nlps):
    """Recentring on the pieces' own mean is the identity: only BERTRAM's difference from it moves them."""
    nlp = nlps["recentre"]
    tokenizer = nlp.get_pipe("transformer").model.tokenizer
    table = hf_of(nlp).get_input_embeddings().weight.detach().numpy()
    mean = table[word_ids(tokenizer, TEXT, RARE)].mean(axis=0)
    ours = predict(nlp, docs_with(nlp, [TEXT, LONG], [{RARE: mean}, None]))
    ref = predict(stock, docs_with(stock, [TEXT, LONG], [None, None]))
    assert_same_layout(ours, ref)
    real = numpy.asarray(ref.wordpieces.attention_mask) > 0
    numpy.testing.assert_allclose(hidden(ours)[real], hidden(ref)[real], atol=1e-5)
