"""What BERTRAM's network reads: encoder inputs for the contexts, character n-grams for the form.

(word, context) -> encoder inputs: masking, windowing and batching by token budget.
Occurrences are matched on the tokenizer's normalised text with word
boundaries (so "cat" never matches inside "concatenate"), case-insensitively,
which suits uncased models (their normaliser lowercases anyway) and cased
ones (a sentence-initial "Kumquat" is still the word). Every occurrence is
replaced by the mask token; the window is centred on the first one. In the
"inplace" mode every occurrence is instead spelled with the wordpieces the
caller gives (the word's own at inference, a rare-like segmentation in
training), and the states over the first occurrence's pieces are read.

The form part's vocabulary (`NgramVocab`): a word is padded with a boundary
symbol on both sides and cut into all n-grams with n in [min_n, max_n]. N-grams
seen fewer than `min_count` times in the training vocabulary map to UNK, so rare
spellings still get a vector.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple, Union

from .config import MODE_TRAITS, ContextRows
from .encoder import is_bpe_tokenizer, text_ids, texts_ids, word_piece_ids
from ..bounds import describe, is_count
from ..errors import Errors, Warnings
from ..fileio import write_json_atomic

# Characters kept on each side of the first occurrence before tokenising: a
# generous bound (16 characters per wordpiece) that keeps 10,000-word contexts cheap.
CHARS_PER_PIECE = 16


@dataclass(frozen=True)
class EncodedContext:
    """One encoder input row for one (word, context) pair."""

    word_index: int
    input_ids: Tuple[int, ...]
    mask_position: int  # read the hidden state here
    slot_position: int  # input embedding replaced by the form vector; -1 for none
    span: int = 1  # read (and average) this many positions from mask_position on

    def __len__(self) -> int:
        return len(self.input_ids)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "...'"


def split_items(items: Iterable[Any], start: int = 0) -> Tuple[List[Any], List[List[Any]]]:
    """Words and context lists of `(word, [context, ...])` items.

    A string where the list of contexts belongs would otherwise be read as one
    context per character; it is a TypeError naming the item instead.
    """
    words: List[Any] = []
    contexts: List[List[Any]] = []
    for n, item in enumerate(items, start):
        if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) != 2:
            raise TypeError(Errors.E015.format(n=n, item=_short(item)))
        word, word_contexts = item
        if isinstance(word_contexts, (str, bytes)):
            raise TypeError(Errors.E016.format(n=n, word=word, word_contexts=_short(word_contexts)))
        if not isinstance(word_contexts, Iterable):
            raise TypeError(Errors.E017.format(n=n, word=word, word_contexts_type=type(word_contexts).__name__))
        words.append(word)
        contexts.append(list(word_contexts))
    return words, contexts


def validate_word(word: object) -> str:
    if not isinstance(word, str):
        raise ValueError(Errors.E018.format(word_type=type(word).__name__, word=word))
    if not word.strip():
        raise ValueError(Errors.E019.format(word=word))
    if any(ch.isspace() for ch in word.strip()):
        raise ValueError(Errors.E020.format(word=word))
    return word.strip()


class InputBuilder:
    """Turns words and contexts into encoder rows for one BERTRAM mode.

    `context_rows` "matched" or "reference" (`BertramConfig.context_rows`: how the word is found,
    the text tokenised and the window cut); `add_quotes`: ADD's prefix wraps the form vector in
    double quotes.
    """

    def __init__(
        self,
        tokenizer,
        mode: str,
        max_length: int,
        max_word_pieces: int = 32,
        context_rows: str = "matched",
        add_quotes: bool = False,
        prefix_tokens: bool = True,
    ) -> None:
        self.tokenizer = tokenizer
        self.mode = mode
        self.reference_rows = context_rows == "reference"
        self.add_quotes = add_quotes
        self.prefix_tokens = prefix_tokens
        self.rows = MODE_TRAITS[mode].rows or ContextRows()
        self.max_length = min(max_length, self._model_max_length(tokenizer))
        self.max_word_pieces = max_word_pieces
        self.is_bpe = is_bpe_tokenizer(tokenizer)
        self.mask_id = int(tokenizer.mask_token_id)
        self.mask_token = str(tokenizer.mask_token)
        self.cls_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
        self.sep_id = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if self.cls_id is None or self.sep_id is None:
            raise ValueError(Errors.E021)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        self.prefix_left, self.prefix_right = self._add_prefix()
        # ADD mode spends positions on the prefix: the slot plus its tokens.
        with_prefix = self.rows.prefix_slot and self.prefix_tokens
        self.prefix_length = len(self.prefix_left) + 1 + len(self.prefix_right) if with_prefix else 0
        # The context's positions in a row: specials and prefix aside; the reference keeps one spare.
        self.window_budget = self.max_length - 2 - self.prefix_length - (1 if self.reference_rows else 0)
        # The id the slot holds until the form vector fills it (never read): the reference's [SEP].
        self.slot_id = self.sep_id if self.reference_rows else self.mask_id
        backend = tokenizer.backend_tokenizer
        self._normalizer = backend.normalizer

    @staticmethod
    def _model_max_length(tokenizer) -> int:
        value = getattr(tokenizer, "model_max_length", 512) or 512
        return int(value) if value < 100_000 else 512

    def _ids(self, text: str) -> List[int]:
        return text_ids(self.tokenizer, text)

    def _token_id(self, token: str) -> List[int]:
        """The vocabulary's own token `token` (as the reference's convert_tokens_to_ids takes it), else
        the ids of the text."""
        vocab = self.tokenizer.get_vocab()
        return [vocab[token]] if token in vocab else self._ids(token)

    def _add_prefix(self) -> Tuple[List[int], List[int]]:
        """Token ids around the form-vector slot in ADD mode, as the reference builds them:
        `[CLS] v :`, or with `add_quotes` `[CLS] " v " :` (byte-level BPE: the quote token with
        its leading space, 'Ġ"'); ':' is the vocabulary's own token (RoBERTa's bare ':')."""
        if not self.rows.prefix_slot or not self.prefix_tokens:
            return [], []
        colon = self._token_id(":")
        if not self.add_quotes:
            return [], colon
        quote = self._token_id('\u0120"' if self.is_bpe else '"')
        return quote, [*quote, *colon]

    def normalize(self, text: str) -> str:
        return self._normalizer.normalize_str(text) if self._normalizer is not None else text

    def word_pieces(self, word: str) -> List[int]:
        """Wordpiece ids of the word as it would appear inside a sentence."""
        pieces = word_piece_ids(self.tokenizer, word, self.max_word_pieces)
        if not pieces:
            raise ValueError(Errors.E022.format(word=word))
        return pieces

    def find_occurrences(self, word: str, context: str) -> Tuple[str, List[Tuple[int, int]]]:
        """Normalised context and the character spans where the normalised word occurs."""
        norm_context = self.normalize(context)
        norm_word = self.normalize(word).strip()
        if not norm_word:
            return norm_context, []
        pattern = re.compile(r"(?<!\w)" + re.escape(norm_word) + r"(?!\w)", re.IGNORECASE)
        return norm_context, [m.span() for m in pattern.finditer(norm_context)]

    #: Contexts go to the tokenizer in batches (`encode_many`); False: one call per context, as before
    #: (benchmarks/pipeline.py's `--against batched_tokenising=off` measures one against the other).
    batched_tokenising: bool = True

    def masked_text(self, word: str, context: str) -> Optional[str]:
        """The normalised context around the word's first occurrence, every occurrence in it replaced
        by the mask token (None: the word does not occur): the text the tokenizer reads.

        Byte-level BPE: whitespace runs become one space and the mask takes the place of the word
        and the space before it, as the word's first piece ('Ġkum') does, so every token outside the
        word is the one the unmasked sentence has (no lone 'Ġ' beside the mask)."""
        if self.reference_rows:
            return self._reference_masked_text(word, context)
        text, spans = self.find_occurrences(word, context)
        if not spans:
            return None
        margin = (self.max_length - 2 - self.prefix_length) * CHARS_PER_PIECE
        first_start = spans[0][0]
        lo = max(0, first_start - margin)
        hi = min(len(text), spans[0][1] + margin)
        pieces: List[str] = []
        cursor = lo
        for start, end in spans:
            if start < lo or end > hi:
                continue
            if self.is_bpe:
                pieces.append(_single_spaced(text[cursor:start]).rstrip())
                pieces.append(self.mask_token)
            else:
                pieces.append(text[cursor:start])
                pieces.append(f" {self.mask_token} ")
            cursor = end
        if not self.is_bpe:
            pieces.append(text[cursor:hi])
            return "".join(pieces)
        pieces.append(_single_spaced(text[cursor:hi]))
        masked = "".join(pieces).strip()
        return masked if masked.startswith(self.mask_token) else " " + masked

    def _reference_masked_text(self, word: str, context: str) -> Optional[str]:
        """The reference's masking: the whitespace tokens equal to the word (case-sensitive) become
        the mask token, and the tokens are joined with single spaces (None: no token is the word)."""
        tokens = context.split()
        if word not in tokens:
            return None
        return " ".join(self.mask_token if token == word else token for token in tokens)

    def tokenize_masked(self, texts: Sequence[str]) -> List[List[int]]:
        """Token ids of masked texts (no special tokens), in one tokenizer call.

        Reference rows: each stretch between masks is tokenised on its own, stripped, and with a
        leading space for byte-level BPE (the reference's split on special tokens, then its GPT-2
        tokenizer's add_prefix_space); the masks go between as the mask id."""
        if not self.reference_rows:
            return texts_ids(self.tokenizer, texts)
        layouts = [[chunk.strip() for chunk in text.split(self.mask_token)] for text in texts]
        stretches = [chunk for layout in layouts for chunk in layout if chunk]
        encoded = iter(texts_ids(self.tokenizer, [" " + c if self.is_bpe else c for c in stretches]))
        out: List[List[int]] = []
        for layout in layouts:
            ids: List[int] = []
            for n, chunk in enumerate(layout):
                if n:
                    ids.append(self.mask_id)
                if chunk:
                    ids.extend(next(encoded))
            out.append(ids)
        return out

    def _window(self, ids: List[int]) -> Optional[Tuple[List[int], int]]:
        """The masked text's ids cut to the window around the first mask, and that mask's index.

        Reference rows: one token off the longer side of the first mask at a time (the side after it
        when both are as long) until the window fits, as the reference's `_truncate` does."""
        budget = self.window_budget
        try:
            first = ids.index(self.mask_id)
        except ValueError:  # the mask token got merged away: nothing usable
            return None
        if self.reference_rows:
            before, after = first, len(ids) - 1 - first
            while before + after + 1 > budget:
                if before > after:
                    before -= 1
                else:
                    after -= 1
            return ids[first - before : first + after + 1], before
        start = max(0, min(first - budget // 2, len(ids) - budget))
        return ids[start : start + budget], first - start

    def _spelled(self, masked: List[int], pieces: Sequence[int]) -> Optional[Tuple[List[int], int]]:
        """The masked window with every mask spelled as `pieces`, cut to the window again, and the
        index of the first occurrence's first piece."""
        ids: List[int] = []
        first = -1
        for token in masked:
            if token == self.mask_id:
                first = len(ids) if first < 0 else first
                ids.extend(pieces)
            else:
                ids.append(token)
        budget = self.max_length - 2
        if len(pieces) > budget:
            return None
        start = max(0, min(first - (budget - len(pieces)) // 2, len(ids) - budget))
        return ids[start : start + budget], first - start

    def context_ids(self, row: EncodedContext, pieces: Sequence[int] = ()) -> List[int]:
        """The ids of `row` that are context words: no special token, no ADD prefix, and no occurrence
        of the word (its first one at `mask_position`, every other spelled as `pieces` or masked).

        What the context-mean baseline averages (a la carte's additive vector), read from the ids the
        encoder gets, so the network can mix it in without tokenising again; a bare row has none.
        Any run of `pieces` counts as an occurrence (also the start of a longer word spelled with them).
        """
        ids = row.input_ids
        special = {self.cls_id, self.sep_id, self.pad_id, self.mask_id}
        start = row.slot_position + 1 + len(self.prefix_right) if self.rows.prefix_slot and self.prefix_tokens else 0
        skip = set(range(row.mask_position, row.mask_position + row.span))
        spelled = list(pieces)
        kept: List[int] = []
        position = start
        while position < len(ids):
            if spelled and list(ids[position : position + len(spelled)]) == spelled:
                position += len(spelled)
                continue
            if position not in skip and ids[position] not in special:
                kept.append(ids[position])
            position += 1
        return kept

    def bare(self, word_index: int, pieces: Sequence[int]) -> EncodedContext:
        """The word's pieces on their own: the inplace row of a word without contexts."""
        pieces = list(pieces)[: self.max_length - 2]
        return EncodedContext(word_index, (self.cls_id, *pieces, self.sep_id), 1, -1, len(pieces))

    def encode(
        self, word_index: int, word: str, context: str, pieces: Optional[Sequence[int]] = None
    ) -> Optional[EncodedContext]:
        text = self.masked_text(word, context)
        return None if text is None else self._row(word_index, word, self.tokenize_masked([text])[0], pieces)

    def _row(
        self, word_index: int, word: str, masked_ids: List[int], pieces: Optional[Sequence[int]]
    ) -> Optional[EncodedContext]:
        """The encoder row of one context from its masked text's token ids (None: nothing usable)."""
        result = self._window(masked_ids)
        if result is None:
            return None
        window, first = result
        if self.rows.spelled:
            pieces = list(pieces) if pieces is not None else self.word_pieces(word)
            spelled = self._spelled(window, pieces)
            if spelled is None:
                return None
            window, first = spelled
            return EncodedContext(word_index, (self.cls_id, *window, self.sep_id), 1 + first, -1, len(pieces))
        if self.rows.prefix_slot and not self.prefix_tokens:  # the slot over a context token, as the reference's
            ids = [self.cls_id, *window, self.sep_id]  # script-trained models read ADD
            return EncodedContext(word_index, tuple(ids), 1 + first, min(2 if self.add_quotes else 1, len(ids) - 1))
        if self.rows.prefix_slot:
            head = [self.cls_id, *self.prefix_left]
            slot = len(head)
            ids = [*head, self.slot_id, *self.prefix_right, *window, self.sep_id]
            offset = slot + 1 + len(self.prefix_right)
            return EncodedContext(word_index, tuple(ids), offset + first, slot)
        ids = [self.cls_id, *window, self.sep_id]
        position = 1 + first
        slot = position if self.rows.mask_slot else -1
        return EncodedContext(word_index, tuple(ids), position, slot)

    def encode_many(
        self,
        words: Sequence[str],
        contexts: Sequence[Sequence[str]],
        max_contexts: int,
        pieces: Optional[Sequence[Sequence[int]]] = None,
    ) -> List[EncodedContext]:
        """Encode up to `max_contexts` usable contexts per word; skipped ones are logged.

        `pieces[i]` spells word i in the inplace mode (default: its own wordpieces). The contexts of
        all words go to the tokenizer in one batch call (a second for words whose contexts came out
        unusable, and so on), not one call each: the rows are those of `encode`, context by context,
        in the same order (the first `max_contexts` usable contexts of each word).
        """
        if not self.batched_tokenising:
            return self._encode_one_by_one(words, contexts, max_contexts, pieces)
        kept: List[List[EncodedContext]] = [[] for _ in words]
        skipped: Dict[str, int] = {}
        cursors = [0] * len(words)
        active = [i for i, word_contexts in enumerate(contexts) if len(word_contexts) and max_contexts > 0]
        while active:
            batch: List[Tuple[int, str]] = []
            for index in active:
                word, word_contexts = words[index], contexts[index]
                wanted = max_contexts - len(kept[index])
                while wanted > 0 and cursors[index] < len(word_contexts):
                    context = word_contexts[cursors[index]]
                    cursors[index] += 1
                    if not isinstance(context, str):
                        raise ValueError(Errors.E023.format(word=word, context_type=type(context).__name__))
                    text = self.masked_text(word, context)
                    if text is None:
                        skipped[word] = skipped.get(word, 0) + 1
                        continue
                    batch.append((index, text))
                    wanted -= 1
            for (index, _), ids in zip(batch, self.tokenize_masked([text for _, text in batch])):
                word = words[index]
                row = self._row(index, word, ids, pieces[index] if pieces is not None else None)
                if row is None:
                    skipped[word] = skipped.get(word, 0) + 1
                else:
                    kept[index].append(row)
            active = [i for i in active if len(kept[i]) < max_contexts and cursors[i] < len(contexts[i])]
        _warn_skipped(skipped)
        return [row for rows in kept for row in rows]

    def _encode_one_by_one(
        self,
        words: Sequence[str],
        contexts: Sequence[Sequence[str]],
        max_contexts: int,
        pieces: Optional[Sequence[Sequence[int]]],
    ) -> List[EncodedContext]:
        """`encode_many` with one tokenizer call per context (`batched_tokenising = False`): the
        reference its batches are measured and tested against."""
        rows: List[EncodedContext] = []
        skipped: Dict[str, int] = {}
        for index, (word, word_contexts) in enumerate(zip(words, contexts)):
            used = 0
            for context in word_contexts:
                if used >= max_contexts:
                    break
                if not isinstance(context, str):
                    raise ValueError(Errors.E023.format(word=word, context_type=type(context).__name__))
                row = self.encode(index, word, context, pieces[index] if pieces is not None else None)
                if row is None:
                    skipped[word] = skipped.get(word, 0) + 1
                    continue
                rows.append(row)
                used += 1
        _warn_skipped(skipped)
        return rows


def _single_spaced(text: str) -> str:
    """Every run of whitespace as one space: the text as natural text spells it."""
    return re.sub(r"\s+", " ", text)


def _warn_skipped(skipped: Mapping[str, int]) -> None:
    if skipped:
        sample = ", ".join(f"{w!r} ({n})" for w, n in list(skipped.items())[:5])
        warnings.warn(
            Warnings.W001.format(n=sum(skipped.values()), sample=sample, more=" ..." if len(skipped) > 5 else ""),
            stacklevel=3,
        )


def check_token_budget(token_budget: Any, setting: str = "token_budget") -> None:
    """A token budget: a whole number of encoder tokens per call within its bounds (E024 names `setting`)."""
    if not is_count(token_budget, "tokens"):
        raise ValueError(Errors.E024.format(setting=setting, bounds=describe("tokens"), token_budget=token_budget))


#: Padding positions one more encoder call is worth on a CPU (measured on MiniLM's context rows:
#: a call costs about as much as 1 ms of positions, and every position, padding too, about the same).
CALL_COST_POSITIONS = 64


def length_cuts(lengths: Sequence[int], call_cost: int = CALL_COST_POSITIONS) -> List[int]:
    """Where to cut sorted `lengths` into calls so that padded positions plus `call_cost` per call is
    least: indices that end each group. Exact (dynamic programming over the distinct lengths, at most
    the encoder's maximum sequence length of them), so short bare-piece rows never pad to a long context."""
    distinct: List[int] = []
    ends: List[int] = []  # index after the last row of each distinct length
    for i, length in enumerate(lengths):
        if distinct and distinct[-1] == length:
            ends[-1] = i + 1
        else:
            distinct.append(length)
            ends.append(i + 1)
    best = [0.0] + [float("inf")] * len(distinct)
    cut_from = [0] * (len(distinct) + 1)
    for j in range(1, len(distinct) + 1):
        for i in range(j, 0, -1):  # the group covers distinct lengths i..j (1-based)
            n_rows = ends[j - 1] - (ends[i - 2] if i > 1 else 0)
            cost = best[i - 1] + n_rows * distinct[j - 1] + call_cost
            if cost < best[j]:
                best[j], cut_from[j] = cost, i - 1
    cuts: List[int] = []
    j = len(distinct)
    while j > 0:
        cuts.append(ends[j - 1])
        j = cut_from[j]
    return cuts[::-1]


def batch_by_token_budget(
    rows: Sequence[EncodedContext], token_budget: int, call_cost: Optional[int] = CALL_COST_POSITIONS
) -> Iterator[List[int]]:
    """Indices of `rows` in encoder calls: rows of similar length together (`length_cuts`; `call_cost`
    None: no such cuts), and rows x longest row within the budget in each call.

    Rows are sorted by length first, so padding is small and contexts of different
    words share one call; a word's bare pieces (a few positions) and its contexts (tens)
    go in different calls when the padding saved is worth a call.
    """
    check_token_budget(token_budget)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    lengths = [len(rows[i]) for i in order]
    start = 0
    for end in length_cuts(lengths, call_cost) if call_cost is not None else [len(order)]:
        batch: List[int] = []
        for position in range(start, end):  # sorted: the row added is the longest of its call
            if batch and lengths[position] * (len(batch) + 1) > token_budget:
                yield batch
                batch = []
            batch.append(order[position])
        if batch:
            yield batch
        start = end


# The form part: character n-grams.

PAD = "<pad>"
UNK = "<unk>"
PAD_ID = 0
UNK_ID = 1
BOUNDARY = "\u2581"  # a symbol that does not occur inside ordinary words
#: How an n-gram table is built and numbered: "ours" pads a word with BOUNDARY, lists n-grams seen
#: `min_count` times sorted by count then text, PAD 0 and UNK 1; "reference" as the reference
#: implementation does: "<S>" (one symbol) at both ends, n-grams in `Counter.most_common()` order of
#: the vocabulary file, UNK 0 and PAD 1, so that its embedding tables load row for row.
NgramStyle = Literal["ours", "reference"]
NGRAM_STYLES: Tuple[str, ...] = ("ours", "reference")
REFERENCE_BOUNDARY = "<S>"
REFERENCE_SPECIALS = ("UNK", "PAD")  # ids 0 and 1


def word_ngrams(word: str, min_n: int = 3, max_n: int = 5, boundary: str = BOUNDARY) -> List[str]:
    """All n-grams of the boundary-padded word, shortest first."""
    padded = f"{boundary}{word}{boundary}"
    grams: List[str] = []
    for n in range(min_n, max_n + 1):
        for start in range(0, len(padded) - n + 1):
            grams.append(padded[start : start + n])
    if not grams:  # shorter than min_n even with boundaries: keep the whole padded word
        grams.append(padded)
    return grams


def reference_ngrams(word: str, min_n: int = 3, max_n: int = 5) -> List[str]:
    """The reference's n-grams: "<S>" counts as one character at each end, n-grams by start, then
    length; none at all is ["UNK"] (its mean is then the UNK row)."""
    letters = [REFERENCE_BOUNDARY, *word, REFERENCE_BOUNDARY]
    grams = [
        "".join(letters[i:j]) for i in range(len(letters)) for j in range(i + min_n, min(len(letters), i + max_n) + 1)
    ]
    return grams or [REFERENCE_SPECIALS[0]]


class NgramVocab:
    """Maps character n-grams to row ids of the form embedding table."""

    def __init__(
        self,
        ngrams: Sequence[str] = (),
        min_n: int = 3,
        max_n: int = 5,
        min_count: int = 3,
        lowercase: bool = False,
        style: NgramStyle = "ours",
    ) -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError(Errors.E025.format(min_n=min_n, max_n=max_n))
        if style not in NGRAM_STYLES:
            raise ValueError(Errors.E031)
        self.min_n = min_n
        self.max_n = max_n
        self.min_count = min_count
        self.lowercase = lowercase
        self.style = style
        self.itos: List[str] = list(REFERENCE_SPECIALS) if style == "reference" else [PAD, UNK]
        self.stoi: Dict[str, int] = {gram: i for i, gram in enumerate(self.itos)}
        self.pad_id = self.stoi[REFERENCE_SPECIALS[1]] if style == "reference" else PAD_ID
        self.unk_id = self.stoi[REFERENCE_SPECIALS[0]] if style == "reference" else UNK_ID
        for gram in ngrams:
            self.add(gram)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, gram: str) -> bool:
        return gram in self.stoi

    def add(self, gram: str) -> int:
        if gram not in self.stoi:
            self.stoi[gram] = len(self.itos)
            self.itos.append(gram)
        return self.stoi[gram]

    def ngrams(self, word: str) -> List[str]:
        word = word.lower() if self.lowercase else word
        if self.style == "reference":
            return reference_ngrams(word, self.min_n, self.max_n)
        return word_ngrams(word, self.min_n, self.max_n)

    def encode(self, word: str) -> List[int]:
        """N-gram ids of `word`; unseen n-grams become UNK."""
        return [self.stoi.get(gram, self.unk_id) for gram in self.ngrams(word)]

    @classmethod
    def from_words(
        cls,
        words: Union[Mapping[str, int], Iterable[str]],
        min_n: int = 3,
        max_n: int = 5,
        min_count: int = 3,
        lowercase: bool = False,
        style: NgramStyle = "ours",
    ) -> "NgramVocab":
        """Count n-grams over a word list (or word->frequency map, counting each word once); the
        "reference" style keeps them in `Counter.most_common()` order (ties: first seen first)."""
        vocab = cls(min_n=min_n, max_n=max_n, min_count=min_count, lowercase=lowercase, style=style)
        counts: Counter = Counter()
        for word in words:
            counts.update(vocab.ngrams(word))
        ranked = (
            counts.most_common() if style == "reference" else sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        for gram, count in ranked:
            if count >= min_count:
                vocab.add(gram)
        return vocab

    def to_dict(self) -> dict:
        return {
            "min_n": self.min_n,
            "max_n": self.max_n,
            "min_count": self.min_count,
            "lowercase": self.lowercase,
            "boundary": REFERENCE_BOUNDARY if self.style == "reference" else BOUNDARY,
            "ngrams": self.itos[2:],
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> "NgramVocab":
        """Validated field by field: a wrong type is a ValueError naming the key."""
        if not isinstance(data, Mapping):
            raise ValueError(Errors.E026.format(data_type=type(data).__name__))
        for key in ("min_n", "max_n"):
            if key not in data:
                raise ValueError(Errors.E027.format(key=key))
        for key in ("min_n", "max_n", "min_count"):
            value = data.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(Errors.E028.format(key=key, value=value))
        lowercase = data.get("lowercase", False)
        if not isinstance(lowercase, bool):
            raise ValueError(Errors.E029.format(lowercase=lowercase))
        ngrams = data.get("ngrams", [])
        if not isinstance(ngrams, list) or not all(isinstance(g, str) for g in ngrams):
            raise ValueError(Errors.E030)
        boundaries = {BOUNDARY: "ours", REFERENCE_BOUNDARY: "reference"}
        if data.get("boundary", BOUNDARY) not in boundaries:
            raise ValueError(Errors.E031)
        return cls(
            ngrams=ngrams,
            min_n=data["min_n"],
            max_n=data["max_n"],
            min_count=data.get("min_count", 1),
            lowercase=lowercase,
            style=boundaries[data.get("boundary", BOUNDARY)],
        )

    def to_disk(self, path: Union[str, Path], *, overwrite: bool = False) -> None:
        """ngrams.json; an existing file is replaced only with `overwrite` (`fileio.write_json_atomic`)."""
        write_json_atomic(Path(path), self.to_dict(), overwrite=overwrite)

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "NgramVocab":
        """Read ngrams.json; every problem is a ValueError naming the file."""
        try:
            with open(path, encoding="utf8") as file_:
                return cls.from_dict(json.load(file_))
        except (OSError, UnicodeDecodeError, ValueError) as err:
            raise ValueError(Errors.E032.format(path=str(path), err=err)) from err
