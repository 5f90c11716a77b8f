"""What the rare-word rule costs per new word form: the frequent-form table against a wordfreq and a tokenizer
call per form, side by side, with the same decisions.

The `bertram` component's rule (Zipf below max_zipf, 2+ wordpieces of the encoder) decides each distinct word
form once per process (a memo). Text never seen is mostly new forms, so the first decision is what new text
pays. Two ways, in one process, on the same docs (tokenised once, outside the timing):

- per form:  wordfreq's `zipf_frequency` and the encoder's tokenizer for every new form (the rule without
             its table);
- table:     a form wordfreq lists at or above max_zipf (28,338 English forms at 3.0) is answered by a dict
             lookup; only the others are asked of wordfreq and the tokenizer.

Each round runs both ways on its own texts with the memo emptied, in an order that alternates between
rounds; the ratio is the median of the per-round ratios. Every form's decision and every doc's rare tokens
must be the same both ways (the script exits with 1 otherwise). Texts as in benchmarks/pipeline.py: "short"
(Rotten Tomatoes snippets), "long" (BBC articles) and "tweets" (WNUT-16), a kind whose data is missing
skipped with a note.

    python benchmarks/rule.py            # 2,000 snippets, 200 articles, 2,000 tweets
    python benchmarks/rule.py --quick    # 400 / 40 / 400 (under a minute)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

import spacy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's experiments (bertram_experiments/)
from bertram_experiments.assets import default_assets_dir

from pipeline import texts_by_kind, untrained_model  # benchmarks/pipeline.py

ROOT = Path(__file__).resolve().parents[1]


def rule_pipeline(model: str, base_model: str) -> Any:
    """The component with the rule at its defaults (wordfreq's frequencies) on an untrained BERTRAM."""
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(
        "bertram",
        config={
            "model": {"model_path": model, "base_model": base_model},
            "rare_words": {"@misc": "spacy-bertram.RareWords.v1", "frequencies": "wordfreq"},
        },
    )
    nlp.initialize()  # the model loaded, the rule prepared
    return nlp, pipe


def run_rule(finder: Any, docs: List[Any], table: Any) -> float:
    """Seconds to find the rare tokens of `docs` from an empty memo, with or without the table."""
    finder.frequent = table
    finder.forget()
    started = time.perf_counter()
    for doc in docs:
        finder.find(doc)
    return time.perf_counter() - started


def measure(kind: str, texts: List[str], nlp: Any, pipe: Any, rounds: int) -> Dict[str, Any]:
    finder = pipe.finder
    table = finder.frequent
    docs = [nlp.make_doc(text) for text in texts]
    forms = sorted({token.text for doc in docs for token in doc if finder.rule.is_candidate(token)})
    # The same decisions both ways: every form, and every doc's rare tokens, each from an empty memo.
    decided = {}
    for way in (None, table):
        finder.frequent = way
        finder.forget()
        by_form = {form: finder.is_rare_word(form) for form in forms}
        finder.forget()
        decided[way is table] = (by_form, [finder.find(doc) for doc in docs])
    same = decided[False] == decided[True]
    size = max(1, len(docs) // rounds)
    per_form = {"per form": 0.0, "table": 0.0}
    ratios = []
    for k, start in enumerate(range(0, len(docs), size)):
        chunk = docs[start : start + size]
        order = [None, table] if k % 2 == 0 else [table, None]
        seconds = {("table" if way is table else "per form"): run_rule(finder, chunk, way) for way in order}
        for way, value in seconds.items():
            per_form[way] += value
        ratios.append(seconds["per form"] / seconds["table"])
    finder.frequent = table
    n_round_forms = sum(
        len({t.text for doc in docs[s : s + size] for t in doc if finder.rule.is_candidate(t)})
        for s in range(0, len(docs), size)
    )
    in_table = sum(table.zipf(form) is not None for form in forms)
    return {
        "texts": len(docs),
        "tokens": sum(len(doc) for doc in docs),
        "forms": len(forms),
        "table_share": round(in_table / max(1, len(forms)), 3),
        "ms_per_new_form_before": round(1000 * per_form["per form"] / n_round_forms, 4),
        "ms_per_new_form_after": round(1000 * per_form["table"] / n_round_forms, 4),
        "speedup": round(statistics.median(ratios), 2),
        "rounds": len(ratios),
        "same_decisions": same,
        "rare_forms": sum(decided[False][0].values()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 snippets, 40 articles and 400 tweets")
    parser.add_argument("--texts", type=int, default=2000, help="short texts (Rotten Tomatoes snippets)")
    parser.add_argument("--long-texts", type=int, default=200, help="long texts (BBC articles)")
    parser.add_argument("--tweets", type=int, default=2000, help="tweets (WNUT-16)")
    parser.add_argument("--rounds", type=int, default=10, help="paired rounds per kind")
    parser.add_argument(
        "--assets", type=Path, default=None, help="assets dir (default: $SPACY_BERTRAM_ASSETS or ./assets)"
    )
    parser.add_argument("--bertram", default=None, help="trained BERTRAM directory (default: untrained, same shape)")
    parser.add_argument("--base-model", default="default")
    args = parser.parse_args()
    if args.quick:
        args.texts, args.long_texts, args.tweets = 400, 40, 400
    assets = args.assets or default_assets_dir()
    if not assets.is_absolute() and not assets.exists():
        assets = ROOT / assets
    texts_of, skipped = texts_by_kind(assets, {"short": args.texts, "long": args.long_texts, "tweets": args.tweets})
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        all_texts = [text for texts in texts_of.values() for text in texts]
        model = args.bertram or untrained_model(all_texts, Path(tmp) / "bertram", args.base_model)
        nlp, pipe = rule_pipeline(model, args.base_model)
        table = pipe.finder.frequent
        print(f"frequent-form table: {len(table):,} forms at Zipf >= {table.min_zipf}")
        for kind, texts in texts_of.items():
            results[kind] = r = measure(kind, texts, nlp, pipe, args.rounds)
            print(
                f"{kind}: {r['texts']} texts, {r['forms']:,} distinct candidate forms ({100 * r['table_share']:.1f}% "
                f"in the table, {r['rare_forms']} rare): {r['ms_per_new_form_before']:.4f} ms per new form per "
                f"form, {r['ms_per_new_form_after']:.4f} ms with the table ({r['speedup']}x, median of "
                f"{r['rounds']} paired rounds); same decisions: {r['same_decisions']}"
            )
    print(
        json.dumps(
            {
                "benchmark": "rule",
                "table_forms": len(table),
                **{
                    key: {kind: r[key] for kind, r in results.items()}
                    for key in (
                        "ms_per_new_form_before",
                        "ms_per_new_form_after",
                        "speedup",
                        "table_share",
                        "same_decisions",
                    )
                },
                "skipped": sorted(skipped),
            }
        )
    )
    return 0 if all(r["same_decisions"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
