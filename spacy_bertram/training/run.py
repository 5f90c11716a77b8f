"""Context store -> targets -> three stages -> model, metrics and ablation table.

Bad input is found before anything is written: the store must open, the base
model must load, and the targets must have enough words of the right width.
Everything then goes under one output directory; running the same command
again resumes a killed run (finished stages are loaded, the current stage
continues from its last epoch checkpoint).
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ..encoder import load_encoder
from ..pipeline.device import make_deterministic, select_device
from ..fileio import clean_stale_temps, write_json_atomic
from ..storage import save_bertram
from .definition_contexts import WithDefinitions
from .ota import OTASettings
from ..pipeline.contexts import open_context_store
from .sources import ContextSource
from .stages import StageResult, TrainingRun, TrainSettings, combined_init, plan_stages
from .settings import METRICS_FILE, MODEL_DIR, RUN_FILES, TARGETS_DIR
from .targets import DEFAULT_HELD_OUT, DEFAULT_MIN_COUNT, TargetSet, build_targets, check_word_limits
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
        if spec.mode == "inplace":
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
    share, config.subword_share = config.subword_share, 0.0
    try:
        scores = run.validator.evaluate(final.network)
    finally:
        config.subword_share = share
    return (f"{final.spec.mode.upper()}, BERTRAM's own vector (share 0)", scores["cosine"], scores["mrr"])




def _clear_run(output: Path, log: Callable[[str], None]) -> None:
    """Remove a finished or killed run's files so that a run with new settings starts over."""
    stage_dirs = [p for p in output.iterdir() if p.is_dir() and p.name.startswith(("stage", "ablation-"))]
    for path in [output / name for name in RUN_FILES] + stage_dirs:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    log(f"{output}: the previous run had other settings; starting over (--restart)")


def _check_resume(output: Path, run_info: Dict[str, Any], restart: bool = False,
                  log: Callable[[str], None] = print) -> None:
    progress = output / "progress.json"
    if progress.is_file():
        try:
            recorded = json.loads(progress.read_text(encoding="utf8"))
            if not isinstance(recorded, dict) or not isinstance(recorded.get("stages", {}), dict):
                raise ValueError("expected an object with the finished stages")
        except (OSError, ValueError) as err:
            raise ValueError(
                f"Corrupt training record {str(progress)!r}: {err}. Delete {str(output)!r} to start over."
            ) from err
        recorded_run = recorded.get("run")
        if isinstance(recorded_run, dict):
            recorded_run = {"device": "cpu", **recorded_run}  # runs recorded before the device was
        if recorded_run not in (None, run_info):
            if restart:
                _clear_run(output, log)
                return
            if isinstance(recorded_run, dict) and recorded_run["device"] != run_info["device"]:
                raise ValueError(
                    f"{str(output)!r} holds a training run on {recorded_run['device']}, and this one is "
                    f"on {run_info['device']}: resuming would mix devices (different kernels and "
                    "RNG streams). Resume it on the same device (--gpu-id -1 for the CPU, a GPU id "
                    "for CUDA), pass --restart to start over, or use another output directory."
                )
            raise ValueError(
                f"{str(output)!r} holds a training run with other settings ({changed_settings(recorded_run, run_info)}); "
                "run with the same settings to resume it, use another output directory, delete this one, "
                "or pass --restart to start over"
            )


def changed_settings(old: Any, new: Dict[str, Any], prefix: str = "") -> str:
    """The settings that differ, `key: old -> new` (nested keys dotted), instead of the whole record."""
    if not isinstance(old, dict):
        return f"recorded: {old!r}"
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        before, after = old.get(key, "(unset)"), new.get(key, "(unset)")
        if isinstance(before, dict) and isinstance(after, dict):
            nested = changed_settings(before, after, f"{prefix}{key}.")
            changes += [nested] if nested else []
        elif before != after:
            changes.append(f"{prefix}{key}: {before!r} -> {after!r}")
    return "; ".join(changes)


