"""The registry spacy-bertram adds to spaCy's config system: `context_sources` (`@context_sources` in a config).

It lives in a module of its own that imports only spaCy's registry, so that `spacy.registry.context_sources`
exists, for a user's own `@spacy.registry.context_sources("...")` function, as soon as any of these happens:

- spaCy's command line starts (`spacy train --code my_sources.py`, `spacy init fill-config`, `spacy debug
  config`): the `spacy_cli` entry point in pyproject.toml names this module, and spaCy's CLI loads every such
  entry point before it reads a `--code` file or a config;
- `import spacy_bertram` after `import spacy` (the package imports this module when spaCy is loaded: without
  spaCy, importing it would cost the command line's `--help` spaCy's seconds of imports);
- spaCy builds the `bertram` factory or anything spacy-bertram registers (their modules import this one).

The built-in sources are found through the `spacy_context_sources` entry points, as spaCy finds architectures.
"""

import catalogue
from spacy.util import registry

if not hasattr(registry, "context_sources"):
    registry.context_sources = catalogue.create(  # type: ignore[attr-defined]
        "spacy", "context_sources", entry_points=True
    )

#: The same object as `spacy.registry.context_sources`.
context_sources: catalogue.Registry = registry.context_sources  # type: ignore[attr-defined]
