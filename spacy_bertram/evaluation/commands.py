"""The rarification and evaluation commands of `python -m spacy_bertram` (registered on `app.app`).

  split           dataset -> train / dev / test candidates + the augmented training DocBin
  train-baseline  the masked / "w / w"-augmented transformer textcat, embeddings frozen
  rarify          the rarified test set, guided by the trained baseline
  evaluate        baseline vs +BERTRAM (3 injections x form / doc / store contexts), with the
                  original, masked and oracle ceilings, on All / WN / Msp
  evaluate-originals  do no harm: the original test texts, stock vs with bertram
  rare-words      which tokens the bertram component calls rare, and why
  pool            the evaluate results of several sets pooled (datasets x thresholds x seeds)
  similarity      word similarity (Spearman) of BERTRAM vs the subword mean, with contexts
  intrinsic       the same on real rare words (CRW, Card-660, Chimeras), with bootstrap CIs
  synonym-recovery  how close each system's vector for a rare synonym comes to the replaced word's embedding
  learning-curve  several training runs' measures side by side, with CIs and plots
  report          the markdown report of a project run
  assemble        the baseline + bertram pipeline, ready for `spacy package`

Each command imports its step when it runs, so `--help` stays fast.
"""
from pathlib import Path
from typing import List, Optional

import typer

from ..app import (FORCE_FILE_HELP, FORCE_HELP, GPU_HELP, app, check_gpu, check_lang, check_made_by, check_options,
                   echo_json, run_checked, setup_logging)
from ..fileio import check_output_dir, check_output_file
from ..frequencies import check_max_zipf
from .folds import parse_fold
from .outputs import (ASSEMBLE_OUTPUTS, BASELINE_OUTPUTS, CURVE_OUTPUTS, EVALUATE_OUTPUTS, METRICS_FILE, POOL_OUTPUTS,
                      RARIFY_OUTPUTS, SET_OUTPUTS, SPLIT_OUTPUTS)
from .rarification.seed_sets import parse_seeds

#: What the commands read from the directories `split` and `rarify` write.
SPLIT_DOCBINS = ("train.spacy", "dev.spacy")
SPLIT_RECORDS = ("train.jsonl", "dev.jsonl", "test_candidates.jsonl")
RARIFIED_ITEMS = ("test.jsonl",)


