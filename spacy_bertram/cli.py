"""The command line: `app` (spacy_bertram/app.py) with every command registered on it.

`python -m spacy_bertram COMMAND` and the console script `spacy-bertram COMMAND`
both run `main`. See app.py for the commands and what they share.
"""
import sys
from pathlib import Path
from typing import List, Optional

from .app import app
from .training import commands as _training_commands  # noqa: F401  (registers its commands on app)
from .evaluation.rarification import commands as _rarification_commands  # noqa: F401  (registers its commands on app)
from .evaluation.downstream import commands as _downstream_commands  # noqa: F401  (registers its commands on app)
from .evaluation.synonyms import commands as _synonym_commands  # noqa: F401  (registers its commands on app)
from .evaluation.intrinsic import commands as _intrinsic_commands  # noqa: F401  (registers its commands on app)
from .evaluation.report import commands as _report_commands  # noqa: F401  (registers its commands on app)
from .evaluation.ner import commands as _ner_commands  # noqa: F401  (registers its commands on app)
from .dictionary import commands as _dictionary_commands  # noqa: F401  (registers its commands on app)

__all__ = ["app", "main"]


def prog_name() -> str:
    """The name usage lines show: `python -m spacy_bertram` or the console script's."""
    return "python -m spacy_bertram" if Path(sys.argv[0]).name == "__main__.py" else "spacy-bertram"


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script and `python -m spacy_bertram` entry point."""
    app(args=argv, prog_name=prog_name())


if __name__ == "__main__":
    main(sys.argv[1:])
