"""Per-epoch training checkpoints in safetensors + JSON (never pickle).

A checkpoint is one directory, written atomically: `model/` (a normal BERTRAM
model directory), `state.safetensors` (Adam moments and step counts, torch RNG
states) and `trainer.json` (epoch, step, optimizer hyper-parameters, the numpy
sampling RNG). Restoring all of it makes a resumed run continue bit for bit
where the killed one stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Optional

import numpy
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..errors import Errors
from ..fileio import atomic_directory, write_json_atomic
from ..model.network import BertramNetwork
from ..model.files import MODEL_DIR_ENTRIES
from ..model.storage import read_weights, write_model_dir
from ..types import PathLike

STATE_FILE = "state.safetensors"
TRAINER_FILE = "trainer.json"
MODEL_DIR = "model"
#: What a checkpoint writes in its directory (its model's files in MODEL_DIR): anything else there stays when it
#: is replaced or removed.
CHECKPOINT_ENTRIES = (STATE_FILE, TRAINER_FILE, *(f"{MODEL_DIR}/{name}" for name in MODEL_DIR_ENTRIES))


def load_weights(network: BertramNetwork, path: PathLike) -> None:
    """Load a model directory's weights into an existing network (same shapes), checked against
    the directory's digests: a damaged stage or checkpoint is refused, not resumed from."""
    try:
        state, _ = read_weights(path)
    except ValueError as err:
        raise ValueError(Errors.E201.format(path=str(Path(path)), err=err)) from err
    expected = network.bertram_state_dict()
    if set(state) != set(expected) or any(state[k].shape != expected[k].shape for k in state):
        raise ValueError(Errors.E202.format(path=str(path)))
    network.load_state_dict(state, strict=False)


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> Dict[str, torch.Tensor]:
    out: Dict[str, torch.Tensor] = {}
    for param_id, state in optimizer.state_dict()["state"].items():
        for key, value in state.items():
            if not torch.is_tensor(value):
                value = torch.as_tensor(value)
            out[f"optimizer.{param_id}.{key}"] = value.detach().cpu().contiguous()
    return out


def save_checkpoint(
    path: PathLike,
    network: BertramNetwork,
    optimizer: torch.optim.Optimizer,
    rng: numpy.random.Generator,
    info: Dict[str, Any],
) -> Path:
    target = Path(path)
    tensors = _optimizer_tensors(optimizer)
    tensors["rng.torch"] = torch.get_rng_state()
    if network.device.type == "cuda":
        tensors["rng.cuda"] = torch.cuda.get_rng_state(network.device)
    trainer = {
        **info,
        "device": network.device.type,
        "param_groups": optimizer.state_dict()["param_groups"],
        "numpy_rng": rng.bit_generator.state,
    }
    with atomic_directory(target, CHECKPOINT_ENTRIES, overwrite=True) as tmp:
        write_model_dir(network, tmp / MODEL_DIR)  # a new directory inside the checkpoint's
        save_file(tensors, str(tmp / STATE_FILE), metadata={"format": "spacy-bertram-checkpoint"})
        write_json_atomic(tmp / TRAINER_FILE, trainer)
    return target


def load_checkpoint(
    path: PathLike,
    network: BertramNetwork,
    optimizer: torch.optim.Optimizer,
    rng: numpy.random.Generator,
) -> Dict[str, Any]:
    """Restore weights, optimizer, RNGs in place; returns the saved `info`.

    A damaged checkpoint is a ValueError naming it: deleting it restarts the
    stage from its first epoch, which gives the same result.
    """
    directory = Path(path)
    _check_device(directory, network)
    load_weights(network, directory / MODEL_DIR)
    try:
        tensors = load_file(str(directory / STATE_FILE))
    except (SafetensorError, OSError) as err:
        raise ValueError(
            Errors.E203.format(path=str(directory / STATE_FILE), err=err, directory=str(directory))
        ) from err
    try:
        with open(directory / TRAINER_FILE, encoding="utf8") as file_:
            trainer = json.load(file_)
        if not isinstance(trainer, dict) or not {"param_groups", "numpy_rng", "epoch", "history"} <= set(trainer):
            raise ValueError(Errors.E204.format(fields="param_groups, numpy_rng, epoch and history"))
    except (OSError, ValueError) as err:
        raise ValueError(
            Errors.E203.format(path=str(directory / TRAINER_FILE), err=err, directory=str(directory))
        ) from err
    state: Dict[int, Dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        if key.startswith("optimizer."):
            _, param_id, name = key.split(".", 2)
            state.setdefault(int(param_id), {})[name] = value
    optimizer.load_state_dict({"state": state, "param_groups": trainer.pop("param_groups")})
    torch.set_rng_state(tensors["rng.torch"])
    cuda_state: Optional[torch.Tensor] = tensors.get("rng.cuda")
    if cuda_state is not None and network.device.type == "cuda":
        torch.cuda.set_rng_state(cuda_state, network.device)
    rng.bit_generator.state = trainer.pop("numpy_rng")
    trainer.pop("device", None)
    return trainer


def _trainer_record(directory: PathLike) -> Optional[Dict[str, Any]]:
    """A checkpoint's trainer.json read alone, before the checkpoint is loaded; None where it cannot be
    read (load_checkpoint reports a damaged file itself)."""
    try:
        record = json.loads((Path(directory) / TRAINER_FILE).read_text(encoding="utf8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def saved_epoch(directory: PathLike) -> Optional[int]:
    """The epochs a checkpoint holds (None where its record cannot be read): what a resumed run says
    it continues after."""
    epoch = (_trainer_record(directory) or {}).get("epoch")
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def _check_device(directory: Path, network: BertramNetwork) -> None:
    """A checkpoint resumes on the device type it was written on (its RNG streams are that device's)."""
    record = _trainer_record(directory)
    if record is None:
        return  # a damaged file is reported by load_checkpoint itself
    saved = record.get("device", "cpu")
    if saved != network.device.type:
        raise ValueError(
            Errors.E205.format(
                directory=str(directory),
                saved=saved,
                device=network.device.type,
                gpu_id="-1" if saved == "cpu" else "N",
            )
        )
