"""WNLaMPro-style evaluation: mean reciprocal rank of a masked LM's answers.

WNLaMPro (Schick & Schütze, AAAI 2020) asks a masked LM for relatives of a
keyword through patterns such as "a <W> is a <MASK> ." and groups keywords
by frequency into RARE / MEDIUM / FREQUENT. BERTRAM should help on RARE.

File format read by `read_wnlampro` (tab-separated, UTF-8, '#' comments):

* with a header line naming the columns (any order): required `relation`,
  `keyword`, `targets`; optional `id`, `subset` (alias `frequency`,
  `category`), `split`, `pos`;
* without a header: 4 columns ``subset  relation  keyword  targets`` or
  5 columns ``id  subset  relation  keyword  targets``.

Targets are separated by spaces or commas. Subsets are RARE, MEDIUM, FREQUENT.

Scoring is pluggable: a `RankFn` takes (pattern text with the mask token,
keyword) and returns the model's vocabulary ranked best first. An item's
reciprocal rank under a pattern is 1/r for the best-ranked target (0 if none
is ranked); predictions equal to the keyword are removed first, since models
like to echo it. MRR is computed per (subset, relation, pattern); a relation
reports its best pattern, as the paper does, and a subset's "mean" is the
item-weighted mean over relations. `MaskedLMRanker` is a RankFn over a HF
masked LM whose keyword wordpieces can be replaced by an injected vector.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np

from spacy_bertram.project_support import slash_token_id, word_start_tokens
from ..errors import Errors

SUBSET_NAMES = ("RARE", "MEDIUM", "FREQUENT")
KEYWORD = "<W>"
MASK = "<MASK>"

#: Patterns per relation; <W> is the keyword, <MASK> the slot the LM fills.
DEFAULT_PATTERNS: Dict[str, Tuple[str, ...]] = {
    "antonym": (
        "<W> is the opposite of <MASK> .",
        "<W> is not <MASK> .",
        "someone who is <W> is not <MASK> .",
        "something that is <W> is not <MASK> .",
        '" <W> " is the opposite of " <MASK> " .',
    ),
    "hypernym": (
        "<W> is a <MASK> .",
        '" <W> " is a <MASK> .',
        "a <W> is a <MASK> .",
        '" a <W> " is a <MASK> .',
        "<W> is a kind of <MASK> .",
        "a <W> is a kind of <MASK> .",
    ),
    "cohyponym": (
        "<W> and <MASK> .",
        '" <W> " and " <MASK> " .',
    ),
    "corruption": (
        "<W> is a misspelling of <MASK> .",
        '" <W> " is a misspelling of " <MASK> " .',
    ),
}

RankFn = Callable[[str, str], Sequence[str]]


@dataclass(frozen=True)
class WNLaMProItem:
    keyword: str
    relation: str
    targets: Tuple[str, ...]
    subset: str = ""
    id: str = ""
    split: str = ""


_ALIASES = {"frequency": "subset", "category": "subset", "set": "split", "target": "targets"}


def _split_targets(field: str) -> Tuple[str, ...]:
    return tuple(t for t in re.split(r"[,\s]+", field.strip()) if t)


def read_wnlampro(path: Union[str, Path]) -> List[WNLaMProItem]:
    """Parse the tab-separated format described in the module docstring."""
    rows = []
    with open(path, encoding="utf8", newline="") as fh:
        for row in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            if row and not row[0].startswith("#") and any(c.strip() for c in row):
                rows.append([c.strip() for c in row])
    if not rows:
        return []
    head = [_ALIASES.get(c.lower(), c.lower()) for c in rows[0]]
    if {"relation", "keyword", "targets"} <= set(head):
        columns, body = head, rows[1:]
    else:
        columns, body = None, rows
    items = []
    for n, row in enumerate(body, start=1):
        if columns is not None:
            rec = dict(zip(columns, row))
        elif len(row) == 4:
            rec = dict(zip(("subset", "relation", "keyword", "targets"), row))
        elif len(row) == 5:
            rec = dict(zip(("id", "subset", "relation", "keyword", "targets"), row))
        else:
            raise ValueError(Errors.E383.format(path=path, n=n, n_row=len(row)))
        items.append(
            WNLaMProItem(
                keyword=rec["keyword"],
                relation=rec["relation"].lower(),
                targets=_split_targets(rec.get("targets", "")),
                subset=rec.get("subset", "").upper(),
                id=rec.get("id", str(n)),
                split=rec.get("split", ""),
            )
        )
    return items


def fill_pattern(pattern: str, keyword: str, mask_token: str) -> str:
    return pattern.replace(KEYWORD, keyword).replace(MASK, mask_token)


def reciprocal_rank(ranked: Sequence[str], targets: Iterable[str], exclude: Iterable[str] = ()) -> float:
    """1/rank of the best-ranked target after removing `exclude` (case-insensitive)."""
    wanted = {t.lower() for t in targets}
    skip = {e.lower() for e in exclude}
    rank = 0
    for word in ranked:
        w = word.lower()
        if w in skip:
            continue
        rank += 1
        if w in wanted:
            return 1.0 / rank
    return 0.0


def evaluate_wnlampro(
    items: Sequence[WNLaMProItem],
    rank: RankFn,
    patterns: Mapping[str, Sequence[str]] = DEFAULT_PATTERNS,
    mask_token: str = "[MASK]",
    vocabulary: Optional[Set[str]] = None,
) -> Dict[str, Dict[str, dict]]:
    """MRR per subset and relation: {subset: {relation: {...}, "mean": {...}}}.

    Each relation entry has "mrr" (best pattern), "pattern", "n" and
    "per_pattern". With `vocabulary`, targets outside it are dropped (a masked
    LM can only name single tokens) and items left without targets skipped.
    Relations without patterns raise a KeyError naming them.
    """
    missing = sorted({it.relation for it in items} - set(patterns))
    if missing:
        raise KeyError(Errors.E384.format(missing=missing, patterns=sorted(patterns)))
    groups: Dict[Tuple[str, str], List[WNLaMProItem]] = {}
    for it in items:
        targets = [t for t in it.targets if vocabulary is None or t.lower() in vocabulary]
        if targets:
            key = (it.subset or "ALL", it.relation)
            groups.setdefault(key, []).append(
                WNLaMProItem(it.keyword, it.relation, tuple(targets), it.subset, it.id, it.split)
            )
    out: Dict[str, Dict[str, dict]] = {}
    for (subset, relation), group in sorted(groups.items()):
        per_pattern = {}
        for pattern in patterns[relation]:
            rr = [
                reciprocal_rank(
                    rank(fill_pattern(pattern, it.keyword, mask_token), it.keyword), it.targets, [it.keyword]
                )
                for it in group
            ]
            per_pattern[pattern] = float(np.mean(rr))
        best = max(per_pattern, key=lambda p: per_pattern[p])
        out.setdefault(subset, {})[relation] = {
            "mrr": per_pattern[best],
            "pattern": best,
            "n": len(group),
            "per_pattern": per_pattern,
        }
    for subset, relations in out.items():
        n = sum(r["n"] for r in relations.values())
        relations["mean"] = {"mrr": sum(r["mrr"] * r["n"] for r in relations.values()) / n, "n": n}
    return out


# ---------------------------------------------------------------------------
# A masked LM as RankFn, with optional vector injection for the keyword


def _keyword_span(offsets: Sequence[Tuple[int, int]], text: str, keyword: str) -> Tuple[int, int]:
    """Wordpiece index range [i, j) covering the first whole-word keyword match."""
    match = re.search(r"(?<!\w)" + re.escape(keyword) + r"(?!\w)", text, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(Errors.E385.format(keyword=keyword, text=text))
    start, end = match.span()
    pieces = [k for k, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return pieces[0], pieces[-1] + 1


def build_inputs_embeds(
    model,
    tokenizer,
    text: str,
    keyword: str,
    vectors: Optional[Mapping[str, np.ndarray]] = None,
    mode: str = "replace",
):
    """(inputs_embeds [1, L, d], attention_mask [1, L], mask position) for `text`.

    When `vectors` has the keyword, its vector replaces the keyword's
    wordpieces ("replace") or follows them after a slash ("slash":
    e_i..e_j, e_/, v), the two injections of spacy_bertram/injection/.
    """
    import torch

    if mode not in ("replace", "slash"):
        raise ValueError(Errors.E386.format(mode=mode))
    enc = tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    ids = enc["input_ids"][0]
    mask_positions = (ids == tokenizer.mask_token_id).nonzero().flatten().tolist()
    if not mask_positions:
        raise ValueError(Errors.E387.format(mask_token=tokenizer.mask_token, text=text))
    table = model.get_input_embeddings()
    device = table.weight.device  # the model's device: every tensor it is fed is made there
    with torch.no_grad():
        emb = table(ids.to(device))
    mask_pos = mask_positions[0]
    vector = None if vectors is None else vectors.get(keyword)
    if vector is not None:
        i, j = _keyword_span(enc["offset_mapping"][0].tolist(), text, keyword)
        v = torch.as_tensor(np.asarray(vector), dtype=emb.dtype, device=device).reshape(1, -1)
        if mode == "replace":
            new = torch.cat([emb[:i], v, emb[j:]])
        else:
            slash_id = slash_token_id(tokenizer)  # "Ġ/" for byte-level BPE, as the component injects it
            with torch.no_grad():
                slash = table(torch.tensor([slash_id], device=device))
            new = torch.cat([emb[:j], slash, v, emb[j:]])
        if mask_pos >= j:
            mask_pos += new.shape[0] - emb.shape[0]
        emb = new
    attention = torch.ones(1, emb.shape[0], dtype=torch.long, device=device)
    return emb.unsqueeze(0), attention, mask_pos


def masked_lm_logits(model, tokenizer, text: str, keyword: str, vectors=None, mode: str = "replace"):
    """Vocabulary logits at the (first) mask position, shape [V]."""
    import torch

    embeds, attention, pos = build_inputs_embeds(model, tokenizer, text, keyword, vectors, mode)
    with torch.no_grad():
        logits = model(inputs_embeds=embeds, attention_mask=attention).logits
    return logits[0, pos]


def target_ranks(
    model, tokenizer, text: str, keyword: str, targets: Iterable[str], vectors=None, mode: str = "replace"
) -> Dict[str, int]:
    """1-based rank of each target among the whole-word vocabulary (None if absent)."""
    logits = masked_lm_logits(model, tokenizer, text, keyword, vectors, mode)
    words = word_start_tokens(tokenizer)
    ids = list(words)
    order = np.argsort(-logits[ids].float().cpu().numpy(), kind="stable")
    position = {words[ids[k]]: r + 1 for r, k in enumerate(order)}
    return {t: position.get(t) for t in targets}


class MaskedLMRanker:
    """RankFn over a HF masked LM (BertForMaskedLM-like): top_k whole words."""

    def __init__(
        self,
        model,
        tokenizer,
        vectors: Optional[Mapping[str, np.ndarray]] = None,
        mode: str = "replace",
        top_k: int = 1000,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.vectors = vectors
        self.mode = mode
        self.top_k = top_k
        self._words = word_start_tokens(tokenizer)
        self._ids = list(self._words)

    @property
    def mask_token(self) -> str:
        return self.tokenizer.mask_token

    @property
    def vocabulary(self) -> Set[str]:
        return set(self._words.values())

    def __call__(self, text: str, keyword: str) -> List[str]:
        logits = masked_lm_logits(self.model, self.tokenizer, text, keyword, self.vectors, self.mode)
        scores = logits[self._ids].float().cpu().numpy()
        k = min(self.top_k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [self._words[self._ids[t]] for t in top]
