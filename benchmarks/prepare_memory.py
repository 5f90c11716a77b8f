"""Peak memory of `prepare` does not grow with corpus length.

Runs `prepare` in a fresh child process on a corpus (1x) and on the same files
repeated ten times (10x, as symlinks: same vocabulary, ten times the text),
and reads each child's peak RSS from os.wait4. Also measures a child that
only imports the module, since importing the package (torch, spaCy) is most of
the footprint. Ends with one JSON line of headline figures.

    python benchmarks/prepare_memory.py            # embedded corpus (assets/corpus), ~5 min
    python benchmarks/prepare_memory.py --quick    # first ~150k words of it, < 1 min
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys
from spacy_bertram import prepare
if sys.argv[1] != "--import-only":
    r = prepare(sys.argv[1], sys.argv[2], min_count=int(sys.argv[3]), progress=False)
    print(json.dumps({"total_words": r.total_words, "vocab_size": r.vocab_size}))
"""


def run_child(*args: str) -> dict:
    """Run CHILD with `args`; return its output, peak RSS (MB) and wall seconds."""
    start = time.time()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, *args], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"prepare child failed with exit code {proc.returncode}")
    result = json.loads(out) if out.strip() else {}
    result.update(peak_rss_mb=round(usage.ru_maxrss / 1024, 1), seconds=round(time.time() - start, 1))
    return result


def quick_corpus(source: Path, target: Path, max_words: int) -> None:
    """The first `max_words` whitespace words of each file's share of `source`."""
    files = sorted(p for p in source.rglob("*.txt") if p.is_file())
    budget = max_words // max(1, len(files))
    target.mkdir(parents=True)
    for path in files:
        words = 0
        with open(path, encoding="utf8") as src, open(target / path.name, "w", encoding="utf8") as dst:
            for line in src:
                dst.write(line)
                words += len(line.split())
                if words >= budget:
                    break


def repeated(source: Path, target: Path, times: int) -> None:
    """`times` copies of every file of `source` as symlinks (no extra disk)."""
    for k in range(times):
        copy = target / f"copy{k:02d}"
        copy.mkdir(parents=True)
        for path in sorted(source.rglob("*")):
            if path.is_file():
                (copy / path.name).symlink_to(path.resolve())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="assets/corpus", help="corpus directory (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="use ~150k words of the corpus (< 1 minute)")
    parser.add_argument("--min-count", type=int, default=None, help="default: 100, or 20 with --quick")
    args = parser.parse_args()
    source = Path(args.corpus)
    if not source.is_dir():
        raise SystemExit(f"{source} is missing: build it with `python scripts/build_corpus.py`")
    min_count = str(args.min_count or (20 if args.quick else 100))
    with tempfile.TemporaryDirectory(prefix="prepare-memory-") as tmp:
        base = Path(tmp)
        if args.quick:
            quick_corpus(source, base / "one", 150_000)
            source = base / "one"
        repeated(source, base / "ten", 10)
        baseline = run_child("--import-only")
        print(f"import only: peak RSS {baseline['peak_rss_mb']} MB")
        runs = {}
        for name, corpus in (("1x", source), ("10x", base / "ten")):
            runs[name] = run_child(str(corpus), str(base / f"out{name}"), min_count)
            store_mb = (base / f"out{name}" / "contexts.sqlite").stat().st_size / 1e6
            print(
                f"{name}: {runs[name]['total_words']:,} words, vocabulary {runs[name]['vocab_size']:,}, "
                f"peak RSS {runs[name]['peak_rss_mb']} MB "
                f"({runs[name]['peak_rss_mb'] - baseline['peak_rss_mb']:.1f} MB above import), "
                f"{runs[name]['seconds']} s, store {store_mb:.1f} MB"
            )
    one, ten = runs["1x"], runs["10x"]
    headline = {
        "quick": args.quick,
        "words_1x": one["total_words"],
        "words_10x": ten["total_words"],
        "peak_rss_mb_import": baseline["peak_rss_mb"],
        "peak_rss_mb_1x": one["peak_rss_mb"],
        "peak_rss_mb_10x": ten["peak_rss_mb"],
        "ratio": round(ten["peak_rss_mb"] / one["peak_rss_mb"], 3),
        "ratio_above_import": round(
            (ten["peak_rss_mb"] - baseline["peak_rss_mb"]) / max(1e-9, one["peak_rss_mb"] - baseline["peak_rss_mb"]), 3
        ),
        "seconds_1x": one["seconds"],
        "seconds_10x": ten["seconds"],
    }
    print(json.dumps(headline))


if __name__ == "__main__":
    main()
