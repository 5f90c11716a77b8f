"""The one way every evaluation writes a markdown table, a percentage and a confidence interval, so that
the report, the pooled table, synonym recovery, NER and the learning curve read alike."""

from __future__ import annotations

import math
from typing import Any, Iterable, List, Mapping, Optional, Sequence


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], text_columns: int = 1) -> List[str]:
    """Lines of a markdown table: the first `text_columns` columns left-aligned, the others (figures)
    right-aligned."""
    align = ["---"] * text_columns + ["---:"] * (len(header) - text_columns)
    lines = ["| " + " | ".join(str(cell) for cell in header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return lines


def missing(value: Optional[float]) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def percent(value: Optional[float], absent: str = "n/a") -> str:
    """A share as a percentage with one decimal (`absent` for a value there is none of)."""
    return absent if missing(value) else f"{100 * value:.1f}"


def excludes_zero(ci: Mapping[str, float]) -> bool:
    return ci["low"] > 0 or ci["high"] < 0


def format_ci(ci: Optional[Mapping[str, Any]], scale: float = 1.0, digits: int = 3, star: bool = False) -> str:
    """'+1.2 [-0.5, +2.9]': the estimate and its 95% CI, times `scale` (100: points); with `star`, ' *'
    where the CI excludes 0. '' for no CI (a system compared with nothing, or no items)."""
    if not ci or missing(ci.get("estimate")):
        return ""
    text = f"{scale * ci['estimate']:+.{digits}f} [{scale * ci['low']:+.{digits}f}, {scale * ci['high']:+.{digits}f}]"
    return text + (" *" if star and excludes_zero(ci) else "")
