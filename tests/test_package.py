"""`spacy package` builds a wheel of a bertram pipeline that installs in a fresh venv and runs.

Slow-but-run: a wheel of spacy-bertram built from this checkout and a fresh venv that sees the
packages of the interpreter running the tests (torch, spaCy and the rest come from there, whether
that is the system Python or a virtualenv: see fresh_venv.py), both made once for the module; then
the documented route (docs/packaging.md) for two pipelines: `pip install` of both wheels in one
command, dependencies resolved (offline: `--no-index`), spacy-bertram from its wheel into the venv.
One pipeline is packaged as an sdist and built into a wheel with pip (which needs only setuptools),
the other is what `assemble` writes, packaged with `--build wheel` (the `build` package) and run
with its model directory gone, from another working directory.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy
import pytest
import spacy

from tests.fresh_venv import make_venv
from tests.util import TEXT, invoke, make_nlp, make_table

pytestmark = pytest.mark.slow  # builds venvs and wheels

PACKAGE = "bertram_pkg_test"


ROOT = Path(__file__).resolve().parents[1]
#: The venv's environment: the packages it installed, not this checkout through PYTHONPATH.
VENV_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
#: Runs in the venv: loads a package by name, runs the texts, writes their vectors, prints what it used.
RUN_PACKAGE = """
import importlib.metadata, json, sys, numpy, spacy
name, texts, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
nlp = spacy.load(name)
docs = list(nlp.pipe(texts))
numpy.savez(out, **{f"{n}_{i}": v for n, d in enumerate(docs) for i, v in d._.bertram.items()})
import spacy_bertram
print(json.dumps({"file": spacy.util.get_package_path(name).as_posix(), "own": spacy_bertram.__file__,
                  "own_dist": str(importlib.metadata.distribution("spacy-bertram").locate_file("")),
                  "requires": importlib.metadata.requires(name), "cats": [d.cats for d in docs]}))
