"""Pipelines saved at chosen training steps: the points of a learning curve.

One training run to the last step gives every point of the curve, instead of one
run per point (the `ner-full` workflow's curve): a training logger (registered as `spacy-bertram.CheckpointLogger.v1`
in `architectures.py`) wraps spaCy's console logger and, at each evaluation whose
step is one of `steps`, writes the pipeline being trained to `DIRECTORY/step-N`
(`save_pipeline`: a temp directory, then one rename). spaCy calls loggers only at evaluations, so every
step must be a multiple of `eval_frequency` (checked when the config is built).

The points share the run's learning-rate schedule: the model at step 100 of a
1,000-step run has seen a higher rate than one trained for 100 steps alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Callable, Dict, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.training.loggers import console_logger

from .errors import Errors
from .pipeline.pipeline_save import save_pipeline
from .types import PathLike

#: The sub-directory of a training output that holds the checkpoints.
CHECKPOINTS_DIR = "checkpoints"
LOGGER_NAME = "spacy-bertram.CheckpointLogger.v1"

LogStep = Callable[[Optional[Dict[str, object]]], None]


def step_dir(directory: PathLike, step: int) -> Path:
    return Path(directory) / f"step-{int(step)}"


def check_checkpoint_steps(steps: Sequence[int], eval_frequency: int, max_steps: int) -> Tuple[int, ...]:
    """The steps sorted, each a multiple of `eval_frequency` and below `max_steps`."""
    wanted = tuple(sorted({int(s) for s in steps}))
    bad = [s for s in wanted if s <= 0 or s % eval_frequency or s >= max_steps]
    if bad:
        raise ValueError(Errors.E418.format(steps=bad, eval_frequency=eval_frequency, max_steps=max_steps))
    return wanted


def checkpoint_logger(steps: Sequence[int], directory: str, progress_bar: bool = False):
    """spaCy's console logger that also saves the pipeline at `steps`."""
    console = console_logger(progress_bar=progress_bar)
    wanted = {int(s) for s in steps}

    def setup(nlp: Language, stdout: IO, stderr: IO) -> Tuple[LogStep, Callable[[], None]]:
        log_step, finalize = console(nlp, stdout, stderr)

        def log_and_save(info: Optional[Dict[str, object]]) -> None:
            log_step(info)
            if info is not None and info.get("step") in wanted:
                target = step_dir(directory, int(info["step"]))
                save_pipeline(nlp, target, overwrite=True)  # the training's output rule let it write there

        return log_and_save, finalize

    return setup


__all__ = ["CHECKPOINTS_DIR", "LOGGER_NAME", "check_checkpoint_steps", "checkpoint_logger", "step_dir"]
