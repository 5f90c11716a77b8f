"""The vectorised injection plan equals the per-wordpiece loop it replaced, on varied inputs.

`reference_plan` is the loop as it was before the plan was vectorised (for slash and
replace), and recentre written as a loop over words and pieces: every array of the
plan must be identical, for each mode, strided and overlapping spans, truncation,
slash insertions that do not fit, and tokens that share wordpieces ("do" / "n't" and "don").
"""

from __future__ import annotations

import logging
import random
from types import SimpleNamespace
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Span
from spacy_transformers.data_classes import WordpieceBatch
from thinc.types import Ragged

from spacy_bertram.injection.batch import InjectionPlan
from spacy_bertram.injection.builders import slash_token_id
from spacy_bertram.types import INJECTION_MODES
from spacy_bertram.injection.plan import doc_vectors, make_injection_plan, max_sequence_length
from tests.util import plan_inputs

logger = logging.getLogger(__name__)
WIDTH = 8


def reference_plan(
    flat_spans: Sequence[Span], wordpieces: WordpieceBatch, align: Ragged, injection: str, tokenizer: Any, hf_model: Any
) -> Optional[InjectionPlan]:
    """The per-wordpiece loop `make_injection_plan` replaced (same arguments, same plan)."""
    width = int(hf_model.get_input_embeddings().weight.shape[1])
    vectors_by_doc: Dict[int, Dict[int, numpy.ndarray]] = {}
    for span in flat_spans:
        key = id(span.doc)
        if key not in vectors_by_doc:
            vectors_by_doc[key] = doc_vectors(span.doc, width)
    if not any(vectors_by_doc.values()):
        return None

    n_seq, length = wordpieces.input_ids.shape
    # (start, end, vector) per sequence; from the alignment of each vector's token.
    groups: List[List[Tuple[int, int, numpy.ndarray]]] = [[] for _ in range(n_seq)]
    align_starts = numpy.concatenate([[0], numpy.cumsum(align.lengths)])
    align_data = numpy.asarray(align.data).ravel()
    n_skipped = 0
    # Alignment rows are per unique token, docs in order of first span (as
    # spacy_transformers.align.get_token_positions numbers them).
    offset = 0
    docs = {id(span.doc): span.doc for span in flat_spans}
    for doc_key, doc in docs.items():
        for i, vec in vectors_by_doc[doc_key].items():
            position = offset + i
            flat = align_data[align_starts[position] : align_starts[position + 1]]
            for row in numpy.unique(flat // length):
                cols = numpy.sort(flat[flat // length == row] % length)
                if cols[-1] - cols[0] + 1 != len(cols):
                    logger.debug("bertram: %r has non-contiguous wordpieces; skipped", doc[i].text)
                    n_skipped += 1
                    continue
                groups[int(row)].append((int(cols[0]), int(cols[-1]), vec))
        offset += len(doc)

    real = numpy.asarray(wordpieces.attention_mask) > 0
    max_length = max_sequence_length(tokenizer, hf_model.config)
    if injection == "recentre":
        table = hf_model.get_input_embeddings().weight.detach().float().numpy()
        return _reference_recentre(groups, wordpieces, table, max_length, n_skipped)
    slash_id = slash_token_id(tokenizer) if injection == "slash" else -1
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids = numpy.asarray(wordpieces.input_ids)
    type_ids = None if wordpieces.token_type_ids is None else numpy.asarray(wordpieces.token_type_ids)

    new_rows: List[Tuple[List[int], List[int], List[int]]] = []
    vec_rows: List[int] = []
    vec_cols: List[int] = []
    vec_list: List[numpy.ndarray] = []
    src = numpy.zeros((n_seq, length), dtype="int64")
    keep = numpy.zeros((n_seq, length), dtype="bool")
    for row, end, row_groups, skipped in _reference_rows(groups, real, injection, max_length):
        n_skipped += skipped
        ids: List[int] = []
        types: List[int] = []
        mask: List[int] = []
        starts = {start: (stop, vec) for start, stop, vec in row_groups}
        col = 0
        while col < end:
            if col in starts:
                stop, vec = starts[col]
                type_id = int(type_ids[row, stop]) if type_ids is not None else 0
                if injection == "slash":
                    for k in range(col, stop + 1):
                        src[row, k] = len(ids)
                        ids.append(int(input_ids[row, k]))
                        types.append(int(type_ids[row, k]) if type_ids is not None else 0)
                        mask.append(1)
                    ids.append(slash_id)
                    types.append(type_id)
                    mask.append(1)
                else:
                    src[row, col : stop + 1] = len(ids)
                # The vector's position; its id (the word's first piece) is never
                # looked up, but it must not be the pad id (position ids of some models).
                vec_rows.append(row)
                vec_cols.append(len(ids))
                vec_list.append(vec)
                ids.append(int(input_ids[row, col]))
                types.append(type_id)
                mask.append(1)
                col = stop + 1
                continue
            src[row, col] = len(ids)
            ids.append(int(input_ids[row, col]))
            types.append(int(type_ids[row, col]) if type_ids is not None else 0)
            mask.append(int(real[row, col]))
            col += 1
        keep[row, :end] = real[row, :end]
        new_rows.append((ids, types, mask))

    if not vec_list:
        return None
    new_length = max(len(ids) for ids, _, _ in new_rows)
    new_ids = numpy.full((n_seq, new_length), pad_id, dtype=input_ids.dtype)
    new_mask = numpy.zeros((n_seq, new_length), dtype=numpy.asarray(wordpieces.attention_mask).dtype)
    new_types = None if type_ids is None else numpy.zeros((n_seq, new_length), dtype=type_ids.dtype)
    for row, (ids, types, mask) in enumerate(new_rows):
        new_ids[row, : len(ids)] = ids
        new_mask[row, : len(mask)] = mask
        if new_types is not None:
            new_types[row, : len(types)] = types
    return InjectionPlan(
        input_ids=new_ids,
        attention_mask=new_mask,
        token_type_ids=new_types,
        vector_rows=numpy.asarray(vec_rows, dtype="int64"),
        vector_cols=numpy.asarray(vec_cols, dtype="int64"),
        vectors=numpy.stack(vec_list).astype("float32"),
        src=src,
        keep=keep,
        n_skipped=n_skipped,
    )


def _reference_rows(
    groups: List[List[Tuple[int, int, numpy.ndarray]]], real: numpy.ndarray, injection: str, max_length: int
) -> Iterator[Tuple[int, int, List[Tuple[int, int, numpy.ndarray]], int]]:
    """Per row: its end (one past the last real position), the groups kept there and how many were skipped."""
    for row in range(real.shape[0]):
        positions = numpy.nonzero(real[row])[0]
        end = int(positions[-1]) + 1 if len(positions) else 0
        row_groups, skipped = _reference_select(groups[row], end, injection, max_length)
        yield row, end, row_groups, skipped


def _reference_recentre(
    groups: List[List[Tuple[int, int, numpy.ndarray]]],
    wordpieces: WordpieceBatch,
    table: numpy.ndarray,
    max_length: int,
    n_skipped: int,
) -> Optional[InjectionPlan]:
    """Recentre as a loop: each piece of a chosen word gets v - (the mean of the word's piece
    embeddings, summed in piece order) added; ids, masks and positions stay the stock ones."""
    input_ids = numpy.asarray(wordpieces.input_ids)
    real = numpy.asarray(wordpieces.attention_mask) > 0
    n_seq, length = input_ids.shape
    vec_rows: List[int] = []
    vec_cols: List[int] = []
    deltas: List[numpy.ndarray] = []
    src = numpy.zeros((n_seq, length), dtype="int64")
    keep = numpy.zeros((n_seq, length), dtype="bool")
    for row, end, row_groups, skipped in _reference_rows(groups, real, "recentre", max_length):
        n_skipped += skipped
        for start, stop, vec in row_groups:
            total = numpy.zeros(table.shape[1], dtype="float32")
            for col in range(start, stop + 1):
                total += table[input_ids[row, col]]
            mean = (total.astype("float64") / (stop - start + 1)).astype("float32")
            for col in range(start, stop + 1):
                vec_rows.append(row)
                vec_cols.append(col)
                deltas.append(vec - mean)
        src[row, :end] = numpy.arange(end)
        keep[row, :end] = real[row, :end]
    if not deltas:
        return None
    type_ids = wordpieces.token_type_ids
    return InjectionPlan(
        input_ids=input_ids,
        attention_mask=numpy.asarray(wordpieces.attention_mask),
        token_type_ids=None if type_ids is None else numpy.asarray(type_ids),
        vector_rows=numpy.asarray(vec_rows, dtype="int64"),
        vector_cols=numpy.asarray(vec_cols, dtype="int64"),
        vectors=numpy.stack(deltas),
        src=src,
        keep=keep,
        n_skipped=n_skipped,
        add=True,
    )


def _reference_select(
    groups: List[Tuple[int, int, numpy.ndarray]], end: int, injection: str, max_length: int
) -> Tuple[List[Tuple[int, int, numpy.ndarray]], int]:
    """Drop overlapping groups, groups in padding, and (slash) what does not fit."""
    chosen: List[Tuple[int, int, numpy.ndarray]] = []
    skipped = 0
    last_stop = -1
    for start, stop, vec in sorted(groups, key=lambda g: (g[0], g[1])):
        if start <= last_stop or stop >= end:
            logger.debug("bertram: overlapping or padded wordpieces %d..%d skipped", start, stop)
            skipped += 1
            continue
        chosen.append((start, stop, vec))
        last_stop = stop
    if injection == "slash":
        room = max(0, (max_length - end) // 2)
        if len(chosen) > room:
            logger.debug("bertram: %d slash insertions do not fit; kept %d", len(chosen), room)
            skipped += len(chosen) - room
            chosen = chosen[:room]
    return chosen, skipped


# ----------------------------------------------------------------------------------------

WORDS = (
    "the farmer sold kumquats at a market ; she don't like zorbing quokkas , "
    "but they're tasty - twenty-two 2024 naïve café héllo 🍋 x y z"
).split()


def stub_hf(vocab_size: int, positions: int = 512):
    weight = torch.randn(vocab_size, WIDTH, generator=torch.Generator().manual_seed(0))  # recentre reads its rows
    config = SimpleNamespace(max_position_embeddings=positions, model_type="bert", pad_token_id=0)
    return SimpleNamespace(get_input_embeddings=lambda: SimpleNamespace(weight=weight), config=config)


def assert_same_plan(a: Optional[InjectionPlan], b: Optional[InjectionPlan]) -> None:
    assert (a is None) == (b is None)
    if a is None:
        return
    names = ("input_ids", "attention_mask", "token_type_ids", "vector_rows", "vector_cols", "vectors", "src", "keep")
    for name in names:
        x, y = getattr(a, name), getattr(b, name)
        if x is None or y is None:
            assert x is None and y is None, name
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, name
        numpy.testing.assert_array_equal(x, y, err_msg=name)
    assert a.n_skipped == b.n_skipped and a.add == b.add


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path, use_fast=True)


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_plan_equals_the_loop(minilm_tokenizer, seed):
    rng = random.Random(seed)
    nlp = spacy.blank("en")
    tokenizer = minilm_tokenizer
    tokenizer.model_max_length = rng.choice([10, 14, 24, 512])
    hf = stub_hf(tokenizer.vocab_size)
    window, stride = rng.choice([(4, 3), (6, 4), (8, 8), (128, 96)])
    vrng = numpy.random.default_rng(seed)
    docs = []
    for _ in range(rng.randint(1, 6)):
        doc = nlp.make_doc(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30))))
        chosen = [i for i in range(len(doc)) if rng.random() < 0.35]
        doc._.bertram = {i: vrng.normal(size=WIDTH).astype("float32") for i in chosen} or None
        docs.append(doc)
    if len(docs) > 1 and rng.random() < 0.3:
        docs.append(docs[0])  # the same doc twice in a batch
    spans, wordpieces, align = plan_inputs(nlp, tokenizer, docs, window, stride)
    for mode in ("slash", "replace", "recentre"):
        expected = reference_plan(spans, wordpieces, align, mode, tokenizer, hf)
        got = make_injection_plan(spans, wordpieces, align, mode, tokenizer, hf)
        assert_same_plan(got, expected)


