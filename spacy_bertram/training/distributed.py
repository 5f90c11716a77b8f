"""Vector-table shards on a Dask cluster: one BERTRAM model per worker, one task per shard.

Each worker loads the model and opens the context store once (a worker
plugin does it eagerly when the client registers it; `shards.worker_state` caches it
per process, so a worker that joins later loads it on its first task). A task
gets a shard's words and returns the model's fingerprint with the rows; the
driver writes each shard as it arrives, so a killed run keeps what finished,
and refuses rows from a worker whose model files differ from the driver's.

Clusters: any scheduler address (the model and the store must be at the same
path on every worker, and spacy-bertram installed there), a LocalCluster of
processes (default: one per core, cores shared out as torch threads), or
dask-cuda's LocalCUDACluster with one worker per GPU.
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple

import numpy
import torch

from ..errors import Errors
from .settings import check_workers
from .shards import JobSettings, ShardStore, infer_words, worker_state

logger = logging.getLogger(__name__)

PLUGIN_NAME = "spacy-bertram-model"


def infer_shard(words: Sequence[str], job: JobSettings) -> Tuple[str, numpy.ndarray]:
    """A Dask task: the shard's rows, with the fingerprint of the model that made them."""
    state = worker_state(job)
    return state.fingerprint, infer_words(state.network, state.store, words, job.max_contexts, job.token_budget)


def make_plugin(job: JobSettings) -> Any:
    """A worker plugin that loads the model as soon as a worker has it."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class LoadBertram(WorkerPlugin):
        name = PLUGIN_NAME

        def __init__(self, job: JobSettings) -> None:
            self.job = job

        def setup(self, worker: Any) -> None:
            worker_state(self.job)

    return LoadBertram(job)


def open_client(
    scheduler: Optional[str], workers: Optional[int], gpu_ids: Sequence[int]
) -> Tuple[Any, Callable[[], None]]:
    """A Dask client and a function that closes it (and the cluster it started)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as err:
        raise ValueError(Errors.E267) from err
    check_workers(workers)
    logging.getLogger("distributed").setLevel(logging.WARNING)  # not every worker start and stop
    if scheduler:
        try:
            client = Client(scheduler, timeout="30s")
        except (OSError, TimeoutError) as err:
            raise ValueError(Errors.E220.format(scheduler=scheduler, err=err)) from err
        return client, client.close
    if gpu_ids:
        cluster = local_cuda_cluster(gpu_ids)
    else:
        n_workers = workers or os.cpu_count() or 1
        cluster = LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
    client = Client(cluster)

    def close() -> None:
        client.close()
        cluster.close()

    return client, close


@contextmanager
def optional_client(scheduler: Optional[str], workers: Optional[int]) -> Iterator[Any]:
    """A Dask client for the span of a command when `scheduler` or `workers` asks for one (closed after it,
    with the cluster it started), else None: one process."""
    if not (scheduler or workers):
        yield None
        return
    client, close = open_client(scheduler, workers, ())
    try:
        yield client
    finally:
        close()


def local_cuda_cluster(gpu_ids: Sequence[int]) -> Any:
    """dask-cuda's LocalCUDACluster with one worker per GPU id (clear errors without CUDA)."""
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError as err:
        raise ValueError(Errors.E221.format(gpu_ids=",".join(map(str, gpu_ids)))) from err
    if not torch.cuda.is_available():
        raise ValueError(Errors.E222.format(gpu_ids=",".join(map(str, gpu_ids)), torch_version=torch.__version__))
    return LocalCUDACluster(
        CUDA_VISIBLE_DEVICES=",".join(str(i) for i in gpu_ids),
        n_workers=len(gpu_ids),
        threads_per_worker=1,
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )


def run_on_dask(
    client: Any, shards: ShardStore, todo: Sequence[int], job: JobSettings, model_id: str, progress: bool = True
) -> None:
    """Compute the `todo` shards on the cluster, writing each one as it finishes (the shards
    written before an error stay for the next run)."""
    client.register_plugin(make_plugin(job), name=PLUGIN_NAME)

    def write(position: int, result: Tuple[str, numpy.ndarray]) -> None:
        fingerprint, vectors = result
        if fingerprint != model_id:
            raise ValueError(Errors.E223.format(model_path=job.model_path, fingerprint=fingerprint, model_id=model_id))
        shards.write(todo[position], vectors)

    run_tasks(
        client,
        infer_shard,
        [(shards.shard_words(index), job) for index in todo],
        [f"bertram-shard-{index}-{model_id[:8]}" for index in todo],
        write,
        progress,
    )


def run_tasks(
    client: Any,
    task: Callable[..., Any],
    arguments: Sequence[Tuple[Any, ...]],
    keys: Sequence[str],
    on_result: Callable[[int, Any], None],
    progress: bool = True,
) -> None:
    """`task(*arguments[i])` for every i on the cluster; `on_result(i, result)` here as each one finishes.

    Dask's progress bar runs beside the handler; on any error (a task's, or the
    handler's) the remaining tasks are cancelled, and what the handler kept stays.
    """
    from distributed import as_completed
    from distributed.diagnostics.progressbar import progress as dask_progress

    futures = [client.submit(task, *args, key=key, pure=False) for args, key in zip(arguments, keys)]
    position_of = {future.key: position for position, future in enumerate(futures)}
    bar: Optional[threading.Thread] = None
    if progress:
        bar = threading.Thread(target=dask_progress, args=(futures,), kwargs={"notebook": False}, daemon=True)
        bar.start()
    try:
        for future in as_completed(futures):
            on_result(position_of[future.key], future.result())
            future.release()
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if bar is not None:
            bar.join(timeout=5)


def describe_client(client: Any) -> str:
    info = client.scheduler_info()
    workers = info.get("workers", {})
    return f"Dask scheduler {info.get('address')} with {len(workers)} workers"


def local_threads(client: Any) -> int:
    """Torch threads per worker of a local cluster: the cores shared out among the workers."""
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    return max(1, (os.cpu_count() or 1) // n_workers)
