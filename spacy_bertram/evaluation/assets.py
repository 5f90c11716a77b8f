"""Where the project's data lives: the assets folder, and which command makes a missing part.

The package only reads paths. Fetching (registry wheels, Debian packages, the
optional public sets) is the project's job: `python -m spacy project assets`
(project.yml `assets:`) and the scripts in `scripts/` that `spacy project run`
calls. A reader that finds its file missing names the command that writes it.
"""
from __future__ import annotations

import os
from pathlib import Path

#: Overrides ./assets, for commands run outside the project folder.
ASSETS_ENV = "SPACY_BERTRAM_ASSETS"
#: What writes each part of the assets folder (the command a missing file's error names).
CORPUS_COMMAND = "python scripts/build_corpus.py --assets {assets}   (or: python -m spacy project run corpus)"
WNUT16_COMMAND = "python scripts/fetch_wnut16.py --assets {assets}   (or: python -m spacy project run ner-data)"
WNUT16_FILE = Path("ner") / "wnut16_train.txt"


def default_assets_dir() -> Path:
    """$SPACY_BERTRAM_ASSETS, else ./assets (project.yml runs from the repo root)."""
    return Path(os.environ.get(ASSETS_ENV) or "assets")


def default_corpus_dir() -> Path:
    return default_assets_dir() / "corpus"
