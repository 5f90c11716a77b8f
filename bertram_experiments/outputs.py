"""What each evaluation command writes at the top of its output directory, importable at no cost.

A command checks its output (`fileio.check_output_dir`) before it imports its step (spaCy, torch:
seconds), so a refused output costs nothing and nothing is written; the steps, which check again
for callers from Python, read the same names from here.
"""

#: The record of a run of evaluate, evaluate-originals and ner-evaluate: it names the command that
#: wrote it (`fileio.mark_json`), so none of them overwrites another's (or a user's) metrics.json.
METRICS_FILE = "metrics.json"

SPLIT_OUTPUTS = ("splits.json", "train.jsonl", "dev.jsonl", "test_candidates.jsonl", "train.spacy", "dev.spacy")
RARIFY_OUTPUTS = ("rarify.json", "test.jsonl", "test.spacy", "train.spacy", "dev.spacy", ".partial", "seed-*")
#: What later commands read from the directories `split` and `rarify` write.
SPLIT_DOCBINS = ("train.spacy", "dev.spacy")
SPLIT_RECORDS = ("train.jsonl", "dev.jsonl", "test_candidates.jsonl")
RARIFIED_ITEMS = ("test.jsonl",)
#: One evaluated set (`set_outputs.write_set_outputs`): what evaluate-originals writes.
SET_OUTPUTS = (METRICS_FILE, "predictions.jsonl", "accuracy_by_frequency.png")
EVALUATE_OUTPUTS = (*SET_OUTPUTS, "seed-*")
POOL_OUTPUTS = ("pooled.json", "pooled.md")
#: learning-curve: its table (JSON, markdown) and two plots; the first two are marked.
CURVE_OUTPUTS = ("learning_curve.json", "learning_curve.md", "learning_curve.png", "learning_curve_contexts.png")

#: train-baseline and assemble replace their directory in one rename (keeping what they did not write).
INFO_FILE = "baseline.json"
BASELINE_OUTPUTS = ("model-best", "model-last", "config.cfg", "checkpoints", INFO_FILE)
#: How train-baseline writes them (`fileio` patterns): spaCy writes the pipelines and checkpoints into their
#: directories as `nlp.to_disk` does, so a file it does not write there (a user's) stays.
BASELINE_WRITES = ("model-best/", "model-last/", "config.cfg", "checkpoints/", INFO_FILE)
ASSEMBLE_OUTPUTS = ("pipeline", "code.py")

#: ner-folds (replaces its directory), ner-train and ner-evaluate.
FOLDS_FILE = "folds.json"
#: A fold's DocBins, PART.spacy in fold-N/ (a user's file beside them stays).
FOLD_PARTS = ("train", "dev", "test")
NER_FOLDS_OUTPUTS = (*(f"fold-*/{part}.spacy" for part in FOLD_PARTS), FOLDS_FILE)
TRAIN_SUMMARY = "train.json"
NER_TRAIN_OUTPUTS = ("fold-*", TRAIN_SUMMARY)
REPORT_FILE = "report.md"
PLOT_FILE = "f1_by_rarity.png"
NER_EVALUATE_OUTPUTS = ("fold-*.jsonl", METRICS_FILE, REPORT_FILE, PLOT_FILE)
#: ner-full-evaluate: predictions per variant and seed, the pooled metrics, the report, the curve; the cost
#: benchmark (benchmarks/ner.py --output) writes COST_FILE beside them.
NER_CURVE_PLOT = "learning_curve.png"
NER_COST_FILE = "cost.json"
NER_FULL_OUTPUTS = ("frozen", "tuned", METRICS_FILE, REPORT_FILE, NER_CURVE_PLOT, NER_COST_FILE)
#: label-curve: its runs (TRAINING_DIR) and the curve (OUTPUT_DIR); label-curve-report: the tables and plots.
LABEL_CURVE_RUNS = ("fold-*",)
LABEL_CURVE_OUTPUTS = ("curve.json", "curve.md", "curve.png")
LABEL_CURVE_REPORT_OUTPUTS = ("curves.md", "*.png")
#: compare-runs: two runs of one evaluation, paired.
COMPARE_OUTPUTS = ("comparison.json", "comparison.md")

__all__ = [
    "ASSEMBLE_OUTPUTS",
    "BASELINE_OUTPUTS",
    "BASELINE_WRITES",
    "COMPARE_OUTPUTS",
    "CURVE_OUTPUTS",
    "EVALUATE_OUTPUTS",
    "FOLDS_FILE",
    "FOLD_PARTS",
    "INFO_FILE",
    "LABEL_CURVE_OUTPUTS",
    "LABEL_CURVE_REPORT_OUTPUTS",
    "LABEL_CURVE_RUNS",
    "METRICS_FILE",
    "NER_COST_FILE",
    "NER_CURVE_PLOT",
    "NER_EVALUATE_OUTPUTS",
    "NER_FOLDS_OUTPUTS",
    "NER_FULL_OUTPUTS",
    "NER_TRAIN_OUTPUTS",
    "PLOT_FILE",
    "POOL_OUTPUTS",
    "RARIFIED_ITEMS",
    "RARIFY_OUTPUTS",
    "REPORT_FILE",
    "SET_OUTPUTS",
    "SPLIT_DOCBINS",
    "SPLIT_OUTPUTS",
    "SPLIT_RECORDS",
    "TRAIN_SUMMARY",
]