def test_shared_wordpieces_and_no_room_are_skipped_alike(minilm_tokenizer):
    nlp = spacy.blank("en")
    tokenizer = minilm_tokenizer
    tokenizer.model_max_length = 512
    doc = nlp.make_doc("she don't like zorbing quokkas")
    assert [t.text for t in doc][1:3] == ["do", "n't"]
    doc._.bertram = {i: numpy.full(WIDTH, i, dtype="float32") for i in range(len(doc))}
    spans, wordpieces, align = plan_inputs(nlp, tokenizer, [doc], 128, 96)
    for mode in ("slash", "replace", "recentre"):
        got = make_injection_plan(spans, wordpieces, align, mode, tokenizer, stub_hf(tokenizer.vocab_size))
        assert_same_plan(got, reference_plan(spans, wordpieces, align, mode, tokenizer, stub_hf(tokenizer.vocab_size)))
        assert got.n_skipped == 1  # "n't" shares "don" with "do"
    tokenizer.model_max_length = len(wordpieces.input_ids[0]) + 3  # room for one "/ v" only
    spans, wordpieces, align = plan_inputs(nlp, tokenizer, [doc], 128, 96)
    hf = stub_hf(tokenizer.vocab_size)
    got = make_injection_plan(spans, wordpieces, align, "slash", tokenizer, hf)
    assert_same_plan(got, reference_plan(spans, wordpieces, align, "slash", tokenizer, hf))
    assert len(got.vector_rows) == 1
    tokenizer.model_max_length = 512


