#!/usr/bin/env python
"""Fetch biomedical NER data into assets/ner/nero_pubmed.txt (the `curve-labels-bio` workflow's data):
`python scripts/fetch_nero.py [--assets DIR] [--max-texts N] [--seed S]`.

PubMed sentences of the NERO corpus with their Disease, Chemical, Drug, Protein, Cell and
Organism entities, as IOB lines (`bertram_experiments/ner/nero.py` says how), read out of the
NERO-nlp 0.0.8 wheel (assets/downloads, else `pip download --no-deps`); nothing is installed.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from registry_data import NERO_TEXTS, report_fetch, fetch_nero  # scripts/registry_data.py

from bertram_experiments.assets import default_assets_dir


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assets", default=str(default_assets_dir()), help="assets directory (default: %(default)s)")
    parser.add_argument(
        "--max-texts", type=int, default=NERO_TEXTS, help="sentences, a seeded sample (default: %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    return report_fetch(lambda: fetch_nero(args.assets, args.max_texts, args.seed))


if __name__ == "__main__":
    sys.exit(main())
