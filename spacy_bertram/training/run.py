"""Context store -> targets -> three stages -> model, metrics and ablation table.

Bad input is found before anything is written: the store must open, the base
model must load, and the targets must have enough words of the right width.
Everything then goes under one output directory; running the same command
again resumes a killed run (finished stages are loaded, the current stage
continues from its last epoch checkpoint).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..model.encoder import load_encoder
from ..errors import Errors
from ..device import make_deterministic, select_device
from ..dictionary.store import check_definition_store
from ..fileio import clean_stale_temps, mark_json, remove_written, write_json_atomic
from ..model.files import MODEL_DIR_ENTRIES
from ..model.storage import write_model_dir
from .definition_contexts import WithDefinitions
from .ota import OTASettings
from ..context_store import open_context_store
from .sources import TrainingSource
from .stages import StageResult, TrainingRun, combined_init, plan_stages
from .checkpoint import CHECKPOINT_ENTRIES
from .settings import (
    CACHE_DIR,
    CACHE_FILES,
    CHECKPOINTS_DIR,
    METRICS_FILE,
    MODEL_DIR,
    PROGRESS_FILE,
    TARGET_FILES,
    TARGETS_DIR,
    RunOptions,
    TrainingData,
    TrainSettings,
    check_encoder_settings,
    changed_settings,
    check_train_output,
    model_dirs,
)
from .targets import TargetSet, build_targets
from .validation import format_table
from ..types import PathLike


def _variant_label(mode: str, subword_mean: bool) -> str:
    form = "n-gram form + subword mean" if subword_mean else "n-gram form (paper)"
    return f"{mode.upper()}, {form}"


def ablation_rows(baseline: Dict[str, float], results: Dict[str, StageResult]) -> List[tuple]:
    """(name, cosine, mrr) rows: subword mean, each form variant, context, each final variant."""
    rows = [("subword mean (rare-like pieces)", baseline["cosine"], baseline["mrr"])]
    ordered = sorted(results.items(), key=lambda kv: (kv[1].spec.index, kv[1].spec.use_subword_mean))
    for _, result in ordered:
        spec, scores = result.spec, result.metrics["validation"]
        if spec.traits.one_stage:
            name = f"INPLACE (subword share {result.network.config.subword_share:g})"
        elif spec.index == 1:
            name = "context only"
        elif spec.index == 2:
            name = "form only: " + ("n-gram + subword mean" if spec.use_subword_mean else "n-gram (paper)")
        else:
            name = _variant_label(spec.mode, spec.use_subword_mean)
        rows.append((name, scores["cosine"], scores["mrr"]))
    return rows


def own_vector_row(run: TrainingRun, final: StageResult) -> tuple:
    """Held-out scores of the final network without the output mix (subword_share 0)."""
    config = final.network.config
    final.network.config = replace(config, subword_share=0.0)
    try:
        scores = run.validator.evaluate(final.network)
    finally:
        final.network.config = config
    return (f"{final.spec.mode.upper()}, BERTRAM's own vector (share 0)", scores["cosine"], scores["mrr"])


def _clear_run(output: Path, log: Callable[[str], None]) -> None:
    """Remove what a finished or killed run wrote so that a run with new settings starts over; files of
    others in its directories stay (and so do those directories)."""
    remove_written(output, (PROGRESS_FILE, METRICS_FILE), keep_directory=True)
    for directory in model_dirs(output):
        remove_written(directory, MODEL_DIR_ENTRIES)
    remove_written(output / TARGETS_DIR, TARGET_FILES)
    remove_written(output / CACHE_DIR, CACHE_FILES)
    checkpoints = output / CHECKPOINTS_DIR
    for directory in sorted(checkpoints.iterdir()) if checkpoints.is_dir() else []:
        remove_written(directory, CHECKPOINT_ENTRIES)
    remove_written(checkpoints, ())
    log(f"{output}: the previous run had other settings; starting over (--restart)")


def _check_resume(
    output: Path, run_info: Dict[str, Any], restart: bool = False, log: Callable[[str], None] = print
) -> None:
    progress = output / "progress.json"
    if progress.is_file():
        try:
            recorded = json.loads(progress.read_text(encoding="utf8"))
            if not isinstance(recorded, dict) or not isinstance(recorded.get("stages", {}), dict):
                raise ValueError(Errors.E204.format(fields="the finished stages"))
        except (OSError, ValueError) as err:
            raise ValueError(Errors.E275.format(path=str(progress), err=err, output=str(output))) from err
        recorded_run = recorded.get("run")
        if recorded_run not in (None, run_info):
            if restart:
                _clear_run(output, log)
                return
            recorded_device = recorded_run.get("device") if isinstance(recorded_run, dict) else None
            if recorded_device is not None and recorded_device != run_info["device"]:
                raise ValueError(
                    Errors.E276.format(output=str(output), recorded=recorded_device, device=run_info["device"])
                )
            raise ValueError(Errors.E277.format(output=str(output), changed=changed_settings(recorded_run, run_info)))


def pooled_contexts(
    source: TrainingSource, words: Sequence[str], pool: int, definitions: Optional[PathLike], per_word: int
) -> List[List[str]]:
    """Each training word's context pool: corpus contexts, after its definitions if a store is given."""
    if definitions is None:
        return [source.contexts(word, pool) for word in words]
    with_definitions = WithDefinitions(source, definitions, per_word)
    try:
        return [with_definitions.contexts(word, pool) for word in words]
    finally:
        with_definitions.close()


