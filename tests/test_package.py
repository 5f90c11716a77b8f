"""`spacy package` builds a wheel of a bertram pipeline that installs in a fresh venv and loads.

Slow-but-run (about 40-50 s): spacy package (sdist; the wheel is built from it
with pip, which needs only setuptools, not the `build` package), a wheel of
spacy-bertram built from this checkout, a fresh venv that sees the packages of
the interpreter running the tests (torch, spaCy and the rest come from there,
whether that is the system Python or a virtualenv: see fresh_venv.py), and the
documented route (docs/packaging.md): `pip install` of both wheels in one
command, dependencies resolved (offline: `--no-index`), spacy-bertram from its
wheel into the venv.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from tests.fresh_venv import make_venv
from tests.util import TEXT, make_nlp, make_table

pytestmark = pytest.mark.slow  # builds venvs and wheels

PACKAGE = "bertram_pkg_test"


ROOT = Path(__file__).resolve().parents[1]


def run(cmd, cwd: Path, env=None) -> str:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd, env=env)
    assert result.returncode == 0, f"{cmd}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def factory_entry_point_installed() -> bool:
    return any(ep.name == "bertram" for ep in importlib.metadata.entry_points(group="spacy_factories"))


def test_packaged_wheel_installs_and_loads_in_a_fresh_venv(bertram_dir, tiny_bert_path, tmp_path):  # noqa: F811
    make_table(bertram_dir, ["quokka"], tmp_path / "table")  # the package ships the vector table
    nlp = make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path, textcat=True,
                   vector_table=str(tmp_path / "table"))
    nlp.meta["name"] = PACKAGE
    texts = [TEXT, "A zorbing quokka.", ""]
    docs = list(nlp.pipe(texts))
    nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "out").mkdir()
    package = ["-m", "spacy", "package", tmp_path / "pipeline", tmp_path / "out", "--build", "sdist", "--force"]
    if not factory_entry_point_installed():  # until setup.py declares the factory
        (tmp_path / "code.py").write_text("import spacy_bertram.pipeline.component\n", encoding="utf8")
        package += ["--code", tmp_path / "code.py"]
    run([sys.executable, *package], tmp_path)
    (sdist,) = (tmp_path / "out").glob("*/dist/*.tar.gz")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", sdist, "-w", tmp_path / "wheels"],
        tmp_path)
    (wheel,) = (tmp_path / "wheels").glob("*.whl")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", ROOT, "-w", tmp_path / "own"],
        tmp_path)
    (own,) = (tmp_path / "own").glob("spacy_bertram-*.whl")
    python = make_venv(tmp_path / "venv")
    # The venv's bundled setuptools is older than torch's requirement and would shadow the outer one.
    run([python, "-m", "pip", "uninstall", "-q", "-y", "setuptools"], tmp_path)
    venv_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the package from the venv only
    run([python, "-m", "pip", "install", "-q", "--no-index", own, wheel], tmp_path, venv_env)
    script = f"""
import importlib.metadata, json, sys, numpy, spacy
nlp = spacy.load("en_{PACKAGE}")
docs = list(nlp.pipe(json.loads(sys.argv[1])))
numpy.savez(sys.argv[2], **{{f"{{n}}_{{i}}": v for n, d in enumerate(docs) for i, v in d._.bertram.items()}})
import spacy_bertram
print(json.dumps({{"file": spacy.util.get_package_path("en_{PACKAGE}").as_posix(), "own": spacy_bertram.__file__,
                  "own_dist": str(importlib.metadata.distribution("spacy-bertram").locate_file("")),
                  "requires": importlib.metadata.requires("en_{PACKAGE}"), "cats": [d.cats for d in docs]}}))
"""
    (tmp_path / "table" / "table.json").unlink()  # the installed package carries its own copy
    out = json.loads(run([python, "-c", script, json.dumps(texts), tmp_path / "vectors.npz"], tmp_path, venv_env))
    assert "/venv/" in out["file"]  # the installed package, not the pipeline directory
    assert "/venv/" in out["own"] and "/venv/" in out["own_dist"]  # spacy-bertram from its wheel
    assert any(req.startswith("spacy-bertram") for req in out["requires"])
    assert out["cats"] == [d.cats for d in docs]
    loaded = numpy.load(tmp_path / "vectors.npz")
    expected = {f"{n}_{i}": v for n, d in enumerate(docs) for i, v in d._.bertram.items()}
    assert sorted(loaded.files) == sorted(expected) and expected
    assert all(numpy.array_equal(loaded[k], expected[k]) for k in expected)
    assert (loaded["1_2"] == 1.0).all()  # "quokka", from the table


def test_the_fresh_venv_sees_the_packages_of_a_virtualenv_it_is_made_from(tmp_path):
    """Run from a user's virtualenv, the fresh venv must see what is installed there, not the base's."""
    outer = tmp_path / "outer"
    run([sys.executable, "-m", "venv", "--without-pip", outer], tmp_path)
    purelib = run([outer / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                  tmp_path).strip()
    (Path(purelib) / "only_in_the_outer_venv.py").write_text("VALUE = 42\n", encoding="utf8")
    helper = Path(__file__).with_name("fresh_venv.py")
    inner = run([outer / "bin" / "python", helper, tmp_path / "inner", "--without-pip"], tmp_path).strip()
    assert run([inner, "-c", "import only_in_the_outer_venv as m; print(m.VALUE)"], tmp_path).strip() == "42"
