"""The `convert-reference` command: a checkpoint of the reference implementation as a model of this package's.

A command of `python -m spacy_bertram`, registered on `app.app`; it imports torch and the model only when it
runs, so `--help` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .app import FORCE_HELP, app, echo_json, run_checked
from ..model.files import check_model_dir
from ..bounds import count_range
from ..model.reference import REFERENCE_MAX_CONTEXTS, read_reference_settings


@app.command("convert-reference")
def convert_reference_cmd(
    checkpoint: Path = typer.Argument(
        ...,
        metavar="CHECKPOINT",
        help="a BERTRAM checkpoint of the reference implementation (github timoschick/bertram): bertram_config.json, "
        "input_processor.json(.vocab), config.json and pytorch_model.bin, e.g. the paper's released "
        "bertram-add-for-bert-base-uncased",
    ),
    output: Path = typer.Argument(
        ..., metavar="OUTPUT", help="the model directory to write (what model_path and load_bertram take)"
    ),
    base_model: Optional[str] = typer.Option(
        None,
        help="the encoder the checkpoint was trained for, a local Hugging Face directory or a cached name (none: the "
        "one its input_processor.json names)",
    ),
    max_contexts: int = typer.Option(
        REFERENCE_MAX_CONTEXTS,
        **count_range("contexts"),
        help="the most contexts per word the model reads at inference (the reference reads every context it is given)",
    ),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Convert a reference checkpoint into a model directory of this package's (the paper's network).

    The JSON files are read as plain JSON (never decoded by jsonpickle) and the weights with weights_only; the
    n-gram table is rebuilt as the reference rebuilds it. Where the checkpoint's encoder weights differ from the
    base model's, that encoder is written to OUTPUT/encoder and reads the contexts. Prints a JSON summary.
    """
    run_checked(check_model_dir, output, command="convert-reference", force=force, force_hint="--force")
    settings = run_checked(read_reference_settings, checkpoint)
    from ..model.storage import convert_reference

    target = run_checked(convert_reference, checkpoint, output, base_model, max_contexts=max_contexts, force=force)
    from ..model.config import BertramConfig

    config = BertramConfig.from_disk(target / "config.json")
    echo_json(
        {
            "output": str(target),
            "mode": settings.mode,
            "add_quotes": settings.add_quotes,
            "base_model": config.base_model,
            "own_encoder": (target / "encoder").is_dir(),
        }
    )
