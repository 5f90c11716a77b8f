"""What the installed torch was built for (CUDA, ROCm or the CPU only), read without importing it.

`import torch` takes 5-10 s; torch/version.py, a few generated lines, records the build. The
command line reads it to refuse `--gpu-id 0` on a CPU-only build at once, before any import
or work (`app.check_gpu`); `device.py` gives the same reason once torch is loaded.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Optional

#: The extra that installs CuPy for spaCy/thinc on CUDA 12 (see pyproject.toml).
CUDA_EXTRA = "cuda12x"


def cpu_only_reason(version: str) -> str:
    """Why no GPU id can be used with a torch built without CUDA (E117's `why`)."""
    return f"this torch ({version}) is a CPU-only build, with no CUDA support"


def cpu_only_torch() -> Optional[str]:
    """The installed torch's version if it was built with neither CUDA nor ROCm (HIP), else None;
    None too where torch/version.py cannot be read, so that the caller asks torch itself."""
    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        version_spec = importlib.util.spec_from_file_location("spacy_bertram_torch_version", path)
        record = importlib.util.module_from_spec(version_spec)
        version_spec.loader.exec_module(record)
    except Exception:  # a torch whose version.py differs: no shortcut, torch itself is asked
        return None
    if getattr(record, "cuda", "") is None and getattr(record, "hip", "") is None:
        return str(getattr(record, "__version__", "unknown"))
    return None


__all__ = ["CUDA_EXTRA", "cpu_only_reason", "cpu_only_torch"]
