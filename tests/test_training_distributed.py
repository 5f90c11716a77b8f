"""training/distributed.py: GPU workers need dask-cuda and CUDA."""

from __future__ import annotations

import sys
import types

import pytest


def test_gpu_workers_need_dask_cuda_and_cuda(monkeypatch):
    import torch

    from spacy_bertram.training import distributed

    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # not installed
    with pytest.raises(ValueError, match=r"\[E221\] --gpu-id 0,1 .*dask-cuda.*spacy-bertram\[cuda\]"):
        distributed.local_cuda_cluster([0, 1])
    made = {}
    fake = types.ModuleType("dask_cuda")
    fake.LocalCUDACluster = lambda **kwargs: made.update(kwargs) or "cluster"
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"\[E222\].*sees no CUDA device"):
        distributed.local_cuda_cluster([0])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert distributed.local_cuda_cluster([0, 1]) == "cluster"
    assert made["CUDA_VISIBLE_DEVICES"] == "0,1" and made["n_workers"] == 2 and made["threads_per_worker"] == 1
