"""The `compare-runs` command: two runs of one evaluation (two models, or a setting on and off), paired.

A command of `python -m bertram_experiments`, registered on its `app.app`; it imports its step when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from spacy_bertram.project_support import (
    FORCE_HELP,
    atomic_path,
    check_output_dir,
    count_range,
    fail,
    mark_json,
    run_checked,
    text_mark,
    write_json_atomic,
)
from ..app import app
from ..bootstrap import DEFAULT_RESAMPLES
from ..errors import Errors
from ..outputs import COMPARE_OUTPUTS


@app.command("compare-runs")
def compare_runs_cmd(
    before: List[Path] = typer.Option(
        ...,
        help="the reference run: a synonym-recovery or intrinsic JSON "
        "file, a label-curve training directory, or evaluate output directories "
        "(repeat the option; pooled as `pool` pools them)",
    ),
    after: List[Path] = typer.Option(..., help="the run compared with it, of the same kind and on the same data"),
    output: Path = typer.Option(..., help="directory for comparison.json and comparison.md"),
    bootstrap_resamples: int = typer.Option(
        DEFAULT_RESAMPLES, **count_range("resamples"), help="resamples for the paired bootstrap CIs"
    ),
    seed: int = typer.Option(0, **count_range("seed"), help="seed of the bootstrap resampling"),
    pair: Optional[List[str]] = typer.Option(
        None,
        help="evaluate outputs only: BEFORE_SYSTEM:AFTER_SYSTEM, a system of the --before run against one of the "
        "--after run (repeat the option; default: every system both runs have, by name)",
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """After - before on the items both runs scored, with paired bootstrap CIs (the same items, the
    same resamples): what tells two models, or a setting, apart where their CIs against stock overlap."""
    run_checked(check_output_dir, output, COMPARE_OUTPUTS, command="compare-runs", force=force)
    from ..label_curve.compare import compare_curve_runs
    from .runs import (
        compare_downstream_runs,
        compare_intrinsic_runs,
        compare_synonym_runs,
        comparison_markdown,
        run_kind,
    )

    kind = run_checked(run_kind, [*before, *after])
    if pair and kind != "downstream":
        fail(ValueError(Errors.E436.format(kind=kind)))
    pairs = [(system_before, system_after) for system_before, _, system_after in (p.partition(":") for p in pair or [])]
    one_against_one = {
        "synonyms": compare_synonym_runs,
        "intrinsic": compare_intrinsic_runs,
        "label-curve": compare_curve_runs,
    }
    if kind in one_against_one:
        if len(before) != 1 or len(after) != 1:
            fail(ValueError(Errors.E431.format(before=len(before), after=len(after))))
        result = run_checked(one_against_one[kind], before[0], after[0], bootstrap_resamples, seed)
    else:
        result = run_checked(compare_downstream_runs, before, after, bootstrap_resamples, seed, pairs)
    lines = comparison_markdown(result)
    write_json_atomic(output / "comparison.json", mark_json(result, "compare-runs"), overwrite=True)
    with atomic_path(output / "comparison.md", overwrite=True) as tmp:
        tmp.write_text("\n".join([text_mark("compare-runs"), *lines]) + "\n", encoding="utf8")
    typer.echo("\n".join(lines))
