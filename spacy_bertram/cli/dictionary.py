"""The `dictionary` command of `python -m spacy_bertram` (registered on `app.app`)."""

from pathlib import Path
from typing import Optional

import typer

from .app import FORCE_FILE_HELP, app, echo_json, run_checked, setup_logging
from ..bounds import count_range
from ..fileio import check_output_file
from ..dictionary.build import (
    DEFAULT_GCIDE_INDEX,
    DEFAULT_MAX_PER_SOURCE,
    build_dictionary_store,
    parse_sources,
    store_path,
)
from ..dictionary.store import FORMAT_NAME


@app.command("dictionary")
def dictionary_cmd(
    output: Path = typer.Argument(..., help="the store: a .sqlite file, or a directory (OUTPUT/definitions.sqlite)"),
    sources: str = typer.Option(
        "gcide,wordnet",
        help="comma-separated: gcide (dictd's dict-gcide), wordnet "
        "(WordNet 3.0 via NLTK); contexts are interleaved in this order",
    ),
    gcide: Path = typer.Option(DEFAULT_GCIDE_INDEX, help="GCIDE's dictd index; gcide.dict.dz (or .dict) beside it"),
    wordnet_dir: Optional[Path] = typer.Option(None, help="WordNet 3.0 dict files (default: as for `rarify`)"),
    gcide_wordnet_senses: bool = typer.Option(
        True,
        "--gcide-wordnet-senses/--no-gcide-wordnet-senses",
        help="keep the senses GCIDE took from WordNet 1.5 (drop them for a "
        "store free of WordNet, e.g. to evaluate on WordNet-rarified sets)",
    ),
    max_per_source: int = typer.Option(
        DEFAULT_MAX_PER_SOURCE, **count_range("contexts"), help="contexts kept per headword and source"
    ),
    force: bool = typer.Option(
        False, "--force", help=FORCE_FILE_HELP + " (a definition store it wrote is replaced without it)"
    ),
) -> None:
    """Definition contexts per headword ("kumquat: small oval citrus fruit ...") for the bertram component."""
    setup_logging()
    names = run_checked(parse_sources, sources)
    # A previous store of this command says so in its meta table (format); anything else is refused.
    run_checked(check_output_file, store_path(output), command="dictionary", force=force, mark=FORMAT_NAME)
    echo_json(
        run_checked(
            build_dictionary_store,
            output,
            names,
            gcide_index=gcide,
            wordnet_dir=wordnet_dir,
            gcide_wordnet_derived=gcide_wordnet_senses,
            max_per_source=max_per_source,
        )
    )
