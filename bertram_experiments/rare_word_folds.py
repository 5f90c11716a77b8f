"""Two (or k) folds of a rare-word set, split by rare word with a fixed seed.

A choice made on the dev sets (a default, a number of contexts) should hold
on more than the pairs it was tuned on. Splitting by rare word (never by
pair) keeps all pairs of a word in one fold, so a fold is a set of unseen
words, and the fixed seed makes "fold 0/2" the same words on every machine.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Dict, Iterable, List, Optional, Set, Tuple

from .errors import Errors
from .intrinsic.rare_sets import CardSet, ChimeraItem, CrwSet

#: The seed of the shuffle that assigns words to folds (fixed: folds are part of a result's name).
FOLD_SEED = 0


def parse_fold(text: str) -> Tuple[int, int]:
    """ "0/2" -> (0, 2): the first of two folds; ValueError naming the bad value."""
    index, _, count = text.partition("/")
    if not (index.strip().isdigit() and count.strip().isdigit()) or int(count) < 2 or int(index) >= int(count):
        raise ValueError(Errors.E327.format(text=text))
    return int(index), int(count)


def fold_members(keys: Iterable[str], index: int, count: int) -> Set[str]:
    """The keys (rare words, item ids) of fold `index` of `count`: every count-th key of a seeded shuffle."""
    order = sorted(set(keys))
    random.Random(FOLD_SEED).shuffle(order)
    return {key for position, key in enumerate(order) if position % count == index}


def select_fold(
    fold_of: Tuple[int, int],
    crw: Optional[CrwSet],
    card: Optional[CardSet],
    chimeras: Optional[Dict[str, List[ChimeraItem]]],
):
    """The sets cut to one fold: CRW and Card-660 by rare word, the Chimeras by item id."""

    def keep(pairs):
        members = fold_members((p[1] for p in pairs), *fold_of)
        return [p for p in pairs if p[1] in members]

    crw = replace(crw, pairs=keep(crw.pairs)) if crw is not None else None
    card = replace(card, pairs=keep(card.pairs)) if card is not None else None
    if chimeras is not None:
        members = fold_members((item.item_id for items in chimeras.values() for item in items), *fold_of)
        chimeras = {name: [i for i in items if i.item_id in members] for name, items in chimeras.items()}
    return crw, card, chimeras
