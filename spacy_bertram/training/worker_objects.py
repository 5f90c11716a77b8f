"""What a Dask worker process makes once and every task on it reuses: a loaded model, an encoder's OTA.

Tasks of `vectors`, `train` and `targets` run many times in one worker process; loading a model
or an encoder per task would cost more than the task. Each is made on first use, under one lock
(a worker may run tasks in threads), keyed by what it is made from.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, Hashable, TypeVar

import torch

T = TypeVar("T")

_MADE: Dict[Hashable, Any] = {}
_LOCK = threading.Lock()


def once_per_process(key: Hashable, make: Callable[[], T], torch_threads: int = 0) -> T:
    """`make()`'s result for `key`, made once in this process; torch's thread count set first where given (a
    local cluster shares the machine's cores out among its workers)."""
    if torch_threads and torch.get_num_threads() != torch_threads:
        torch.set_num_threads(torch_threads)
    with _LOCK:
        made = _MADE.get(key)
        if made is None:
            made = _MADE[key] = make()
        return made


__all__ = ["once_per_process"]