@app.command("split")
def split_cmd(
    dataset: str = typer.Argument(..., help="bbc, rotten_tomatoes, ag_news, dbpedia, mnli, or a JSONL path"),
    output_dir: Path = typer.Argument(..., help="where train/dev/test_candidates.jsonl and train/dev.spacy go"),
    assets: Optional[Path] = typer.Option(None, help="assets directory (default: ./assets)"),
    max_words: int = typer.Option(120, help="keep the first N words of each text (0: all)"),
    max_train: Optional[int] = typer.Option(None, help="at most N training texts (stratified)"),
    max_dev: Optional[int] = typer.Option(None, help="at most N dev texts"),
    max_test: Optional[int] = typer.Option(None, help="at most N test candidates"),
    dev_fraction: float = typer.Option(0.1, help="share of the training part used as dev"),
    seed: int = typer.Option(0, help="seed of the split, the sampling and the augmentation"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Split a dataset; the training DocBin gets the baseline's mask / "w / w" augmentation."""
    run_checked(check_options, max_words=(max_words, ">= 0"), max_train=(max_train, ">= 1"),
                max_dev=(max_dev, ">= 1"), max_test=(max_test, ">= 1"), dev_fraction=(dev_fraction, "[0, 1)"))
    run_checked(check_output_dir, output_dir, SPLIT_OUTPUTS, command="split", force=force)
    from .rarification.baseline import make_splits

    echo_json(run_checked(make_splits, dataset, output_dir, assets=assets, max_words=max_words,
                            max_train=max_train, max_dev=max_dev, max_test=max_test,
                            dev_fraction=dev_fraction, seed=seed))


@app.command("train-baseline")
def train_baseline_cmd(
    splits_dir: Path = typer.Argument(..., help="output of `split` (train.spacy, dev.spacy)"),
    output_dir: Path = typer.Argument(..., help="trained pipelines: OUTPUT/model-best, model-last"),
    config: Path = typer.Option(Path("configs/textcat_minilm.cfg"), help="pipeline config to start from"),
    base_model: str = typer.Option("default", help="encoder name or path ('default': MiniLM)"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    seed: int = typer.Option(0, help="spaCy's training seed"),
    max_steps: int = typer.Option(300, help="training steps"),
    eval_frequency: int = typer.Option(100, help="steps between dev evaluations"),
    batch_size: int = typer.Option(1000, help="padded words per batch"),
    learn_rate: float = typer.Option(1e-4, help="Adam learning rate"),
    no_freeze: bool = typer.Option(False, "--no-freeze", help="train the embedding layer too (not the paper's setting)"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Train the rarification baseline (embedding layer frozen) with `spacy train`."""
    run_checked(check_options, max_steps=(max_steps, ">= 1"), eval_frequency=(eval_frequency, ">= 1"),
                batch_size=(batch_size, ">= 1"), learn_rate=(learn_rate, "> 0"))
    run_checked(check_output_dir, output_dir, BASELINE_OUTPUTS, command="train-baseline", force=force, replaces=True)
    run_checked(check_made_by, splits_dir, "SPLITS_DIR", "split", SPLIT_DOCBINS)
    run_checked(check_gpu, gpu_id)
    from .rarification.baseline import train_baseline

    setup_logging()
    info = run_checked(train_baseline, splits_dir / "train.spacy", splits_dir / "dev.spacy", output_dir,
                        base_config=config, base_model=base_model, gpu_id=gpu_id, seed=seed,
                        max_steps=max_steps, eval_frequency=eval_frequency, batch_size=batch_size,
                        learn_rate=learn_rate, freeze=not no_freeze, force=force)
    echo_json(info)


@app.command("rarify")
def rarify_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline (e.g. .../model-best)"),
    splits_dir: Path = typer.Argument(..., help="output of `split`"),
    output_dir: Path = typer.Argument(..., help="train/dev/test.spacy + test.jsonl + rarify.json"),
    counts: Path = typer.Option(..., help="word counts: prepare's counts.tsv, its directory, or contexts.sqlite"),
    max_zipf: float = typer.Option(2.0, help="a substitute is rare below this wordfreq Zipf (2: the paper's "
                                   "'fewer than 100 in WWC'; 3: its '-1000' variant) and needs 2+ wordpieces"),
    max_candidates: Optional[int] = typer.Option(None, help="at most N test candidates"),
    max_masks: int = typer.Option(5, help="words masked per item at most"),
    misspelling_rate: float = typer.Option(0.1, help="share of substitutions that are misspellings"),
    seed: str = typer.Option("0", help="rarification seed(s), comma-separated (0,1,2): they share one masking "
                             "pass; the first seed's set goes to OUTPUT_DIR, each further seed N's to OUTPUT_DIR/seed-N"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    wordnet_dir: Optional[Path] = typer.Option(None, help="directory with the WordNet 3.0 dict files"),
    no_progress: bool = typer.Option(False, "--no-progress", help="no progress bars"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Build the rarified test set (resumes an interrupted run)."""
    run_checked(check_options, max_candidates=(max_candidates, ">= 1"), max_masks=(max_masks, ">= 1"),
                misspelling_rate=(misspelling_rate, "[0, 1]"))
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(parse_seeds, seed)
    run_checked(check_output_dir, output_dir, RARIFY_OUTPUTS, command="rarify", force=force)
    run_checked(check_made_by, splits_dir, "SPLITS_DIR", "split", SPLIT_RECORDS)
    run_checked(check_gpu, gpu_id)
    from .rarification.rarify_step import run_rarification

    setup_logging()
    echo_json(run_checked(run_rarification, model_dir, splits_dir, output_dir, counts, max_zipf=max_zipf,
                            max_candidates=max_candidates, max_masks=max_masks,
                            misspelling_rate=misspelling_rate, seed=seed, gpu_id=gpu_id,
                            wordnet_dir=wordnet_dir, progress=not no_progress))


MAX_ZIPF_HELP = ("the bertram component's rule: rare = wordfreq Zipf below this and 2+ wordpieces "
                 "of the encoder (3.0: about once per million words)")


def split_systems(systems: str) -> List[str]:
    return [s.strip() for s in systems.split(",") if s.strip()]


@app.command("evaluate")
def evaluate_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    rarified_dir: Path = typer.Argument(..., help="output of `rarify`"),
    output_dir: Path = typer.Argument(..., help="metrics.json, predictions.jsonl, accuracy_by_frequency.png"),
    bertram: Optional[Path] = typer.Option(None, help="trained BERTRAM model directory"),
    context_store: Optional[Path] = typer.Option(None, help="contexts.sqlite from `prepare`"),
    systems: str = typer.Option("all", help="comma-separated systems, or 'all': baseline, original, masked, "
                                "oracle_INJ, bertram_INJ_CTX (INJ: replace, slash, recentre; CTX: form, doc, store)"),
    max_zipf: float = typer.Option(3.0, help=MAX_ZIPF_HELP),
    contexts_per_word: int = typer.Option(8, help="contexts the bertram component gathers per rare word"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    seed_sets: bool = typer.Option(True, "--seed-sets/--no-seed-sets",
                                   help="also evaluate the further seeds' sets that RARIFIED_DIR/rarify.json lists "
                                   "(into OUTPUT_DIR/seed-N)"),
    bootstrap_resamples: int = typer.Option(10000, help="resamples for the paired bootstrap CIs"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    dictionary_store: Optional[Path] = typer.Option(None, help="definition store for bertram_slash_gcide (GCIDE "
                                                    "only: `dictionary OUT --sources gcide --no-gcide-wordnet-senses`)"),
) -> None:
    """Accuracy, gold-label log-probability and paired bootstrap CIs vs the baseline on the rarified test set."""
    run_checked(check_options, contexts_per_word=(contexts_per_word, ">= 1"),
                bootstrap_resamples=(bootstrap_resamples, ">= 1"))
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_output_dir, output_dir, EVALUATE_OUTPUTS, command="evaluate", force=force, marked=[METRICS_FILE])
    run_checked(check_made_by, rarified_dir, "RARIFIED_DIR", "rarify", RARIFIED_ITEMS)
    run_checked(check_gpu, gpu_id)
    from .downstream.downstream import DEFAULT_SYSTEMS, evaluate_systems

    setup_logging()
    chosen = list(DEFAULT_SYSTEMS) if systems.strip() == "all" else split_systems(systems)
    metrics = run_checked(evaluate_systems, model_dir, rarified_dir, output_dir, bertram_path=bertram,
                           context_store=context_store, systems=chosen, max_zipf=max_zipf,
                           contexts_per_word=contexts_per_word, gpu_id=gpu_id, seed_sets=seed_sets,
                           n_resamples=bootstrap_resamples, dictionary_store=dictionary_store)
    echo_json({"n_items": metrics["n_items"], "seed_sets": metrics.get("seed_sets", []),
                "accuracy_all": {s: a["All"]["accuracy"] for s, a in metrics["accuracy"].items()}})


@app.command("evaluate-originals")
def evaluate_originals_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    splits_dir: Path = typer.Argument(..., help="output of `split` (test_candidates.jsonl)"),
    output_dir: Path = typer.Argument(..., help="metrics.json, predictions.jsonl"),
    bertram: Path = typer.Option(..., help="trained BERTRAM model directory"),
    systems: str = typer.Option("baseline, bertram_replace_doc, bertram_slash_doc, bertram_recentre_doc",
                                help="comma-separated systems (see evaluate)"),
    max_zipf: float = typer.Option(3.0, help=MAX_ZIPF_HELP),
    contexts_per_word: int = typer.Option(8, help="contexts the bertram component gathers per rare word"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    bootstrap_resamples: int = typer.Option(10000, help="resamples for the paired bootstrap CIs"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Do no harm: every original test text, stock vs with bertram (accuracy, log p(gold), paired CIs)."""
    run_checked(check_options, contexts_per_word=(contexts_per_word, ">= 1"),
                bootstrap_resamples=(bootstrap_resamples, ">= 1"))
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_output_dir, output_dir, SET_OUTPUTS, command="evaluate-originals", force=force,
                marked=[METRICS_FILE])
    run_checked(check_made_by, splits_dir, "SPLITS_DIR", "split", ("test_candidates.jsonl",))
    run_checked(check_gpu, gpu_id)
    from .downstream.downstream import evaluate_originals

    setup_logging()
    metrics = run_checked(evaluate_originals, model_dir, splits_dir, output_dir, bertram,
                           systems=split_systems(systems), max_zipf=max_zipf,
                           contexts_per_word=contexts_per_word, gpu_id=gpu_id, n_resamples=bootstrap_resamples)
    echo_json({"n_items": metrics["n_items"], "mean_injected_per_doc": metrics["mean_injected_per_doc"],
                "accuracy_all": {s: a["All"]["accuracy"] for s, a in metrics["accuracy"].items()}})


@app.command("rare-words")
def rare_words_cmd(
    model: Path = typer.Argument(..., metavar="MODEL", help="a trained BERTRAM model directory, or a spaCy "
                                 "pipeline with a bertram component"),
    texts: List[str] = typer.Argument(..., help="texts to inspect"),
    max_zipf: Optional[float] = typer.Option(None, help="override the rule's max_zipf (BERTRAM model: default 3.0)"),
    lang: str = typer.Option("en", help="language of the blank pipeline built around a BERTRAM model"),
    all_tokens: bool = typer.Option(False, "--all", help="list every token, not only the rare ones and the "
                                    "near misses (alphabetic tokens)"),
) -> None:
    """Which tokens the bertram component calls rare, and why (Zipf, wordpieces, reason)."""
    if max_zipf is not None:
        run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_lang, lang)
    from .rarity import explain_texts, format_decisions, rule_pipeline

    nlp, pipe = run_checked(rule_pipeline, model, max_zipf=max_zipf, lang=lang)
    rows = run_checked(explain_texts, nlp, pipe, texts)
    typer.echo(format_decisions(rows, every_token=all_tokens), nl=False)


@app.command("pool")
def pool_cmd(
    metrics_dirs: List[Path] = typer.Argument(..., help="evaluate output dirs (each with predictions.jsonl); "
                                              "the seed sets their metrics.json lists are included"),
    output: Path = typer.Option(Path("metrics/pooled"), help="directory for pooled.json and pooled.md"),
    bootstrap_resamples: int = typer.Option(10000, help="resamples for the paired bootstrap CIs"),
    seed: int = typer.Option(0, help="seed of the bootstrap resampling"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Pool per-item results of several rarified sets: the same figures as evaluate, with
    test texts resampled as clusters, stratified by groups of sets sharing texts."""
    run_checked(check_options, bootstrap_resamples=(bootstrap_resamples, ">= 1"))
    run_checked(check_output_dir, output, POOL_OUTPUTS, command="pool", force=force)
    from .downstream.pooling import pool_files, pooled_markdown

    result = run_checked(pool_files, metrics_dirs, output, n_resamples=bootstrap_resamples, seed=seed)
    typer.echo("\n".join(pooled_markdown(result, per_set=False)))


@app.command("similarity")
def similarity_cmd(
    pairs: Path = typer.Argument(..., help="TSV of word, rare word, human score (a header line is skipped)"),
    contexts: Path = typer.Argument(..., help="a directory of <rare word>.txt files (one context per line) or contexts.sqlite"),
    bertram: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    max_contexts: int = typer.Option(16, help="contexts per rare word"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Spearman's rho between human scores and cosines in the encoder's input-embedding space."""
    run_checked(check_options, max_contexts=(max_contexts, ">= 1"))
    if output is not None:
        run_checked(check_output_file, output, command="similarity", force=force)
    run_checked(check_gpu, gpu_id)
    from .intrinsic.similarity_eval import evaluate_similarity_files

    setup_logging()
    metrics = run_checked(evaluate_similarity_files, pairs, contexts, bertram, output=output,
                           max_contexts=max_contexts, gpu_id=gpu_id)
    echo_json(metrics["results"])


@app.command("intrinsic")
def intrinsic_cmd(
    model: Path = typer.Argument(..., metavar="MODEL", help="trained BERTRAM model directory"),
    crw: Optional[Path] = typer.Option(None, help="CRW directory: pairs.tsv (word, rare word, score; no header) "
                                                  "and contexts/<rare word>.txt (one sentence per line)"),
    card: Optional[Path] = typer.Option(None, help="Card-660 pairs TSV (word, word, score; no header), or its "
                                                   "directory; only pairs of two single alphabetic words are kept"),
    chimera: Optional[Path] = typer.Option(None, help="Chimeras directory with dataset.l{2,4,6}.fixed.{train,test}.txt "
                                                      "(whichever exist)"),
    store: Optional[Path] = typer.Option(None, help="contexts.sqlite (or a directory of <word>.txt files): "
                                                    "contexts for Card-660's second words; without it Card-660 is "
                                                    "scored form only"),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    bootstrap: int = typer.Option(2000, help="paired bootstrap resamples for the 95% CI of each system's "
                                             "difference to the baseline"),
    seed: int = typer.Option(0, help="seed of the bootstrap's random generator"),
    skip_missing: bool = typer.Option(False, "--skip-missing",
                                      help="skip sets whose path does not exist (and say so) instead of failing"),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    dictionary: Optional[Path] = typer.Option(None, help="a definition store from `dictionary`: adds bertram_dict "
                                              "and bertram_both for CRW and Card-660, and their coverage"),
    fold: Optional[str] = typer.Option(None, help="score one fold of the rare words only, I/K (e.g. 0/2; split by "
                                       "rare word with a fixed seed; Chimeras by item)"),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Spearman on real rare words (CRW, Card-660, Chimeras): subword mean vs BERTRAM, paired bootstrap CIs."""
    run_checked(check_options, bootstrap=(bootstrap, ">= 1"))
    if fold is not None:
        run_checked(parse_fold, fold)
    if output is not None:
        run_checked(check_output_file, output, command="intrinsic", force=force)
    run_checked(check_gpu, gpu_id)
    from .intrinsic.intrinsic import evaluate_intrinsic
    from .intrinsic.intrinsic import format_table

    setup_logging()
    metrics = run_checked(evaluate_intrinsic, model, crw=crw, card=card, chimera=chimera, store=store,
                           output=output, n_resamples=bootstrap, seed=seed, gpu_id=gpu_id,
                           skip_missing=skip_missing, dictionary=dictionary, fold=fold)
    typer.echo(format_table(metrics), nl=False)


@app.command("synonym-recovery")
def synonym_recovery_cmd(
    model: Path = typer.Argument(..., metavar="MODEL", help="trained BERTRAM model directory"),
    rarified: Optional[List[Path]] = typer.Option(None, metavar="DIR", help="a rarify output (test.jsonl; its further seeds' sets "
                                                  "too); repeat the option for more sets"),
    wordnet: bool = typer.Option(False, "--wordnet", help="also WordNet synonym pairs: a rare lemma and a frequent "
                                 "one-wordpiece lemma of one synset"),
    store: Optional[Path] = typer.Option(None, help="contexts.sqlite from `prepare`: adds the systems with store "
                                         "contexts"),
    output: Optional[Path] = typer.Option(None, help="write the metrics JSON here"),
    fold: Optional[str] = typer.Option(None, help="score one fold of the rare words only, I/K (e.g. 0/2; split by "
                                       "rare word with a fixed seed)"),
    bootstrap: int = typer.Option(2000, help="paired bootstrap resamples (of original words) for the 95% CIs"),
    seed: int = typer.Option(0, help="seed of the pair sample and of the bootstrap"),
    max_pairs: int = typer.Option(2000, help="at most N pairs per source (rarified, WordNet): a seeded sample"),
    max_zipf: float = typer.Option(3.0, help=MAX_ZIPF_HELP),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    wordnet_dir: Optional[Path] = typer.Option(None, help="directory with the WordNet 3.0 dict files"),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Cosine, rank and hits@10 of the replaced word's embedding for each system's vector of a rare
    synonym: subword mean vs BERTRAM (form, text, store contexts), paired bootstrap CIs."""
    run_checked(check_options, bootstrap=(bootstrap, ">= 1"), max_pairs=(max_pairs, ">= 1"))
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    if fold is not None:
        run_checked(parse_fold, fold)
    if output is not None:
        run_checked(check_output_file, output, command="synonym-recovery", force=force)
    for directory in rarified or []:
        run_checked(check_made_by, directory, "--rarified", "rarify", RARIFIED_ITEMS)
    run_checked(check_gpu, gpu_id)
    from .synonyms.recovery import format_markdown
    from .synonyms.systems import evaluate_synonym_recovery

    setup_logging()
    metrics = run_checked(evaluate_synonym_recovery, model, rarified=rarified or [], wordnet=wordnet, store=store,
                           output=output, fold=fold, n_resamples=bootstrap, seed=seed, max_pairs=max_pairs,
                           max_zipf=max_zipf, gpu_id=gpu_id, wordnet_dir=wordnet_dir)
    typer.echo("\n".join(format_markdown(metrics)))


@app.command("learning-curve")
def learning_curve_cmd(
    points: List[Path] = typer.Argument(..., metavar="POINT...", help="point directories (train/metrics.json and "
                                        "the measures' JSON, as scripts/learning_curve.sh writes them); the first "
                                        "is the reference"),
    output: Path = typer.Option(..., help="directory for learning_curve.json, .md and the plots"),
    bootstrap: int = typer.Option(2000, help="paired bootstrap resamples for the differences to the reference"),
    seed: int = typer.Option(0, help="seed of the bootstrap"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """The measures of several training runs side by side: gains with CIs, differences to the first
    point, and plots against training words and contexts."""
    run_checked(check_options, bootstrap=(bootstrap, ">= 1"))
    run_checked(check_output_dir, output, CURVE_OUTPUTS, command="learning-curve", force=force,
                marked=CURVE_OUTPUTS[:2])
    from .learning_curve import format_markdown, write_learning_curve

    curve = run_checked(write_learning_curve, points, output, bootstrap, seed)
    typer.echo("\n".join(format_markdown(curve)))


@app.command("report")
def report_cmd(
    output: Path = typer.Argument(..., help="the markdown file"),
    datasets: str = typer.Option("bbc", help="comma-separated dataset names; those not evaluated are listed as not run"),
    corpus_dir: Path = typer.Option(Path("corpus"), help="holds NAME/splits and NAME/rarified"),
    training_dir: Path = typer.Option(Path("training"), help="holds NAME/baseline"),
    metrics_dir: Path = typer.Option(Path("metrics"), help="holds NAME/metrics.json"),
    bertram_dir: Optional[Path] = typer.Option(None, help="BERTRAM training output (metrics.json)"),
    prepare_dir: Optional[Path] = typer.Option(None, help="prepare output (prepare.json)"),
    pooled: Optional[Path] = typer.Option(None, help="pooled.json of the pool step: its table comes first"),
    originals: Optional[Path] = typer.Option(None, help="pooled.json of the originals step (do no harm): its table next"),
    synonyms: Optional[Path] = typer.Option(None, help="the synonym-recovery JSON: its table after the pooled one"),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Write the markdown report."""
    run_checked(check_output_file, output, command="report", force=force)
    from .report.report import write_report

    names = [d.strip() for d in datasets.split(",") if d.strip()]
    path = run_checked(write_report, output, names, corpus_dir=corpus_dir, training_dir=training_dir,
                        metrics_dir=metrics_dir, bertram_dir=bertram_dir, prepare_dir=prepare_dir,
                        pooled=pooled, originals=originals, synonyms=synonyms)
    typer.echo(Path(path).read_text(encoding="utf8"))


@app.command("assemble")
def assemble_cmd(
    model_dir: Path = typer.Argument(..., help="the trained baseline"),
    bertram: Path = typer.Argument(..., help="trained BERTRAM model directory"),
    output_dir: Path = typer.Argument(..., help="OUTPUT/pipeline and OUTPUT/code.py for `spacy package`"),
    injection: str = typer.Option("slash", help="slash or replace"),
    max_zipf: float = typer.Option(3.0, help=MAX_ZIPF_HELP),
    contexts_per_word: int = typer.Option(8, help="contexts the bertram component gathers per rare word"),
    name: str = typer.Option("textcat_bertram", help="the pipeline's meta name"),
    version: str = typer.Option("0.1.0", help="the pipeline's meta version"),
    vector_table: Optional[Path] = typer.Option(None, help="a table from `vectors`, shipped inside the pipeline"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Save the baseline textcat with the bertram component as one pipeline."""
    run_checked(check_options, contexts_per_word=(contexts_per_word, ">= 1"))
    run_checked(check_max_zipf, max_zipf, "--max-zipf")
    run_checked(check_output_dir, output_dir, ASSEMBLE_OUTPUTS, command="assemble", force=force, replaces=True)
    from .downstream.pipelines import assemble_pipeline

    path = run_checked(assemble_pipeline, model_dir, bertram, output_dir, injection=injection,
                        max_zipf=max_zipf, contexts_per_word=contexts_per_word, name=name, version=version,
                        vector_table=vector_table, force=force)
    typer.echo(str(path))
