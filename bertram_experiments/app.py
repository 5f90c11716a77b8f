"""`python -m bertram_experiments COMMAND`: the paper's experiments, run by the project (project.yml).

The plugin's command line (`python -m spacy_bertram`) makes and inspects a model; this one measures
it: rarified sets and their baselines (`split`, `train-baseline`, `rarify`), downstream evaluation
(`evaluate`, `evaluate-originals`, `pool`, `assemble`), real rare words (`similarity`, `intrinsic`),
synonym recovery, named entities (`ner-*`), learning curves and the run's report. It shares the
plugin's help layout and argument checks (`spacy_bertram.cli.app`); like the plugin's commands, each
imports its step when it runs, so `--help` answers at once.
"""

from spacy_bertram.project_support import command_line

app = command_line("bertram-experiments", __doc__.split("\n\n")[0])