def train(
    contexts: Union[PathLike, TrainingSource],
    output_dir: PathLike,
    settings: Optional[TrainSettings] = None,
    data: Optional[TrainingData] = None,
    options: Optional[RunOptions] = None,
) -> Dict[str, Any]:
    """Train BERTRAM end to end from a context store (or source); returns (and writes) the metrics.

    `settings`: the network (its encoder: `settings.network.base_model`) and the stages;
    `data`: the training words, their targets and context pools; `options`: device, ablation,
    cache, restart, progress and logging. Re-running with the same settings resumes; with other
    settings it is an error, unless `options.restart` (what a project step wants when its
    settings change).
    """
    call_started = time.perf_counter()
    settings, data, options = settings or TrainSettings(), data or TrainingData(), options or RunOptions()
    check_train_output(output_dir, options.force)
    log, base_model = options.log, settings.network.base_model
    # TrainingData checked its word limits when it was made; the base model and read_layer are checked
    # from the encoder's files alone, before targets or progress.json are written.
    check_encoder_settings(settings.network)
    if data.definitions is not None:  # a store that is none fails now, not after the targets (E509)
        check_definition_store(data.definitions)
    device = select_device(options.gpu_id)
    make_deterministic(device)  # before the first cuBLAS call
    output = Path(output_dir)
    run_info = {
        "base_model": base_model,
        "settings": settings.to_dict(),
        "min_count": data.min_count,
        "max_words": data.max_words,
        "held_out_fraction": data.held_out_fraction,
        "targets": str(data.targets) if data.targets else None,
        "device": device.type,
    }
    if output.is_dir():
        clean_stale_temps(output)  # a killed run's temp files (checkpoints/.stage1-*.tmp, ...)
    if data.multi_piece_words:  # recorded only when used
        run_info["multi_piece_words"] = {"words": data.multi_piece_words, "min_zipf": data.multi_piece_min_zipf}
    if data.definitions is not None:  # recorded only when used
        run_info["definitions"] = {"store": str(data.definitions), "per_word": data.definitions_per_word}
    _check_resume(output, run_info, options.restart, log)  # before the store and the encoder load
    source = open_context_store(contexts) if isinstance(contexts, (str, Path)) else contexts
    encoder, tokenizer = load_encoder(base_model, device=device)  # the cached copy for the device
    width = int(encoder.get_input_embeddings().weight.shape[1])
    # a killed run's, taken over (a user's file alone in targets/ is no target set)
    own_targets = data.targets is None and any((output / TARGETS_DIR / name).exists() for name in TARGET_FILES)
    if data.targets is not None:
        target_set = TargetSet.load(data.targets, expected_width=width)
    elif own_targets:
        target_set = TargetSet.load(output / TARGETS_DIR, expected_width=width)
    else:
        target_set = build_targets(
            source,
            encoder,
            tokenizer,
            base_model,
            data.min_count,
            data.max_words,
            data.held_out_fraction,
            settings.seed,
            data.ota or OTASettings(seed=settings.seed),
            device,
            options.progress,
            data.multi_piece_words,
            data.multi_piece_min_zipf,
            options.client,
        )
        target_set.save(output / TARGETS_DIR)
    n_held = sum(target_set.held_out)
    log(f"targets: {len(target_set)} words ({target_set.kinds.count('ota')} by OTA), {n_held} held out")
    word_contexts = pooled_contexts(
        source, target_set.words, settings.pool_contexts, data.definitions, data.definitions_per_word
    )
    run = TrainingRun(
        target_set,
        word_contexts,
        encoder,
        tokenizer,
        settings,
        output,
        device,
        options.progress,
        options.on_epoch_end,
        log,
        options.client,
    )
    resumed = (["targets loaded"] if own_targets else []) + run.resumed()
    if resumed:  # once, before the stages: what is loaded rather than computed again
        log(f"resuming the run in {output}: " + "; ".join(resumed))
    run.record["run"] = run_info
    write_json_atomic(output / "progress.json", run.record, overwrite=True)
    results: Dict[str, StageResult] = {}
    seconds: Dict[str, float] = {}
    by_index = {}
    started = time.perf_counter()
    for spec in plan_stages(settings):
        init = combined_init(by_index[1], by_index[2]) if spec.index == 3 else None
        by_index[spec.index] = results[spec.name] = run.stage(spec, init)
    final = by_index[max(by_index)]
    # The corpus counts go with the model: the component's rare-word rule reads them.
    write_model_dir(final.network, output / MODEL_DIR, counts=dict(source.counts(1)))  # checked at the start
    seconds["stages"] = time.perf_counter() - started
    if options.ablation:
        started = time.perf_counter()
        for spec in plan_stages(settings, use_subword_mean=not settings.network.use_subword_mean)[1:]:
            init = combined_init(by_index[1], results["ablation-stage2-form"]) if spec.index == 3 else None
            results["ablation-" + spec.name] = run.stage(spec, init, prefix="ablation-")
        seconds["ablation"] = time.perf_counter() - started
    baseline = run.baseline()
    seconds["total"] = time.perf_counter() - call_started
    rows = ablation_rows(baseline, results)
    if settings.network.subword_share > 0:  # the output mix is inference-only: BERTRAM's own vector costs one pass
        rows.append(own_vector_row(run, final))
    log("held-out words: " + str(baseline["words"]) + "\n" + format_table(rows))
    metrics = {
        "base_model": base_model,
        "mode": settings.network.mode,
        "model": str(output / MODEL_DIR),
        "targets": {"words": len(target_set), "held_out": n_held, **target_set.info},
        "baseline": baseline,
        "final": final.metrics["validation"],
        "stages": {name: r.metrics for name, r in results.items()},
        "ablation": [{"model": n, "cosine": c, "mrr": m} for n, c, m in rows],
        "seconds_this_call": {k: round(v, 1) for k, v in seconds.items()},
        "settings": settings.to_dict(),
    }
    write_json_atomic(output / METRICS_FILE, mark_json(metrics, "train"), overwrite=True)
    if not options.keep_cache:
        remove_written(output / CACHE_DIR, CACHE_FILES)
    remove_written(output / CHECKPOINTS_DIR, ())  # once empty
    return metrics