"""


def run(cmd, cwd: Path, env=None) -> str:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env)
    assert result.returncode == 0, f"{cmd}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def factory_entry_point_installed() -> bool:
    return any(ep.name == "bertram" for ep in importlib.metadata.entry_points(group="spacy_factories"))


@pytest.fixture(scope="module")
def own_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """spacy-bertram's wheel, built from this checkout."""
    out = tmp_path_factory.mktemp("own")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", ROOT, "-w", out], out)
    (own,) = out.glob("spacy_bertram-*.whl")
    return own


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv's python (shared by the module's tests: each installs its own pipeline)."""
    python = make_venv(tmp_path_factory.mktemp("fresh") / "venv")
    # The venv's bundled setuptools is older than torch's requirement and would shadow the outer one.
    run([python, "-m", "pip", "uninstall", "-q", "-y", "setuptools"], python.parent)
    return python


def run_package(python: Path, name: str, texts, vectors: Path, cwd: Path) -> dict:
    """RUN_PACKAGE in the venv from `cwd`; returns what it printed, with the vectors it wrote."""
    out = json.loads(run([python, "-c", RUN_PACKAGE, name, json.dumps(texts), vectors], cwd, VENV_ENV))
    loaded = numpy.load(vectors)
    return {**out, "vectors": {key: loaded[key] for key in loaded.files}}


def vectors_of(docs) -> dict:
    return {f"{n}_{i}": v for n, d in enumerate(docs) for i, v in d._.bertram.items()}


def same(loaded: dict, expected: dict) -> bool:
    return sorted(loaded) == sorted(expected) and all(numpy.array_equal(loaded[k], expected[k]) for k in expected)


def test_the_wheel_ships_its_type_hints(own_wheel):
    """PEP 561: without py.typed a user's type checker ignores the package's hints."""
    assert "spacy_bertram/py.typed" in zipfile.ZipFile(own_wheel).namelist()


def test_packaged_wheel_installs_and_loads_in_a_fresh_venv(
    encoder_bertram_dir,
    tiny_encoder_path,
    tmp_path,  # noqa: F811
    own_wheel,
    venv,
):
    make_table(encoder_bertram_dir, ["quokka"], tmp_path / "table")  # the package ships the vector table
    nlp = make_nlp(
        encoder_bertram_dir,
        tiny_encoder_path,
        transformer=tiny_encoder_path,
        textcat=True,
        vector_table=str(tmp_path / "table"),
    )
    nlp.meta["name"] = PACKAGE
    texts = [TEXT, "A zorbing quokka.", ""]
    docs = list(nlp.pipe(texts))
    nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "out").mkdir()
    package = ["-m", "spacy", "package", tmp_path / "pipeline", tmp_path / "out", "--build", "sdist", "--force"]
    if not factory_entry_point_installed():  # until pyproject.toml's entry point is installed
        (tmp_path / "code.py").write_text("import spacy_bertram.pipeline.component\n", encoding="utf8")
        package += ["--code", tmp_path / "code.py"]
    run([sys.executable, *package], tmp_path)
    (sdist,) = (tmp_path / "out").glob("*/dist/*.tar.gz")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            sdist,
            "-w",
            tmp_path / "wheels",
        ],
        tmp_path,
    )
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    run([venv, "-m", "pip", "install", "-q", "--no-index", own_wheel, wheel], tmp_path, VENV_ENV)
    (tmp_path / "table" / "table.json").unlink()  # the installed package carries its own copy
    out = run_package(venv, f"en_{PACKAGE}", texts, tmp_path / "vectors.npz", tmp_path)
    assert "/venv/" in out["file"]  # the installed package, not the pipeline directory
    assert "/venv/" in out["own"] and "/venv/" in out["own_dist"]  # spacy-bertram from its wheel
    assert any(req.startswith("spacy-bertram") for req in out["requires"])
    assert out["cats"] == [d.cats for d in docs]
    expected = vectors_of(docs)
    assert expected and same(out["vectors"], expected)
    assert (out["vectors"]["1_2"] == 1.0).all()  # "quokka", from the table


def test_the_assembled_wheel_runs_without_its_model_directory_from_anywhere(  # noqa: F811
    bertram_dir, tiny_bert_path, tmp_path, monkeypatch, own_wheel, venv
):
    """docs/packaging.md's route: `assemble BASELINE "mödel dir" out` (bertram saved as added, never
    initialized), `spacy package --build wheel`, both wheels installed; the model directory removed, a
    doc run from another working directory gets the vectors the assembled pipeline gave."""
    baseline = make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path, textcat=True)
    baseline.remove_pipe("bertram")
    baseline.to_disk(tmp_path / "baseline")
    shutil.copytree(bertram_dir, tmp_path / "mödel dir")
    monkeypatch.chdir(tmp_path)
    result = invoke("assemble", "baseline", "mödel dir", "out")
    assert result.exit_code == 0, result.output
    texts = [TEXT, "A zorbing quokka."]
    docs = list(spacy.load("out/pipeline").pipe(texts))
    (tmp_path / "dist").mkdir()
    run(
        [
            sys.executable,
            "-m",
            "spacy",
            "package",
            "out/pipeline",
            "dist",
            "--code",
            "out/code.py",
            "--build",
            "wheel",
            "--force",
        ],
        tmp_path,
    )
    (wheel,) = (tmp_path / "dist").glob("*/dist/en_textcat_bertram-*.whl")
    run([venv, "-m", "pip", "install", "-q", "--no-index", own_wheel, wheel], tmp_path, VENV_ENV)
    shutil.rmtree(tmp_path / "mödel dir")
    (tmp_path / "elsewhere").mkdir()
    out = run_package(venv, "en_textcat_bertram", texts, tmp_path / "vectors.npz", tmp_path / "elsewhere")
    assert "/venv/" in out["file"] and "/venv/" in out["own"]
    expected = vectors_of(docs)
    assert "0_1" in expected and same(out["vectors"], expected)  # "kumquat": the model, not a missing one
    assert out["cats"] == [d.cats for d in docs]


def test_the_fresh_venv_sees_the_packages_of_a_virtualenv_it_is_made_from(tmp_path):
    """Run from a user's virtualenv, the fresh venv must see what is installed there, not the base's."""
    outer = tmp_path / "outer"
    run([sys.executable, "-m", "venv", "--without-pip", outer], tmp_path)
    purelib = run(
        [outer / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path
    ).strip()
    (Path(purelib) / "only_in_the_outer_venv.py").write_text("VALUE = 42\n", encoding="utf8")
    helper = Path(__file__).with_name("fresh_venv.py")
    inner = run([outer / "bin" / "python", helper, tmp_path / "inner", "--without-pip"], tmp_path).strip()
    assert run([inner, "-c", "import only_in_the_outer_venv as m; print(m.VALUE)"], tmp_path).strip() == "42"
