"""What `bertram` costs a trained NER pipeline per tweet: stock against cold and warm cache, side by side.

The two pipelines of one NER fold, as `ner-train` wrote them (`--training DIR`:
DIR/fold-0/stock/model-best and DIR/fold-0/bertram/model-best), run on that
fold's test tweets (`--folds DIR`: DIR/fold-0/test.spacy) in paired rounds, as
benchmarks/pipeline.py runs its pipelines (same rounds, same alternating order,
every ratio the median of the per-round ratios):

- stock: tokenizer -> transformer -> ner;
- cold:  tokenizer -> bertram -> transformer -> ner, the vector cache and the
         rule's memo emptied before each round (every rare word inferred);
- warm:  the same pipeline on the same tweets again.

It reports words/s, cold and warm against stock, ms per inferred rare word, the
share of tokens that are rare and the share of tweets with at least one. Speed
does not depend on the weights, so without --training the two pipelines are
built untrained from configs/ner_minilm.cfg and configs/ner_minilm_bertram.cfg
(an untrained BERTRAM of the trained shape, doc contexts) on the WNUT-16 tweets
of assets/ner (`python -m spacy project run ner-data`).

    python benchmarks/ner.py --training training/ner-full/tuned/seed-0 --folds corpus/ner/folds5 \\
        --store corpus/bertram/contexts.sqlite --output metrics/ner-full/cost.json
    python benchmarks/ner.py --quick        # 100 tweets, untrained pipelines, under a minute
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, List, Optional, Tuple

import spacy
import torch
from spacy.tokens import DocBin
from spacy.training import Example

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from bertram_experiments.assets import default_assets_dir
from bertram_experiments.ner.data import read_iob, tagged_doc, wnut16_path
from bertram_experiments.rarification.baseline import baseline_config
from spacy_bertram.project_support import use_device, write_json_atomic

from pipeline import measure_pipelines, untrained_model  # benchmarks/pipeline.py (scripts run from this folder)

ROOT = Path(__file__).resolve().parents[1]


def trained_pipelines(training: Path, store: Optional[str]) -> Tuple[spacy.Language, spacy.Language]:
    """Fold 0's stock and trained-with-bertram pipelines (the store given where the config wants one)."""
    overrides = {"components.bertram.context_store": store} if store else {}
    stock = spacy.load(training / "fold-0" / "stock" / "model-best")
    with_bertram = spacy.load(training / "fold-0" / "bertram" / "model-best", config=overrides)
    return stock, with_bertram


def untrained_pipelines(
    texts: List[List[str]], tags: List[Any], tmp: Path, base_model: str
) -> Tuple[spacy.Language, spacy.Language]:
    """The two NER configs, initialized on the tweets (labels) with untrained weights."""
    bertram = untrained_model([" ".join(words) for words in texts], tmp / "bertram", base_model)
    pipelines = []
    for name in ("ner_minilm.cfg", "ner_minilm_bertram.cfg"):
        config = baseline_config(ROOT / "configs" / name, base_model)
        if "bertram" in config["components"]:
            config["paths"]["bertram"] = bertram
            config["components"]["bertram"]["contexts"] = "doc"
            config["components"]["bertram"]["rare_words"] = {
                "@misc": "spacy-bertram.RareWords.v1",
                "frequencies": "wordfreq",
            }
        nlp = spacy.util.load_model_from_config(config.interpolate(), auto_fill=True)
        examples = [Example(nlp.make_doc(" ".join(t.words)), tagged_doc(nlp.vocab, t)) for t in tags[:200]]
        nlp.initialize(lambda: examples)
        pipelines.append(nlp)
    return pipelines[0], pipelines[1]


def test_tweets(folds: Optional[Path], assets: Path, n: int) -> Tuple[List[List[str]], List[Any]]:
    """Fold 0's test tweets (words), or the first WNUT-16 tweets; and the tagged tweets for labels."""
    tagged = read_iob(wnut16_path(assets)) if folds is None else []
    if folds is None:
        words = [t.words for t in tagged]
    else:
        vocab = spacy.blank("en").vocab
        words = [[t.text for t in doc] for doc in DocBin().from_disk(folds / "fold-0" / "test.spacy").get_docs(vocab)]
    if len(words) < n:
        sys.exit(f"Only {len(words)} tweets, {n} wanted: pass --tweets {len(words)} or fewer")
    return [list(w) for w in words[:n]], tagged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--training", type=Path, default=None, help="a ner-train output (fold-0 is used)")
    parser.add_argument("--folds", type=Path, default=None, help="the ner-folds output it was trained on")
    parser.add_argument("--store", default=None, help="the context store the bertram pipeline's config names")
    parser.add_argument("--tweets", type=int, default=400, help="test tweets")
    parser.add_argument("--round", type=int, default=50, help="tweets per paired round")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--base-model", default="default")
    parser.add_argument(
        "--assets", type=Path, default=None, help="assets dir (default: $SPACY_BERTRAM_ASSETS or ./assets)"
    )
    parser.add_argument("--output", type=Path, default=None, help="also write the figures as JSON here")
    parser.add_argument("--gpu-id", type=int, default=-1)
    parser.add_argument("--quick", action="store_true", help="100 tweets")
    args = parser.parse_args()
    args.compare_paths = False
    use_device(args.gpu_id)
    if args.quick:
        args.tweets, args.round = 100, 25
    if (args.training is None) != (args.folds is None):
        sys.exit("--training and --folds go together: the folds the pipelines were trained on give the test tweets")
    assets = args.assets or default_assets_dir()
    if not assets.is_absolute() and not assets.exists():
        assets = ROOT / assets
    try:
        words, tagged = test_tweets(args.folds, assets, args.tweets)
    except ValueError as err:
        sys.exit(str(err))
    texts = [" ".join(w) for w in words]
    with tempfile.TemporaryDirectory() as tmp:
        if args.training is not None:
            stock, with_bertram = trained_pipelines(args.training, args.store)
        else:
            stock, with_bertram = untrained_pipelines(words, tagged, Path(tmp), args.base_model)
        print(
            f"torch threads {torch.get_num_threads()}; pipelines: "
            f"{args.training or 'untrained, from configs/ner_minilm*.cfg'}; {len(texts)} tweets"
        )
        result = measure_pipelines(stock, with_bertram, texts, args)
    wps = result["words_per_s"]
    print(
        f"stock {wps['stock']} words/s, bertram cold {wps['cold']} ({result['cold_over_stock']}x stock's time), "
        f"warm {wps['warm']} ({result['warm_over_stock']}x); {result['ms_per_rare_word']} ms per inferred rare "
        f"word; {100 * result['rare_share']:.1f}% of the tokens are rare, "
        f"{100 * result['texts_with_rare_share']:.1f}% of the tweets have one"
    )
    headline = {
        "benchmark": "ner",
        "device": "cpu" if args.gpu_id < 0 else f"cuda:{args.gpu_id}",
        "trained": args.training is not None,
        "texts": result["texts"],
        "words": result["words"],
        "words_per_s": wps,
        "cold_over_stock": result["cold_over_stock"],
        "warm_over_stock": result["warm_over_stock"],
        "ms_per_rare_word": result["ms_per_rare_word"],
        "rare_share": result["rare_share"],
        "texts_with_rare_share": result["texts_with_rare_share"],
    }
    if args.output:
        write_json_atomic(args.output, headline, overwrite=True)
    print(json.dumps(headline))


if __name__ == "__main__":
    main()
