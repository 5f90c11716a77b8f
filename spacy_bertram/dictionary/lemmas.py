"""Which headwords an inflected form may belong to ("kumquats" -> "kumquat", "geese" -> "goose").

A dictionary lists lemmas; a text has inflected forms. The candidates follow
WordNet's morphy(7WN): the form itself, its irregular lemmas from WordNet's
exception lists (kept in the definition store), then the regular suffix
rules, plus undoing a doubled final consonant ("running" -> "runn" -> "run").
The caller keeps the candidates its dictionary has as headwords, so a rule
that makes a non-word ("bus" -> "bu") costs one failed lookup and nothing else.
"""

from __future__ import annotations

from typing import Callable, Iterable, List, Optional

#: morphy's detachment rules (suffix, replacement), nouns, verbs, then adjectives.
SUFFIX_RULES = (
    ("s", ""),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
    ("es", "e"),
    ("es", ""),
    ("ed", "e"),
    ("ed", ""),
    ("ing", "e"),
    ("ing", ""),
    ("er", ""),
    ("est", ""),
    ("er", "e"),
    ("est", "e"),
)
_VOWELS = set("aeiou")


def rule_lemmas(form: str) -> List[str]:
    """Regular lemmas of a lowercased form, in rule order, without duplicates."""
    found: List[str] = []
    for suffix, replacement in SUFFIX_RULES:
        if form.endswith(suffix) and len(form) > len(suffix) + 1:
            stem = form[: -len(suffix)]
            found.append(stem + replacement)
            if not replacement and len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in _VOWELS:
                found.append(stem[:-1])  # running -> run, bigger -> big
    return list(dict.fromkeys(lemma for lemma in found if lemma != form))


def candidate_lemmas(word: str, exceptions: Callable[[str], Iterable[str]], lemma: Optional[str] = None) -> List[str]:
    """Lowercased candidates in the order they are tried: the form, a tagger's lemma, irregular, regular."""
    form = word.lower()
    ordered = [form]
    if lemma:
        ordered.append(lemma.lower())
    ordered.extend(exceptions(form))
    ordered.extend(rule_lemmas(form))
    return list(dict.fromkeys(ordered))