def pooled_contexts(
    source: ContextSource, words: Sequence[str], pool: int, definitions: Optional[PathLike], per_word: int
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
    contexts: Union[PathLike, ContextSource],
    output_dir: PathLike,
    base_model: str = "default",
    settings: Optional[TrainSettings] = None,
    min_count: int = DEFAULT_MIN_COUNT,
    max_words: Optional[int] = None,
    held_out_fraction: float = DEFAULT_HELD_OUT,
    targets: Optional[PathLike] = None,
    ota: Optional[OTASettings] = None,
    ablation: bool = True,
    gpu_id: int = -1,
    keep_cache: bool = False,
    restart: bool = False,
    progress: bool = True,
    on_epoch_end: Optional[Callable[[str, int], None]] = None,
    log: Callable[[str], None] = print,
    definitions: Optional[PathLike] = None,
    definitions_per_word: int = 2,
) -> Dict[str, Any]:
    """Train BERTRAM end to end; returns (and writes) the metrics.

    `definitions`: a definition store whose definitions begin each training
    word's context pool (`definition_contexts.py`).

    Re-running with the same settings resumes; with other settings it is an error,
    unless `restart` (what a project step wants when its settings change).
    """
    call_started = time.perf_counter()
    settings = settings or TrainSettings()
    check_word_limits(min_count, max_words)
    device = select_device(gpu_id)
    make_deterministic(device)  # before the first cuBLAS call
    source = open_context_store(contexts) if isinstance(contexts, (str, Path)) else contexts
    encoder, tokenizer = load_encoder(base_model, device=device)  # the cached copy for the device
    width = int(encoder.get_input_embeddings().weight.shape[1])
    output = Path(output_dir)
    run_info = {"base_model": base_model, "settings": settings.to_dict(), "min_count": min_count,
                "max_words": max_words, "held_out_fraction": held_out_fraction,
                "targets": str(targets) if targets else None, "device": device.type}
    if output.is_dir():
        clean_stale_temps(output)  # a killed run's temp files (checkpoints/.stage1-*.tmp, ...)
    if definitions is not None:  # recorded only when used, so runs without it resume as before
        run_info["definitions"] = {"store": str(definitions), "per_word": definitions_per_word}
    _check_resume(output, run_info, restart, log)
    if targets is not None:
        target_set = TargetSet.load(targets, expected_width=width)
    elif (output / TARGETS_DIR).is_dir():
        target_set = TargetSet.load(output / TARGETS_DIR, expected_width=width)
    else:
        target_set = build_targets(
            source, encoder, tokenizer, base_model, min_count, max_words, held_out_fraction,
            settings.seed, ota or OTASettings(seed=settings.seed), device, progress,
        )
        target_set.save(output / TARGETS_DIR)
    n_held = sum(target_set.held_out)
    log(f"targets: {len(target_set)} words ({target_set.kinds.count('ota')} by OTA), {n_held} held out")
    word_contexts = pooled_contexts(source, target_set.words, settings.pool_contexts, definitions,
                                    definitions_per_word)
    run = TrainingRun(target_set, word_contexts, encoder, tokenizer, base_model, settings, output,
                      device, progress, on_epoch_end, log)
    run.record["run"] = run_info
    write_json_atomic(output / "progress.json", run.record)
    results: Dict[str, StageResult] = {}
    seconds: Dict[str, float] = {}
    by_index = {}
    started = time.perf_counter()
    for spec in plan_stages(settings):
        init = combined_init(by_index[1], by_index[2]) if spec.index == 3 else None
        by_index[spec.index] = results[spec.name] = run.stage(spec, init)
    final = by_index[max(by_index)]
    # The corpus counts go with the model: the component's rare-word rule reads them.
    save_bertram(final.network, output / MODEL_DIR, counts=dict(source.counts(1)))
    seconds["stages"] = time.perf_counter() - started
    if ablation:
        started = time.perf_counter()
        for spec in plan_stages(settings, use_subword_mean=not settings.use_subword_mean)[1:]:
            init = combined_init(by_index[1], results["ablation-stage2-form"]) if spec.index == 3 else None
            results["ablation-" + spec.name] = run.stage(spec, init, prefix="ablation-")
        seconds["ablation"] = time.perf_counter() - started
    baseline = run.baseline()
    seconds["total"] = time.perf_counter() - call_started
    rows = ablation_rows(baseline, results)
    if settings.subword_share > 0:  # the output mix is inference-only: BERTRAM's own vector costs one pass
        rows.append(own_vector_row(run, final))
    log("held-out words: " + str(baseline["words"]) + "\n" + format_table(rows))
    metrics = {
        "base_model": base_model,
        "mode": settings.mode,
        "model": str(output / MODEL_DIR),
        "targets": {"words": len(target_set), "held_out": n_held, **target_set.info},
        "baseline": baseline,
        "final": final.metrics["validation"],
        "stages": {name: r.metrics for name, r in results.items()},
        "ablation": [{"model": n, "cosine": c, "mrr": m} for n, c, m in rows],
        "seconds_this_call": {k: round(v, 1) for k, v in seconds.items()},
        "settings": settings.to_dict(),
    }
    write_json_atomic(output / METRICS_FILE, metrics)
    if not keep_cache:
        shutil.rmtree(output / "cache", ignore_errors=True)
    if (output / "checkpoints").is_dir() and not any((output / "checkpoints").iterdir()):
        (output / "checkpoints").rmdir()
    return metrics
