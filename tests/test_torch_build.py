"""torch_build.py: the installed torch's build, read from torch/version.py without importing torch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from spacy_bertram import torch_build
from spacy_bertram.torch_build import cpu_only_torch


def test_the_build_read_from_the_file_is_the_loaded_torchs():
    cpu_only = torch.version.cuda is None and getattr(torch.version, "hip", None) is None
    assert cpu_only_torch() == (torch.__version__ if cpu_only else None)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("__version__ = '9.1+cpu'\ncuda = None\nhip = None\n", "9.1+cpu"),
        ("__version__ = '9.1+cu121'\ncuda = '12.1'\nhip = None\n", None),
        ("__version__ = '9.1+rocm6'\ncuda = None\nhip = '6.0'\n", None),
        ("__version__ = '9.1'\n", None),  # a version.py that records no build: torch itself is asked
        ("this is not python", None),
    ],
)
def test_a_build_is_cpu_only_when_it_records_neither_cuda_nor_hip(tmp_path, monkeypatch, text, expected):
    (tmp_path / "version.py").write_text(text, encoding="utf8")
    spec = SimpleNamespace(submodule_search_locations=[str(tmp_path)])
    monkeypatch.setattr(torch_build.importlib.util, "find_spec", lambda name: spec if name == "torch" else None)
    assert cpu_only_torch() == expected


def test_no_torch_installed_is_no_shortcut(monkeypatch):
    monkeypatch.setattr(torch_build.importlib.util, "find_spec", lambda name: None)
    assert cpu_only_torch() is None
