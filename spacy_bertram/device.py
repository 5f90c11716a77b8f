"""Device choice in one place: spaCy's `--gpu-id` convention, with named errors.

-1 (or any negative id) is the CPU; N >= 0 is CUDA device N for both torch
(BERTRAM, the encoder) and thinc/spaCy (the pipelines, through CuPy). A bad id
is a `DeviceError` (a ValueError) that says what was wrong and how to fix it,
never a CuPy or torch traceback. Training (`training/run.py`, `targets`), the
the experiments (`bertram_experiments/`), the benchmarks and the component (the fork
check) import their helpers from here: the package's one device helper.
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Any, Dict, Optional

import torch

from .errors import Errors
from .torch_build import CUDA_EXTRA, cpu_only_reason


class DeviceError(ValueError):
    """A GPU id that cannot be used here, with the reason and the fix."""


def check_gpu_id(gpu_id: Any, what: str = "--gpu-id") -> int:
    """`gpu_id` as an int, or a DeviceError for anything that is not a whole number."""
    if isinstance(gpu_id, bool):
        raise DeviceError(Errors.E116.format(what=what, gpu_id=gpu_id))
    if isinstance(gpu_id, str):
        try:
            gpu_id = int(gpu_id.strip())
        except ValueError:
            raise DeviceError(Errors.E116.format(what=what, gpu_id=gpu_id)) from None
    try:
        value = int(gpu_id)
    except (TypeError, ValueError):
        raise DeviceError(Errors.E116.format(what=what, gpu_id=gpu_id)) from None
    if value != gpu_id:
        raise DeviceError(Errors.E116.format(what=what, gpu_id=gpu_id))
    return value


def _check_cuda_device(gpu_id: int, what: str) -> None:
    if not torch.cuda.is_available():
        build = torch.version.cuda
        why = (
            cpu_only_reason(torch.__version__)
            if build is None
            else f"torch (built for CUDA {build}) sees no CUDA device (driver missing, or CUDA_VISIBLE_DEVICES empty)"
        )
        raise DeviceError(Errors.E117.format(what=what, gpu_id=gpu_id, why=why, CUDA_EXTRA=CUDA_EXTRA))
    count = torch.cuda.device_count()
    if gpu_id >= count:
        raise DeviceError(
            Errors.E118.format(
                what=what,
                gpu_id=gpu_id,
                count=count,
                plural="s" if count != 1 else "",
                last=count - 1,
                numbering=", as CUDA_VISIBLE_DEVICES numbers them" if count else "",
            )
        )


def _require_thinc_gpu(gpu_id: int, what: str) -> None:
    """spaCy/thinc on GPU `gpu_id` (CuPy ops); a named error instead of thinc's."""
    from thinc.api import require_gpu

    try:
        require_gpu(gpu_id)
    except ValueError as err:
        raise DeviceError(Errors.E119.format(what=what, gpu_id=gpu_id, err=err, CUDA_EXTRA=CUDA_EXTRA)) from err
    except RuntimeError as err:  # CuPy's own CUDA errors (CUDARuntimeError: bad device, driver mismatch)
        raise DeviceError(
            Errors.E120.format(what=what, gpu_id=gpu_id, err_type=type(err).__name__, err=err, CUDA_EXTRA=CUDA_EXTRA)
        ) from err


def check_device(gpu_id: Any, what: str = "--gpu-id") -> int:
    """`gpu_id` as an int, once torch is known to have that CUDA device (a DeviceError if not).

    The commands call it before any work, so that a GPU this machine lacks is refused
    before an output is written, not at the first CUDA call ("Torch not compiled with CUDA").
    """
    gpu_id = check_gpu_id(gpu_id, what)
    if gpu_id >= 0:
        _check_cuda_device(gpu_id, what)
    return gpu_id


def select_device(gpu_id: Any, what: str = "--gpu-id", thinc: bool = True) -> torch.device:
    """spaCy-style device choice: -1 is the CPU, N >= 0 is CUDA device N.

    With `thinc=True` spaCy/thinc are switched to the GPU too (`require_gpu`), so
    a pipeline built or loaded afterwards runs there; a missing CuPy is an error
    here, at the start of a step, rather than in a later step of the project.
    """
    gpu_id = check_device(gpu_id, what)
    if gpu_id < 0:
        return torch.device("cpu")
    if thinc:
        _require_thinc_gpu(gpu_id, what)
    torch.cuda.set_device(gpu_id)
    return torch.device(f"cuda:{gpu_id}")


#: cuBLAS's setting for reproducible results (must be set before its first call).
CUBLAS_WORKSPACE_CONFIG = ":4096:8"


def make_deterministic(device: Any) -> Dict[str, Any]:
    """Deterministic kernels on CUDA (training: reuse equals recompute, resume is exact).

    Sets CUBLAS_WORKSPACE_CONFIG (unless set), torch.use_deterministic_algorithms
    (warn_only: an op without a deterministic CUDA kernel warns, it does not stop
    the run), no cuDNN autotuning and no TF32. The CPU needs none of it (its kernels
    are deterministic for a fixed thread count). Returns what it set, for the record.
    """
    if torch.device(device).type != "cuda":
        return {"device": torch.device(device).type, "deterministic_algorithms": False}
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE_CONFIG)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return {
        "device": "cuda",
        "deterministic_algorithms": True,
        "cublas_workspace_config": os.environ["CUBLAS_WORKSPACE_CONFIG"],
    }


def use_device(gpu_id: Optional[Any], what: str = "--gpu-id") -> None:
    """spaCy's `--gpu-id` for a pipeline step: -1/None is the CPU; N >= 0 requires CUDA device N."""
    if gpu_id is None:
        return
    select_device(gpu_id, what, thinc=True)


# -- processes ---------------------------------------------------------------------------


def _thinc_on_gpu() -> bool:
    try:
        from thinc.api import get_current_ops

        return type(get_current_ops()).__name__ == "CupyOps"
    except Exception:  # pragma: no cover - thinc is a dependency
        return False


def forked_after_gpu_use() -> bool:
    """True in a process forked after its parent used CUDA (torch) or CuPy (thinc).

    CUDA cannot be used in such a child ("Cannot re-initialize CUDA in forked
    subprocess"), which is what `nlp.pipe(n_process > 1)` makes with the
    default start method on Linux.
    """
    if torch.cuda._is_in_bad_fork():
        return True
    return multiprocessing.get_start_method(allow_none=True) in (None, "fork") and _thinc_on_gpu()


class GPUForkError(RuntimeError):
    """nlp.pipe(n_process > 1) on a GPU: forked workers cannot use CUDA."""


def check_not_forked_on_gpu(where: str = "bertram") -> None:
    if forked_after_gpu_use():
        raise GPUForkError(Errors.E121.format(where=where))