def test_each_mode_but_none_has_a_builder(minilm_tokenizer):
    """Every mode the architecture accepts builds its plan; "none" (the stock model) has none to build."""
    nlp = spacy.blank("en")
    minilm_tokenizer.model_max_length = 512
    doc = nlp.make_doc("the farmer sold kumquats")
    doc._.bertram = {3: numpy.ones(WIDTH, dtype="float32")}
    spans, wordpieces, align = plan_inputs(nlp, minilm_tokenizer, [doc], 128, 96)
    hf = stub_hf(minilm_tokenizer.vocab_size)
    n_pieces = len(minilm_tokenizer.tokenize("kumquats"))
    assert n_pieces > 1
    lengths = {}
    for mode in INJECTION_MODES:
        if mode == "none":
            with pytest.raises(ValueError, match=r"\[E156\] injection must be one of .*got 'none'"):
                make_injection_plan(spans, wordpieces, align, mode, minilm_tokenizer, hf)
            continue
        plan = make_injection_plan(spans, wordpieces, align, mode, minilm_tokenizer, hf)
        assert plan.add == (mode == "recentre")
        assert len(plan.vector_rows) == (n_pieces if mode == "recentre" else 1)
        lengths[mode] = plan.input_ids.shape[1]
    stock = wordpieces.input_ids.shape[1]
    assert lengths == {"replace": stock - n_pieces + 1, "slash": stock + 2, "recentre": stock}


@pytest.mark.parametrize("kind", ["bert", "roberta", "mpnet"])
def test_the_longest_row_counts_the_positions_after_the_padding_index(request, kind):
    """RoBERTa's and MPNet's position ids start after the padding index: 130 positions hold 128 tokens there,
    as 128 positions do for BERT; one more and the encoder fails on a position it has no embedding for."""
    from spacy_bertram.model.encoder import load_encoder

    encoder, tokenizer = load_encoder(request.getfixturevalue(f"tiny_{kind}_path"))
    longest = max_sequence_length(tokenizer, encoder.config)
    assert longest == 128
    ids = torch.full((1, longest), tokenizer.convert_tokens_to_ids(tokenizer.tokenize("farmer"))[0])
    assert encoder(input_ids=ids).last_hidden_state.shape == (1, longest, encoder.config.hidden_size)
    with pytest.raises((IndexError, RuntimeError)):
        encoder(input_ids=torch.cat([ids, ids[:, :1]], dim=1))
