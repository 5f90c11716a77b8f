"""The `rare-words` command: which tokens the bertram component calls rare, and why.

A command of `python -m spacy_bertram`, registered on `app.app`; it imports spaCy and the model only when it
runs (`explain.py`), so `--help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import click
import typer

from .app import app, check_lang, check_model, check_utf8_argument, run_checked, utf8_text
from ..errors import Errors
from ..rarity.frequencies import DEFAULT_MAX_ZIPF, check_max_zipf

#: The one text that means "read the texts from stdin", as `cat -` does.
STDIN = "-"


def texts_to_inspect(texts: List[str], file: Optional[Path]) -> List[str]:
    """The texts to inspect: the arguments (stdin's lines for `-` alone), then --file's lines, blank lines left
    out. Each must be UTF-8: a legacy-encoded one is refused by name, not failed on at the tokenizer."""
    read: List[str] = []
    sources: List[Tuple[str, bytes]] = []  # (argument, its bytes), read line by line
    if texts == [STDIN]:
        sources.append(("stdin", click.get_binary_stream("stdin").read()))
    else:
        read = [check_utf8_argument(text, f"text {k + 1} of the command line") for k, text in enumerate(texts)]
    if file is not None:
        argument = f"--file {str(file)!r}"
        try:
            sources.append((argument, file.read_bytes()))
        except OSError as err:
            raise ValueError(Errors.E604.format(argument=argument, err=err)) from None
    for argument, data in sources:
        read.extend(line for line in utf8_text(data, argument, lines=True).splitlines() if line.strip())
    if not read:
        raise ValueError(Errors.E603)
    return read


@app.command("rare-words")
def rare_words_cmd(
    model: str = typer.Argument(
        ...,
        metavar="MODEL",
        help="a spaCy pipeline with a bertram component (an installed package's name or a "
        "saved pipeline directory: what spacy.load takes), or a BERTRAM model directory (the output of train)",
    ),
    texts: Optional[List[str]] = typer.Argument(
        None, help="texts to inspect; - as the only text reads them from stdin, one per line"
    ),
    file: Optional[Path] = typer.Option(
        None, "--file", help="also inspect the lines of this UTF-8 file, one text per line (blank lines skipped)"
    ),
    max_zipf: Optional[float] = typer.Option(
        None, help=f"override the rule's max_zipf (BERTRAM model: default {DEFAULT_MAX_ZIPF})"
    ),
    lang: str = typer.Option("en", help="language of the blank pipeline built around a BERTRAM model"),
    all_tokens: bool = typer.Option(
        False, "--all", help="list every token, not only the rare ones and the near misses (alphabetic tokens)"
    ),
) -> None:
    """Which tokens the bertram component calls rare, and why (Zipf, wordpieces, reason).

    The texts are the arguments, the lines of --file, or, with - as the only text, the lines of stdin:
    `rare-words MODEL "the kumquat"`, `rare-words MODEL --file texts.txt`, `cat texts.txt | rare-words MODEL -`.
    """
    if max_zipf is not None:
        run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_lang, lang)
    run_checked(check_model, model, pipeline=True)
    inputs = run_checked(texts_to_inspect, list(texts or []), file)
    from ..explain import explain_texts, format_decisions, rule_pipeline

    nlp, pipe = run_checked(rule_pipeline, model, max_zipf=max_zipf, lang=lang)
    rows = run_checked(explain_texts, nlp, pipe, inputs)
    typer.echo(format_decisions(rows, every_token=all_tokens), nl=False)
