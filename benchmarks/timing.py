"""Wall and CPU time of one call, shared by the benchmark scripts."""

from __future__ import annotations

import time
from typing import Callable, Tuple, TypeVar

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> Tuple[T, float, float]:
    """Result, wall seconds and CPU seconds (all threads of this process).

    CPU time is reported beside wall time because on a shared machine other
    processes stretch wall time but not the work this process does.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu
