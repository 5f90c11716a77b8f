"""The `bertram` component's rare-word decisions, shown token by token.

`python -m spacy_bertram rare-words MODEL "text" ...` prints, for each token, the
rule's decision with the figures it rests on (wordfreq Zipf, wordpieces of the
encoder) and the reason, so a user can see why a word did or did not get a
vector before changing `[components.bertram.rare_words]`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

import spacy

from .model.config import BertramConfig
from .errors import Errors
from .rarity.rare_words import RareDecision
from .model.storage import CONFIG_FILE
from .types import PathLike


#: Reasons for tokens that are no word: left out of the table unless every token is asked for.
NOT_WORDS = ("not alphabetic", "no letter", "whitespace")


def rule_pipeline(model: PathLike, max_zipf: Optional[float] = None, lang: str = "en") -> Tuple[Any, Any]:
    """(nlp, bertram component): a pipeline with one (a saved pipeline directory, or the name of an installed
    pipeline package: what `spacy.load` takes), or a blank `lang` pipeline around a BERTRAM model directory."""
    path = Path(model)
    package = not path.exists() and spacy.util.is_package(str(model))
    if (path / "config.cfg").is_file() or package:
        nlp = spacy.load(str(model) if package else path)
        names = [name for name, proc in nlp.pipeline if type(proc).__name__ == "BertramComponent"]
        if not names:
            raise ValueError(Errors.E368.format(path=str(path)))
        pipe = nlp.get_pipe(names[0])
        if max_zipf is not None:
            raise ValueError(Errors.E369)
        return nlp, pipe
    if not path.is_dir():
        raise ValueError(Errors.E043.format(directory=str(path)))
    # Only the encoder's name: the component loads (and checks) the model itself, once.
    base_model = BertramConfig.from_disk(path / CONFIG_FILE).base_model
    nlp = spacy.blank(lang)
    rule = {"@misc": "spacy-bertram.RareWords.v1"}
    if max_zipf is not None:
        rule["max_zipf"] = float(max_zipf)
    pipe = nlp.add_pipe(
        "bertram",
        config={
            "rare_words": rule,
            "model": {"@architectures": "spacy-bertram.Bertram.v1", "base_model": base_model, "model_path": str(path)},
        },
    )
    nlp.initialize()  # the model loaded and the rule prepared, once
    return nlp, pipe


def explain_texts(nlp: Any, pipe: Any, texts: Sequence[str]) -> List[List[RareDecision]]:
    """The component's decision for every token of each text (tokenized by `nlp`)."""
    return [pipe.explain(nlp.make_doc(text)) for text in texts]


def format_decisions(rows: Sequence[Sequence[RareDecision]], every_token: bool = False) -> str:
    """A plain table per text: token, rare, Zipf, wordpieces, reason.

    Without `every_token`, tokens that are no word at all (punctuation, numbers,
    whitespace) are left out."""
    lines: List[str] = []
    for k, decisions in enumerate(rows):
        lines.append(f"text {k + 1}")
        lines.append(f"  {'token':<20} {'rare':<5} {'zipf':>5} {'pieces':>6}  reason")
        for d in decisions:
            if not every_token and d.reason in NOT_WORDS:
                continue
            zipf = "" if d.zipf is None else f"{d.zipf:.2f}"
            pieces = "" if d.wordpieces is None else str(d.wordpieces)
            lines.append(f"  {d.text[:20]:<20} {'yes' if d.rare else 'no':<5} {zipf:>5} {pieces:>6}  {d.reason}")
    return "\n".join(lines) + "\n"


__all__ = ["explain_texts", "format_decisions", "rule_pipeline"]
