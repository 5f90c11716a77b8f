"""The command line: `app` (spacy_bertram/cli/app.py) with every command registered on it.

`python -m spacy_bertram COMMAND` and the console script `spacy-bertram COMMAND`
both run `main`. See app.py for the commands and what they share.
"""

import sys
from pathlib import Path
from typing import List, Optional

from .app import app
from . import training as _training_commands  # noqa: F401  (registers its commands on app)
from . import rare_words as _explain_command  # noqa: F401  (registers rare-words on app)
from . import dictionary as _dictionary_commands  # noqa: F401  (registers its commands on app)
from . import convert as _convert_command  # noqa: F401  (registers convert-reference on app)

__all__ = ["app", "main"]


def prog_name() -> str:
    """The name usage lines show: `python -m spacy_bertram` or the console script's."""
    return "python -m spacy_bertram" if Path(sys.argv[0]).name == "__main__.py" else "spacy-bertram"


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script and `python -m spacy_bertram` entry point."""
    app(args=argv, prog_name=prog_name())


if __name__ == "__main__":
    main(sys.argv[1:])
