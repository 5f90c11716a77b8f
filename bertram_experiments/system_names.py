"""Readable titles of the evaluation's systems, for the report's and the pooled tables.

The names themselves (`downstream.SYSTEMS`) are `baseline`, `original`, `masked`,
`oracle_INJ` and `bertram_INJ_CTX`; the title is read off the name, so a table
never needs a second list of systems.
"""

from __future__ import annotations

FIXED = {
    "baseline": "baseline (stock textcat)",
    "original": "original texts (ceiling)",
    "masked": "masked texts (floor)",
}
CONTEXTS = {
    "form": "form only",
    "doc": "doc contexts",
    "store": "store contexts",
    "gcide": "GCIDE definitions",
    "indomain": "in-domain store",
    "stores": "in-domain + general store",
    "storesgcide": "in-domain + general store + GCIDE definitions",
    "memory": "doc + streaming memory",
}


def system_title(name: str) -> str:
    """`bertram_slash_doc` -> "+BERTRAM (slash, doc contexts)"; unknown names are kept as they are."""
    if name in FIXED:
        return FIXED[name]
    parts = name.split("_")
    if parts[0] == "oracle" and len(parts) == 2:
        return f"oracle (original words' embeddings, {parts[1]})"
    if parts[0] == "bertram" and len(parts) == 3:
        return f"+BERTRAM ({parts[1]}, {CONTEXTS.get(parts[2], parts[2])})"
    return name


__all__ = ["system_title"]
