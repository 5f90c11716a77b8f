"""`python -m spacy_bertram COMMAND ...`: see spacy_bertram.cli."""

from .cli import main

if __name__ == "__main__":
    main()
