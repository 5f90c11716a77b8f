"""The learning-curve commands of `python -m bertram_experiments` (registered on `bertram_experiments.app.app`).

label-curve         stock and with-bertram pipelines trained on nested subsets of a task's labelled
                    texts (NER folds or a textcat split), scored on real test texts: gain with CIs, cost
label-curve-report  every task's curve in one markdown file, with the plots
"""

from pathlib import Path
from typing import List, Optional

import typer

from spacy_bertram.project_support import (
    FORCE_HELP,
    GPU_HELP,
    check_gpu,
    check_model,
    check_output_dir,
    check_store,
    count_range,
    echo_json,
    number_in,
    run_checked,
    setup_logging,
)

from ..app import app
from ..bootstrap import DEFAULT_RESAMPLES
from ..outputs import LABEL_CURVE_OUTPUTS, LABEL_CURVE_REPORT_OUTPUTS, LABEL_CURVE_RUNS


@app.command("label-curve")
def label_curve_cmd(
    task: str = typer.Argument(..., help="'ner' (DATA_DIR from ner-folds) or 'textcat' (DATA_DIR from split)"),
    data_dir: Path = typer.Argument(..., help="the folds or the split the subsets are drawn from"),
    training_dir: Path = typer.Argument(..., help="one directory per run: fold-F/draw-D/n-N/seed-S"),
    output_dir: Path = typer.Argument(..., help="curve.json, curve.md, curve.png"),
    name: Optional[str] = typer.Option(None, help="the curve's name in tables and plots (default: OUTPUT_DIR's)"),
    bertram: Path = typer.Option(..., help="trained BERTRAM model directory"),
    context_store: Optional[Path] = typer.Option(
        None, help="contexts.sqlite from `prepare` (a bertram config reading store contexts needs it)"
    ),
    contexts: Optional[str] = typer.Option(
        None,
        help="the with-bertram pipeline's contexts (the component's shorthand: none, doc, store, both...) instead "
        "of its config's",
    ),
    stock_config: Path = typer.Option(..., help="the stock pipeline's training config"),
    bertram_config: Path = typer.Option(..., help="the same pipeline with bertram before the transformer"),
    base_model: str = typer.Option("default", help="encoder name or path ('default': MiniLM)"),
    sizes: str = typer.Option("50,150,450", help="labelled training texts per point, comma-separated"),
    seeds: str = typer.Option("0,1", help="spaCy training seeds, comma-separated"),
    draws: int = typer.Option(1, **count_range("runs"), help="nested subset orders per fold (each its own runs)"),
    batch_size: int = typer.Option(250, **count_range("batch"), help="padded words per batch"),
    epochs: int = typer.Option(
        8, **count_range("steps"), help="passes over a subset (within --min-steps, --max-steps)"
    ),
    min_steps: int = typer.Option(100, **count_range("steps"), help="fewest updates per run"),
    max_steps: int = typer.Option(160, **count_range("steps"), help="most updates per run"),
    eval_steps: int = typer.Option(
        20, **count_range("steps"), help="fewest updates between dev scores (else one pass)"
    ),
    patience: int = typer.Option(
        3, **count_range("runs"), help="dev scores without a better one before training stops"
    ),
    learn_rate: float = typer.Option(
        2e-4,
        parser=number_in(0, low_open=True),
        help="Adam learning rate (linear warm-up over a tenth of the steps, then decay)",
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help=GPU_HELP),
    bootstrap_resamples: int = typer.Option(
        DEFAULT_RESAMPLES, **count_range("resamples"), help="resamples for the paired bootstrap CIs"
    ),
    keep_models: bool = typer.Option(
        False, "--keep-models", help="keep every trained pipeline (about 100 MB each) after predicting"
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Train stock and with-bertram pipelines on growing nested subsets (finished runs are skipped), then
    write the gain per point with its CI and the cost."""
    run_checked(check_output_dir, training_dir, LABEL_CURVE_RUNS, command="label-curve", force=force)
    run_checked(check_output_dir, output_dir, LABEL_CURVE_OUTPUTS, command="label-curve", force=force)
    run_checked(check_model, bertram, "--bertram")
    if context_store is not None:
        run_checked(check_store, context_store, "--context-store")
    run_checked(check_gpu, gpu_id)
    from ..rarification.seed_sets import parse_seeds
    from .curve import label_curve
    from .data import check_task
    from .runs import CurveSettings
    from .schedule import CurveSchedule
    from .subsets import parse_sizes

    run_checked(check_task, task)
    setup_logging()
    settings = CurveSettings(
        task,
        str(stock_config),
        str(bertram_config),
        str(bertram),
        context_store and str(context_store),
        base_model,
        gpu_id,
        tuple(run_checked(parse_sizes, sizes)),
        tuple(run_checked(parse_seeds, seeds)),
        draws,
        CurveSchedule(
            batch_size,
            epochs,
            min_steps,
            max_steps,
            min_eval_steps=eval_steps,
            patience_evals=patience,
            learn_rate=learn_rate,
        ),
        contexts,
    )
    curve = run_checked(
        label_curve,
        name or output_dir.name,
        data_dir,
        training_dir,
        output_dir,
        settings,
        n_resamples=bootstrap_resamples,
        keep_models=keep_models,
        force=force,
    )
    echo_json(
        {
            "name": curve["name"],
            "seconds": curve["seconds"],
            "points": [
                {
                    "size": p["size"],
                    "delta_all": p["all"]["delta"]["estimate"],
                    "delta_rare": p["rare"]["delta"]["estimate"],
                }
                for p in curve["points"]
            ],
        }
    )


@app.command("label-curve-report")
def label_curve_report_cmd(
    curve_dirs: List[Path] = typer.Argument(..., help="output directories of label-curve"),
    output: Path = typer.Option(Path("metrics/curve-labels/report"), help="curves.md and NAME.png"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Every curve's table and plot in one markdown file."""
    run_checked(check_output_dir, output, LABEL_CURVE_REPORT_OUTPUTS, command="label-curve-report", force=force)
    from .curve import curves_report

    path = run_checked(curves_report, curve_dirs, output, force=force)
    echo_json({"report": str(path)})
