"""Rarification in two halves, so that several rarification seeds cost one masking pass.

Which words of a correctly classified test candidate are masked depends only on
the classifier, the candidates and the threshold (which words have a rare
synonym): `mask_candidates` does that expensive, seed-free work (one classifier
call per candidate word and masking round). The seed only picks the rare synonym
or misspelling for each masked word: `substitute_masked` does that, cheaply, for
any number of seeds. `rarify` is the two in a row.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Iterable, List, Optional, Sequence

import numpy as np

from .rarify import (
    DEFAULT_MASK_TOKEN,
    CandidateCounts,
    Classifier,
    RarificationResult,
    RarifiedItem,
    TaggedToken,
    Tagger,
    _probabilities,
    detokenize,
    greedy_mask,
    spacy_tagger,
    substitute,
)
from .records import RecordLike, as_records, check_labels, drop_empty
from .substitution import SubstitutionDictionary


@dataclass
class MaskedItem:
    """A candidate whose prediction flips once `masked` (token indices, in order) are masked."""

    id: str
    label: str
    text: str
    tokens: List[TaggedToken]
    masked: List[int]
    p_original: float
    p_masked: float

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "MaskedItem":
        return cls(**{**data, "tokens": [TaggedToken(**t) for t in data["tokens"]]})


@dataclass
class MaskingResult(CandidateCounts):
    items: List[MaskedItem] = field(default_factory=list)

    def extend(self, other: "MaskingResult") -> None:
        """Add another chunk's items and counts."""
        self.items.extend(other.items)
        for key, value in other.counts().items():
            setattr(self, key, getattr(self, key) + value)

    def to_dict(self) -> dict:
        return {**self.counts(), "items": [it.to_dict() for it in self.items]}

    @classmethod
    def from_dict(cls, data: dict) -> "MaskingResult":
        result = cls(items=[MaskedItem.from_dict(it) for it in data["items"]])
        for key in result.counts():
            setattr(result, key, int(data[key]))
        return result


def mask_candidates(
    examples: Iterable[RecordLike],
    classify: Classifier,
    labels: Sequence[str],
    subs: SubstitutionDictionary,
    tagger: Optional[Tagger] = None,
    max_masks: int = 5,
    mask_token: str = DEFAULT_MASK_TOKEN,
    batch_size: int = 256,
) -> MaskingResult:
    """The seed-free half: drop misclassified candidates, mask greedily until the
    prediction flips (words with a rare synonym only, at most `max_masks`)."""
    label_list = list(labels)
    items = as_records(examples)
    check_labels(items, label_list)
    items, n_empty = drop_empty(items, "test candidates")
    result = MaskingResult(n_candidates=len(items), skipped_empty=n_empty)
    index = {label: i for i, label in enumerate(label_list)}
    correct: List[tuple] = []
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        probs = _probabilities(classify, [ex.text for ex in batch], len(label_list))
        for ex, p in zip(batch, probs):
            if int(np.argmax(p)) == index[ex.label]:
                correct.append((ex, float(p[index[ex.label]])))
    result.n_correct = len(correct)
    tag = tagger if tagger is not None else spacy_tagger()
    tagged = tag([ex.text for ex, _ in correct])
    for (ex, p_original), tokens in zip(correct, tagged):
        candidates = [i for i, t in enumerate(tokens) if subs.rare_synonyms(t.text, t.tag, t.lemma)]
        if not candidates:
            result.skipped_no_candidates += 1
            continue
        masked, p_masked = greedy_mask(
            tokens, candidates, index[ex.label], classify, len(label_list), max_masks, mask_token
        )
        if not masked:
            result.not_flipped += 1
            continue
        result.items.append(
            MaskedItem(str(ex.id), ex.label, ex.text, list(tokens), masked, p_original, float(p_masked))
        )
    return result


def substitute_masked(
    masking: MaskingResult,
    subs: SubstitutionDictionary,
    seed: int = 0,
    misspelling_rate: float = 0.1,
    mask_token: str = DEFAULT_MASK_TOKEN,
) -> RarificationResult:
    """The seeded half: a rare synonym or misspelling for every masked word.
    Randomness is per item (`seed` and the item id), so chunks and order do not matter."""
    result = RarificationResult(**masking.counts())
    for item in masking.items:
        rng = random.Random(f"{seed}:{item.id}")
        substitutions = substitute(item.tokens, item.masked, subs, rng, misspelling_rate)
        result.items.append(
            RarifiedItem(
                id=item.id,
                label=item.label,
                original_text=item.text,
                masked_text=detokenize(item.tokens, {i: mask_token for i in item.masked}),
                text=detokenize(item.tokens, {s.index: s.substitute for s in substitutions}),
                substitutions=substitutions,
                p_original=item.p_original,
                p_masked=item.p_masked,
            )
        )
    return result


def rarify(
    examples: Iterable[RecordLike],
    classify: Classifier,
    labels: Sequence[str],
    subs: SubstitutionDictionary,
    tagger: Optional[Tagger] = None,
    max_masks: int = 5,
    misspelling_rate: float = 0.1,
    mask_token: str = DEFAULT_MASK_TOKEN,
    seed: int = 0,
    batch_size: int = 256,
) -> RarificationResult:
    """Build the rarified test set from test candidates (paper section 4).

    Candidates the classifier gets wrong are dropped, as are those whose
    prediction does not flip after `max_masks` masks. Only words with at least
    one rare synonym are masked. Randomness is per item (seeded by `seed` and
    the item id), so results do not depend on the order of the examples. The
    two halves are `mask_candidates` (seed-free) and `substitute_masked` (seeded).
    """
    masking = mask_candidates(examples, classify, labels, subs, tagger, max_masks, mask_token, batch_size)
    return substitute_masked(masking, subs, seed, misspelling_rate, mask_token)


__all__ = ["MaskedItem", "MaskingResult", "mask_candidates", "rarify", "substitute_masked"]
