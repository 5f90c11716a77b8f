"""The experiments' command line: `app` with every experiment command registered on it."""

import sys
from typing import List, Optional

from .app import app
from .rarification import commands as _rarification_commands  # noqa: F401  (registers its commands on app)
from .downstream import commands as _downstream_commands  # noqa: F401  (registers its commands on app)
from .synonyms import commands as _synonym_commands  # noqa: F401  (registers its commands on app)
from .intrinsic import commands as _intrinsic_commands  # noqa: F401  (registers its commands on app)
from .report import commands as _report_commands  # noqa: F401  (registers its commands on app)
from .ner import commands as _ner_commands  # noqa: F401  (registers its commands on app)
from .label_curve import commands as _label_curve_commands  # noqa: F401  (registers its commands on app)
from .comparison import commands as _comparison_commands  # noqa: F401  (registers its commands on app)

__all__ = ["app", "main"]


def main(argv: Optional[List[str]] = None) -> None:
    """`python -m bertram_experiments` entry point."""
    app(args=argv, prog_name="python -m bertram_experiments")


if __name__ == "__main__":
    main(sys.argv[1:])
