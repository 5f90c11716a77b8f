"""`python -m bertram_experiments COMMAND ...`: see bertram_experiments.cli."""

from .cli import main

if __name__ == "__main__":
    main()
