"""The `report` and `learning-curve` commands: what a project run produced, and several training runs side by side.

Commands of `python -m bertram_experiments`, registered on its `app.app`; each imports its step when it runs, so
`--help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from spacy_bertram.project_support import (
    FORCE_FILE_HELP,
    FORCE_HELP,
    check_output_dir,
    check_output_file,
    count_range,
    run_checked,
)

from ..app import app
from ..outputs import CURVE_OUTPUTS


@app.command("report")
def report_cmd(
    output: Path = typer.Argument(..., help="the markdown file"),
    datasets: str = typer.Option(
        "bbc", help="comma-separated dataset names; those not evaluated are listed as not run"
    ),
    corpus_dir: Path = typer.Option(Path("corpus"), help="holds NAME/splits and NAME/rarified"),
    training_dir: Path = typer.Option(Path("training"), help="holds NAME/baseline"),
    metrics_dir: Path = typer.Option(Path("metrics"), help="holds NAME/metrics.json"),
    bertram_dir: Optional[Path] = typer.Option(None, help="BERTRAM training output (metrics.json)"),
    prepare_dir: Optional[Path] = typer.Option(None, help="prepare output (prepare.json)"),
    pooled: Optional[Path] = typer.Option(None, help="pooled.json of the pool step: its table comes first"),
    originals: Optional[Path] = typer.Option(
        None, help="pooled.json of the originals step (do no harm): its table next"
    ),
    synonyms: Optional[Path] = typer.Option(None, help="the synonym-recovery JSON: its table after the pooled one"),
    force: bool = typer.Option(False, "--force", help=FORCE_FILE_HELP),
) -> None:
    """Write the markdown report."""
    run_checked(check_output_file, output, command="report", force=force)
    from .report import write_report

    names = [d.strip() for d in datasets.split(",") if d.strip()]
    path = run_checked(
        write_report,
        output,
        names,
        corpus_dir=corpus_dir,
        training_dir=training_dir,
        metrics_dir=metrics_dir,
        bertram_dir=bertram_dir,
        prepare_dir=prepare_dir,
        pooled=pooled,
        originals=originals,
        synonyms=synonyms,
    )
    typer.echo(Path(path).read_text(encoding="utf8"))


@app.command("learning-curve")
def learning_curve_cmd(
    points: List[Path] = typer.Argument(
        ...,
        metavar="POINT...",
        help="point directories (train/metrics.json and "
        "the measures' JSON, as scripts/learning_curve.sh writes them); the first "
        "is the reference",
    ),
    output: Path = typer.Option(..., help="directory for learning_curve.json, .md and the plots"),
    bootstrap: int = typer.Option(
        2000, **count_range("resamples"), help="paired bootstrap resamples for the differences to the reference"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the bootstrap"),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """The measures of several training runs side by side: gains with CIs, differences to the first
    point, and plots against training words and contexts."""
    run_checked(
        check_output_dir, output, CURVE_OUTPUTS, command="learning-curve", force=force, marked=CURVE_OUTPUTS[:2]
    )
    from ..learning_curve import format_markdown, write_learning_curve

    curve = run_checked(write_learning_curve, points, output, bootstrap, seed)
    typer.echo("\n".join(format_markdown(curve)))
