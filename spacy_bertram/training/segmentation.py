"""Rare-like segmentation: the wordpieces a word gets when its own vocabulary entry is withheld.

A frequent training word is often one wordpiece, a rare word never is. Feeding
the trivial one-piece segmentation to the subword-mean part would hand the
network its target, and would not look like inference. So for each training
word we compute the pieces the tokenizer would give if the word's own entry
were missing from the vocabulary:

- WordPiece (BERT): run the greedy longest-match-first algorithm ourselves over
  the vocabulary minus that one entry (same normaliser, pre-tokeniser, `##`
  continuation prefix and UNK rule as the tokenizer).
- Byte-level BPE (RoBERTa): the pair whose merge creates the word's token.
- Anything else: the tokenizer's own segmentation (logged once), which leaks
  the target for one-piece words.
"""

from __future__ import annotations

import json
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import Warnings
from ..model.inputs import InputBuilder


class WordPieceSegmenter:
    """Greedy longest-match-first WordPiece, with one entry optionally withheld."""

    def __init__(self, vocab: Dict[str, int], unk_token: str, prefix: str = "##", max_chars: int = 100) -> None:
        self.vocab = vocab
        self.unk_id = vocab[unk_token]
        self.prefix = prefix
        self.max_chars = max_chars

    def segment(self, pretoken: str, withheld: Optional[str] = None) -> List[int]:
        """Pieces of one pre-token; the vocabulary entry `withheld` is treated as absent."""
        if len(pretoken) > self.max_chars:
            return [self.unk_id]
        pieces: List[int] = []
        start = 0
        while start < len(pretoken):
            end = len(pretoken)
            found: Optional[int] = None
            while start < end:
                piece = pretoken[start:end] if start == 0 else self.prefix + pretoken[start:end]
                if piece != withheld and piece in self.vocab:
                    found = self.vocab[piece]
                    break
                end -= 1
            if found is None:
                return [self.unk_id]
            pieces.append(found)
            start = end
        return pieces


class RareLikeSegmenter:
    """Maps a word to its rare-like wordpiece ids for one tokenizer."""

    def __init__(self, tokenizer, max_word_pieces: int = 32) -> None:
        self.tokenizer = tokenizer
        self.inputs = InputBuilder(tokenizer, "form", 16, max_word_pieces)
        self.max_word_pieces = max_word_pieces
        backend = tokenizer.backend_tokenizer
        self.kind = type(backend.model).__name__
        self._pre = backend.pre_tokenizer
        self._wordpiece: Optional[WordPieceSegmenter] = None
        self._merges: Dict[int, Tuple[int, int]] = {}
        if self.kind == "WordPiece":
            model = backend.model
            self._wordpiece = WordPieceSegmenter(
                tokenizer.get_vocab(), model.unk_token, model.continuing_subword_prefix, model.max_input_chars_per_word
            )
        elif self.kind == "BPE":
            self._merges = self._bpe_merges(tokenizer)
        else:
            warnings.warn(Warnings.W012.format(kind=self.kind))

    @staticmethod
    def _bpe_merges(tokenizer) -> Dict[int, Tuple[int, int]]:
        """Token id -> the (left, right) ids of the highest-priority merge that makes it."""
        model = json.loads(tokenizer.backend_tokenizer.to_str())["model"]
        vocab = model["vocab"]
        out: Dict[int, Tuple[int, int]] = {}
        for merge in model.get("merges", []):
            left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
            joined = vocab.get(left + right)
            if joined is not None and joined not in out and left in vocab and right in vocab:
                out[joined] = (vocab[left], vocab[right])
        return out

    def pieces(self, word: str) -> List[int]:
        """The tokenizer's ordinary segmentation of `word` (as inside a sentence)."""
        return self.inputs.word_pieces(word)

    def wordpieces(self, word: str, withhold: bool) -> List[int]:
        """Our WordPiece run: normalise, pre-tokenise, greedy match (entry withheld if asked)."""
        assert self._wordpiece is not None
        normalized = self.inputs.normalize(word)
        pretokens = [text for text, _ in self._pre.pre_tokenize_str(normalized)] if self._pre else [normalized]
        withheld = pretokens[0] if withhold and len(pretokens) == 1 else None
        out: List[int] = []
        for text in pretokens:
            out.extend(self._wordpiece.segment(text, withheld))
        return out[: self.max_word_pieces]

    def rare_like(self, word: str) -> List[int]:
        """Wordpieces of `word` with its own vocabulary entry withheld."""
        ordinary = self.pieces(word)
        if self._wordpiece is not None:
            return self.wordpieces(word, withhold=len(ordinary) == 1)
        if len(ordinary) == 1 and ordinary[0] in self._merges:
            return list(self._merges[ordinary[0]])
        return ordinary

    def rare_like_many(self, words: Sequence[str]) -> List[List[int]]:
        return [self.rare_like(word) for word in words]
