"""Command line: `python -m spacy_bertram.training.cli {targets,train} ...`.

`targets` only selects training words and computes their targets (with OTA);
`train` does that too when needed, then runs the three stages, validates each
on held-out words and writes the model, metrics.json and an ablation table.
Re-running `train` with the same arguments resumes a killed run.
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import List, Optional

from .ota import OTASettings
from .stages import TrainSettings
from .targets import DEFAULT_HELD_OUT, DEFAULT_MIN_COUNT


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("contexts", help="context store: contexts.sqlite or the `prepare` output directory")
    parser.add_argument("output", help="output directory")
    parser.add_argument("--base-model", default="default", help="encoder name or path ('default': MiniLM)")
    parser.add_argument("--min-count", type=int, default=DEFAULT_MIN_COUNT, help="training words' minimum frequency")
    parser.add_argument("--max-words", type=int, default=None, help="at most this many (most frequent) training words")
    parser.add_argument("--held-out", type=float, default=DEFAULT_HELD_OUT, help="fraction of words held out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gpu-id", type=int, default=-1, help="CUDA device; -1 for the CPU")
    parser.add_argument("--ota-steps", type=int, default=OTASettings.steps)
    parser.add_argument("--ota-batch", type=int, default=OTASettings.batch_words)
    parser.add_argument("--ota-neighbours", type=int, default=OTASettings.neighbours)
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spacy-bertram-train", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    _common(commands.add_parser("targets", help="training words and their targets (embedding rows / OTA)"))
    train = commands.add_parser("train", help="the three training stages, validation and ablation")
    _common(train)
    defaults = TrainSettings()
    train.add_argument("--mode", default=defaults.mode, choices=["form", "context", "shallow", "replace", "add", "inplace"])
    train.add_argument("--read-layer", type=int, default=defaults.read_layer, help="inplace: encoder layer read (-1 last, -2 the one before)")
    train.add_argument("--subword-share", type=float, default=defaults.subword_share, help="weight of the subword mean in the output mix (0: BERTRAM's own vector)")
    train.add_argument("--inplace-mask-fraction", type=float, default=defaults.inplace_mask_fraction, help="inplace: share of training rows that read the mask instead of the word (context-only learning)")
    train.add_argument("--targets", default=None, help="a target directory made by `targets` (else built here)")
    train.add_argument("--no-subword-mean", action="store_true", help="paper form: n-grams only")
    train.add_argument("--epochs", type=int, nargs=3, default=list(defaults.epochs), metavar=("S1", "S2", "S3"))
    train.add_argument("--lr", type=float, nargs=3, default=list(defaults.lr), metavar=("S1", "S2", "S3"))
    train.add_argument("--batch-words", type=int, nargs=3, default=list(defaults.batch_words), metavar=("S1", "S2", "S3"))
    train.add_argument("--warmup", type=float, default=defaults.warmup)
    train.add_argument("--min-contexts", type=int, default=defaults.min_contexts, help="contexts per word per step, at least")
    train.add_argument("--max-contexts", type=int, default=defaults.max_contexts, help="contexts per word per step, at most")
    train.add_argument("--pool-contexts", type=int, default=defaults.pool_contexts, help="contexts kept per word")
    train.add_argument("--max-seq-length", type=int, default=defaults.max_seq_length)
    train.add_argument("--ngram-min-count", type=int, default=defaults.ngram_min_count)
    train.add_argument("--no-reuse", action="store_true", help="re-encode contexts every epoch (slow; for comparison)")
    train.add_argument("--cache-mb", type=float, default=defaults.cache_memory_mb, help="encoder states kept in memory")
    train.add_argument("--no-ablation", action="store_true", help="skip the other form variant")
    train.add_argument("--keep-cache", action="store_true", help="keep the encoder-state cache files")
    return parser


def settings_from(args: argparse.Namespace) -> TrainSettings:
    return TrainSettings(
        mode=args.mode, use_subword_mean=not args.no_subword_mean, read_layer=args.read_layer,
        subword_share=args.subword_share, inplace_mask_fraction=args.inplace_mask_fraction, epochs=tuple(args.epochs),
        lr=tuple(args.lr), batch_words=tuple(args.batch_words), warmup=args.warmup,
        min_contexts=args.min_contexts, max_contexts=args.max_contexts, pool_contexts=args.pool_contexts,
        max_seq_length=args.max_seq_length, ngram_min_count=args.ngram_min_count, seed=args.seed,
        reuse_states=not args.no_reuse, cache_memory_mb=args.cache_mb,
    )


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    ota = OTASettings(steps=args.ota_steps, batch_words=args.ota_batch, neighbours=args.ota_neighbours, seed=args.seed)
    try:
        if args.command == "targets":
            from ..encoder import load_encoder
            from ..device import select_device
            from .sources import open_context_source
            from .targets import build_targets

            device = select_device(args.gpu_id)
            source = open_context_source(args.contexts)
            encoder, tokenizer = load_encoder(args.base_model, device=device)
            targets = build_targets(source, encoder, tokenizer, args.base_model, args.min_count, args.max_words,
                                    args.held_out, args.seed, ota, device, not args.no_progress)
            targets.save(Path(args.output))
            print(json.dumps({"words": len(targets), "held_out": sum(targets.held_out), **targets.info}))
            return 0
        from .run import train

        metrics = train(
            args.contexts, args.output, base_model=args.base_model, settings=settings_from(args),
            min_count=args.min_count, max_words=args.max_words, held_out_fraction=args.held_out,
            targets=args.targets, ota=ota, ablation=not args.no_ablation, gpu_id=args.gpu_id,
            keep_cache=args.keep_cache, progress=not args.no_progress,
        )
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(json.dumps({"baseline": metrics["baseline"], "final": metrics["final"], "model": metrics["model"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
