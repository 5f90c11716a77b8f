"""The `rare-words` command: which tokens the bertram component calls rare, and why.

A command of `python -m spacy_bertram`, registered on `app.app`; it imports spaCy and the model only when it
runs (`explain.py`), so `--help` stays fast.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .app import app, check_lang, check_model, run_checked
from .frequencies import check_max_zipf


@app.command("rare-words")
def rare_words_cmd(
    model: Path = typer.Argument(
        ..., metavar="MODEL", help="a trained BERTRAM model directory, or a spaCy pipeline with a bertram component"
    ),
    texts: List[str] = typer.Argument(..., help="texts to inspect"),
    max_zipf: Optional[float] = typer.Option(None, help="override the rule's max_zipf (BERTRAM model: default 3.0)"),
    lang: str = typer.Option("en", help="language of the blank pipeline built around a BERTRAM model"),
    all_tokens: bool = typer.Option(
        False, "--all", help="list every token, not only the rare ones and the near misses (alphabetic tokens)"
    ),
) -> None:
    """Which tokens the bertram component calls rare, and why (Zipf, wordpieces, reason)."""
    if max_zipf is not None:
        run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_lang, lang)
    run_checked(check_model, model, pipeline=True)
    from .explain import explain_texts, format_decisions, rule_pipeline

    nlp, pipe = run_checked(rule_pipeline, model, max_zipf=max_zipf, lang=lang)
    rows = run_checked(explain_texts, nlp, pipe, texts)
    typer.echo(format_decisions(rows, every_token=all_tokens), nl=False)
