"""The command line and project.yml: commands on tiny data, --gpu-id passthrough, bad input."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Optional

import pytest
import srsly
import typer.main

from spacy_bertram.cli import app

from tests.util import APPS, EXPERIMENT_COMMANDS, context_store_of, invoke, module_of, runner


ROOT = Path(__file__).parent.parent


#: What `split` writes and the later steps read.
SPLIT_FILES = ["train.spacy", "dev.spacy", "train.jsonl", "dev.jsonl", "test_candidates.jsonl"]
#: Commands that run a model, and the option that selects its device.
MODEL_STEPS = {
    "train",
    "targets",
    "train-baseline",
    "rarify",
    "evaluate",
    "similarity",
    "intrinsic",
    "vectors",
    "label-curve",
}


def tiny_jsonl(path: Path, extra=()) -> Path:
    rows = []
    for i in range(30):
        food = i % 2 == 1
        word = ["apple", "lemon", "orange"][i % 3] if food else ["cat", "dog", "fox"][i % 3]
        rows.append(
            {
                "text": f"the {word} was good and the {word} was big",
                "label": "food" if food else "animal",
                "id": f"r{i}",
                "split": "test" if i % 5 == 0 else "train",
            }
        )
    rows.extend(extra)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf8")
    return path


def test_help_lists_every_command():
    """The plugin's command line makes and inspects a model; the experiments' runs the paper's measurements."""
    result = invoke("--help")
    assert result.exit_code == 0
    for name in ("prepare", "targets", "train", "vectors", "dictionary", "rare-words"):
        assert re.search(rf"\b{name}\b", result.output)
    for name in ("split", "train-baseline", "rarify", "evaluate", "pool", "similarity", "intrinsic", "report"):
        assert not re.search(rf"\b{name}\b", result.output), name
    result = runner.invoke(APPS["bertram_experiments"], ["--help"])
    for name in (
        "split",
        "train-baseline",
        "rarify",
        "evaluate",
        "pool",
        "similarity",
        "intrinsic",
        "report",
        "assemble",
        "synonym-recovery",
        "ner-train",
    ):
        assert re.search(rf"\b{name}\b", result.output), name


COMMANDS = sorted({*typer.main.get_command(app).commands, *EXPERIMENT_COMMANDS})


def command_of(command: str):
    """The click command `command` names, on the command line it lives on."""
    return typer.main.get_command(APPS[module_of(command)]).commands[command]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_shows_each_options_default_and_meaning(command):
    """One typer app: every command's --help names the program and says what each option means and defaults to."""
    module = module_of(command)
    result = runner.invoke(APPS[module], [command, "--help"], prog_name=f"python -m {module}")
    assert result.exit_code == 0
    assert f"Usage: python -m {module} {command}" in result.output
    for param in command_of(command).params:
        assert param.help, f"{command}: {param.name} has no help"
        if param.param_type_name == "option" and not param.is_flag and not param.required:
            assert param.show_default, f"{command}: --{param.name} hides its default"
    assert "[default: " in result.output


def squeezed(text: str) -> str:
    """`text` without whitespace: what the wrapped help says, wherever its lines break."""
    return "".join(text.split())


def shown_default(param) -> Optional[str]:
    """The default `--help` must show for an option, or None where it shows none (a lone flag, no default)."""
    if isinstance(param.show_default, str):
        return param.show_default
    if (
        param.required
        or param.default is None
        or not param.show_default
        or (param.is_flag and not param.secondary_opts)
    ):
        return None
    if param.is_flag:  # --seed-sets/--no-seed-sets: the switch that is on
        return (param.opts if param.default else param.secondary_opts)[0].lstrip("-")
    if isinstance(param.default, (list, tuple)):
        return ", ".join(map(str, param.default))
    return str(param.default)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_at_80_columns_cuts_nothing(command):
    """At COLUMNS=80 typer's boxed tables cut option names, words and defaults ("baseline,bertram_repl…");
    the plain help wraps them: every line fits, every option and its default are there whole."""
    module = module_of(command)
    result = runner.invoke(APPS[module], [command, "--help"], prog_name=f"python -m {module}", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80, result.output
    text = squeezed(result.output)
    options = [p for p in command_of(command).params if p.param_type_name == "option"]
    for param in options:
        assert all(name in text for name in param.opts + param.secondary_opts), (command, param.name)
        default = shown_default(param)
        if default is not None:
            # "[default: 60]", or "[default: 60; x>=0]" where typer shows the option's range
            assert squeezed(f"[default: {default}]") in text or squeezed(f"[default: {default};") in text, (
                command,
                param.name,
                default,
            )


@pytest.mark.parametrize("module", sorted(APPS))
def test_command_list_at_80_columns_shows_each_summary_whole(module):
    """click cut each command's summary to one line ending in "..."; the list wraps it instead."""
    result = runner.invoke(APPS[module], ["--help"], prog_name=f"python -m {module}", env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.output
    assert max(len(line) for line in result.output.splitlines()) <= 80, result.output
    for name, command in typer.main.get_command(APPS[module]).commands.items():
        summary = command.help.split("\n\n")[0]
        assert squeezed(f"{name} {summary}") in squeezed(result.output), name


@pytest.mark.parametrize("module", sorted(APPS))
def test_python_m_help_lists_every_command_under_its_real_name(module):
    import os
    import subprocess
    import sys

    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        check=True,
    ).stdout
    assert f"Usage: python -m {module}" in out
    for command in typer.main.get_command(APPS[module]).commands:
        assert re.search(rf"\b{re.escape(command)}\b", out), command
    assert {
        "prepare",
        "targets",
        "train",
        "vectors",
        "split",
        "train-baseline",
        "rarify",
        "evaluate",
        "pool",
        "similarity",
        "intrinsic",
        "report",
        "assemble",
    } <= set(COMMANDS)


HELP_CHECK = """
import json, sys
from spacy_bertram.cli import main as plugin_main
from bertram_experiments.cli import main as experiments_main
for module, argv in json.loads(sys.argv[1]):
    main = plugin_main if module == "spacy_bertram" else experiments_main
    try:
        main(argv)
    except SystemExit as exit_:
        assert exit_.code in (0, None), (argv, exit_.code)
print(json.dumps(sorted(m for m in ("torch", "transformers", "spacy", "spacy_transformers", "thinc", "dask")
                        if m in sys.modules)))
"""


def test_help_imports_no_heavy_module():
    """`--help` of the app and of every command imports neither torch nor transformers nor spaCy:
    they took about 7-10 s to import before the help appeared (now about 0.5 s)."""
    import os
    import subprocess
    import sys

    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    argvs = [[module, ["--help"]] for module in APPS]
    argvs += [[module_of(command), [command, "--help"]] for command in COMMANDS]
    out = subprocess.run(
        [sys.executable, "-c", HELP_CHECK, json.dumps(argvs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
        check=True,
    ).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_model_steps_accept_gpu_id():
    for command in ("train-baseline", "rarify", "evaluate", "similarity", "intrinsic"):
        result = invoke(command, "--help")
        assert result.exit_code == 0 and "--gpu-id" in result.output, command


def _project_scripts():
    project = srsly.read_yaml(ROOT / "project.yml")
    for command in project["commands"]:
        for line in command["script"]:
            yield command["name"], shlex.split(line)


def test_project_passes_gpu_id_to_every_training_and_evaluation_step():
    seen = set()
    for name, argv in _project_scripts():
        if argv[:2] == ["python", "-m"] and argv[2] in APPS and argv[3] in MODEL_STEPS:
            seen.add(argv[3])
            assert "--gpu-id" in argv, f"{name}: {argv[3]} without --gpu-id"
            assert argv[argv.index("--gpu-id") + 1] == "${vars.gpu_id}", name
        assert "spacy train" not in " ".join(argv), f"{name}: use train-baseline (frozen embeddings)"
    assert {"train", "train-baseline", "rarify", "evaluate", "similarity", "intrinsic"} <= seen


def test_project_file_passes_weasels_own_validation():
    """`spacy project run` validates the whole file first: a workflow named like a
    command (or any schema error) would stop every step, `all` included."""
    from weasel.schemas import ProjectConfigSchema, validate
    from weasel.util.validation import validate_project_commands

    project = srsly.read_yaml(ROOT / "project.yml")
    assert validate(ProjectConfigSchema, project) == []
    validate_project_commands(project)  # exits (SystemExit) on a clash


def test_project_workflows_and_vars():
    project = srsly.read_yaml(ROOT / "project.yml")
    names = {c["name"] for c in project["commands"]}
    for workflow, steps in project["workflows"].items():
        assert set(steps) <= names, workflow
    # weasel refuses a project whose workflow shares a command's name
    assert not set(project["workflows"]) & names
    assert project["workflows"]["all"][:3] == ["corpus", "prepare", "train-bertram"]
    assert project["workflows"]["all"][-1] == "package"
    assert {"base_model", "gpu_id", "max_zipf", "rare_zipf", "rare_zipf_high", "contexts_per_word", "seed"} <= set(
        project["vars"]
    )
    for command in project["commands"]:
        if command["name"] not in ("corpus",):
            assert command.get("outputs"), command["name"]
    # every option the project passes exists on the command it calls
    for name, argv in _project_scripts():
        if (
            argv[:2] == ["python", "-m"]
            and argv[2] in APPS
            and argv[3]
            in (
                "split",
                "train-baseline",
                "rarify",
                "evaluate",
                "similarity",
                "intrinsic",
                "report",
                "assemble",
                "pool",
                "vectors",
                "label-curve",
                "label-curve-report",
            )
        ):
            help_text = invoke(argv[3], "--help").output
            for option in (a for a in argv[4:] if a.startswith("--")):
                assert option in help_text, f"{name}: {argv[3]} has no {option}"


def test_gpu_id_reaches_spacy(monkeypatch, tmp_path):
    """--gpu-id is handed to spaCy: spacy train's use_gpu, thinc's require_gpu (through
    spacy_bertram.device, which checks the id first) elsewhere. CUDA is faked."""
    import spacy.cli.train
    import torch

    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda i: None)

    class Stop(Exception):
        pass

    def fake_train(config_path, output_path, use_gpu=-1, overrides=None):
        calls.append(("train", use_gpu))
        raise Stop()

    def fake_require_gpu(gpu_id=0):
        calls.append(("require_gpu", gpu_id))
        if ("train", 0) in calls:  # train-baseline checks the id, then spaCy's train gets it
            raise Stop()
        return True

    monkeypatch.setattr(spacy.cli.train, "train", fake_train)
    monkeypatch.setattr("thinc.api.require_gpu", fake_require_gpu)
    splits = tmp_path / "splits"
    assert invoke("split", tiny_jsonl(tmp_path / "d.jsonl"), splits).exit_code == 0
    result = invoke("train-baseline", splits, tmp_path / "m", "--gpu-id", "0")
    assert isinstance(result.exception, Stop)
    counts = tmp_path / "counts.tsv"
    counts.write_text("the\t10\n", encoding="utf8")
    rarified = tmp_path / "r"
    rarified.mkdir()
    (rarified / "test.jsonl").write_text(
        json.dumps({"id": "1", "label": "food", "text": "the apple", "substitutions": []}) + "\n", encoding="utf8"
    )
    result = invoke("rarify", tmp_path / "m", splits, tmp_path / "out", "--counts", counts, "--gpu-id", "0")
    assert isinstance(result.exception, Stop)
    result = invoke("evaluate", tmp_path / "m", rarified, tmp_path / "e", "--systems", "baseline", "--gpu-id", "0")
    assert isinstance(result.exception, Stop)
    assert calls == [("require_gpu", 0), ("train", 0), ("require_gpu", 0), ("require_gpu", 0)]


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a torch without CUDA")
def test_every_command_refuses_a_gpu_this_torch_lacks_before_writing(tmp_path, bertram_dir):
    """On a CPU-only torch, `vectors --gpu-id 0` failed with "Torch not compiled with CUDA enabled"
    and left OUT/shards/; every command that takes --gpu-id now refuses it first, by name (after the
    input paths, which are checked first: a real model and store here)."""
    for name, files in (("splits", SPLIT_FILES), ("rarified", ["test.jsonl"]), ("folds", ["folds.json"])):
        (tmp_path / name).mkdir()
        for file in files:
            (tmp_path / name / file).write_text("", encoding="utf8")
    m, s, out = Path(bertram_dir), context_store_of(tmp_path, ["a kumquat grew in the garden"] * 3), tmp_path / "out"
    argvs = {
        "targets": [s, out],
        "train": [s, out],
        "vectors": [m, s, out, "--workers", "0"],
        "train-baseline": [tmp_path / "splits", out],
        "rarify": [m, tmp_path / "splits", out, "--counts", s],
        "evaluate": [m, tmp_path / "rarified", out],
        "evaluate-originals": [m, tmp_path / "splits", out, "--bertram", m],
        "similarity": [s, s, m],
        "intrinsic": [m, "--output", out / "m.json"],
        "ner-train": [tmp_path / "folds", out, "--bertram", m],
        "ner-evaluate": [tmp_path / "folds", m, out],
        "ner-full-evaluate": [tmp_path / "folds", m, out],
        "label-curve": [
            "textcat",
            tmp_path / "splits",
            out / "runs",
            out,
            "--bertram",
            m,
            "--stock-config",
            m,
            "--bertram-config",
            m,
        ],
        "synonym-recovery": [m, "--rarified", tmp_path / "rarified", "--output", out / "m.json"],
    }
    takes_gpu = {
        name
        for cli in APPS.values()
        for name, command in typer.main.get_command(cli).commands.items()
        if any("--gpu-id" in param.opts for param in command.params)
    }
    assert set(argvs) == takes_gpu
    for command, argv in argvs.items():
        result = invoke(command, *argv, "--gpu-id", "0")
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), (command, result.exception)
        assert "[E117] --gpu-id 0 asks for CUDA device 0, but this torch" in result.output, command
        assert not out.exists(), command


def test_split_command_and_bad_datasets(tmp_path):
    result = invoke(
        "split",
        tiny_jsonl(tmp_path / "d.jsonl", extra=[{"text": "", "label": "food"}]),
        tmp_path / "s",
        "--max-words",
        "5",
    )
    assert result.exit_code == 0, result.output
    info = json.loads((tmp_path / "s" / "splits.json").read_text())
    assert info["skipped_empty"] == 1 and info["train"] + info["dev"] + info["test_candidates"] == 30
    assert all(len(r["text"].split()) <= 5 for r in map(json.loads, open(tmp_path / "s" / "train.jsonl")))
    unseen = [{"text": "the moon", "label": "space", "split": "test"}]
    result = invoke("split", tiny_jsonl(tmp_path / "u.jsonl", extra=unseen), tmp_path / "u")
    assert result.exit_code == 1 and "never seen in training" in result.output
    result = invoke("split", "bbc", tmp_path / "x", "--assets", tmp_path / "no-assets")
    assert result.exit_code == 1 and "build_corpus.py" in result.output


def test_rarify_says_how_to_install_wordnet(tmp_path):
    splits = tmp_path / "splits"
    assert invoke("split", tiny_jsonl(tmp_path / "d.jsonl"), splits).exit_code == 0
    counts = tmp_path / "counts.tsv"
    counts.write_text("the\t10\n", encoding="utf8")
    result = invoke(
        "rarify",
        tmp_path / "model",
        splits,
        tmp_path / "out",
        "--counts",
        counts,
        "--wordnet-dir",
        tmp_path / "no-wordnet",
    )
    assert result.exit_code == 1
    assert "WordNet 3.0 was not found" in result.output and "apt-get install" in result.output
    result = invoke("rarify", tmp_path / "model", splits, tmp_path / "out", "--counts", tmp_path / "none.tsv")
    assert result.exit_code == 1 and "prepare step" in result.output


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_bert_path):
    """split + train-baseline through the CLI on tiny data with the tiny BERT."""
    root = tmp_path_factory.mktemp("cli")
    assert invoke("split", tiny_jsonl(root / "d.jsonl"), root / "splits", "--seed", "1").exit_code == 0
    result = invoke(
        "train-baseline",
        root / "splits",
        root / "baseline",
        "--config",
        ROOT / "configs" / "textcat_minilm.cfg",
        "--base-model",
        tiny_bert_path,
        "--max-steps",
        "4",
        "--eval-frequency",
        "2",
        "--batch-size",
        "200",
        "--learn-rate",
        "0.001",
    )
    assert result.exit_code == 0, result.output
    return root


@pytest.mark.slow
def test_cli_baseline_rarify_evaluate_report_on_tiny_data(tiny_run, tmp_path, monkeypatch, flipping_classifier):
    from spacy_bertram.dictionary.wordnet import wordnet_available

    info = json.loads((tiny_run / "baseline" / "baseline.json").read_text())
    assert info["embedding_drift"] == 0.0 and (tiny_run / "baseline" / "model-best" / "meta.json").is_file()
    if not wordnet_available():
        pytest.skip("WordNet 3.0 is not installed")
    # A word with no synonym anywhere ("the", "was") is never masked; the flipping
    # classifier turns every candidate once "big" is masked.
    counts = tmp_path / "counts.tsv"
    counts.write_text("the\t1000\nwas\t1000\n", encoding="utf8")
    result = invoke(
        "rarify",
        tiny_run / "baseline" / "model-best",
        tiny_run / "splits",
        tmp_path / "rar",
        "--counts",
        counts,
        "--no-progress",
        "--seed",
        "0,1",
        "--max-zipf",
        "6",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "rar" / "rarify.json").read_text())
    assert summary["n_items"] >= 1 and (tmp_path / "rar" / "test.spacy").is_file()
    assert summary["seed_sets"] == ["seed-1"] and (tmp_path / "rar" / "seed-1" / "test.jsonl").is_file()
    metrics_dir = tmp_path / "metrics" / "tiny"
    result = invoke(
        "evaluate",
        tiny_run / "baseline" / "model-best",
        tmp_path / "rar",
        metrics_dir,
        "--systems",
        "baseline",
        "--bootstrap-resamples",
        "100",
    )
    assert result.exit_code == 0, result.output
    assert (metrics_dir / "seed-1" / "predictions.jsonl").is_file()
    result = invoke("pool", metrics_dir, "--output", tmp_path / "metrics" / "pooled", "--bootstrap-resamples", "100")
    assert result.exit_code == 0, result.output
    assert f"Pooled over 2 rarified sets: {2 * summary['n_items']} items" in result.output
    monkeypatch.chdir(tmp_path)
    result = invoke(
        "report",
        "report.md",
        "--datasets",
        "tiny",
        "--corpus-dir",
        tmp_path,
        "--metrics-dir",
        tmp_path / "metrics",
        "--pooled",
        tmp_path / "metrics" / "pooled" / "pooled.json",
    )
    assert result.exit_code == 0 and "| baseline (stock textcat) |" in result.output
    assert result.output.index("## Pooled") < result.output.index("## tiny")
    result = invoke("pool", tmp_path / "nothing")
    assert result.exit_code == 1 and "run the evaluate step" in result.output


def test_report_without_any_evaluation_fails_clearly(tmp_path):
    result = invoke("report", tmp_path / "r.md", "--datasets", "bbc", "--metrics-dir", tmp_path)
    assert result.exit_code == 1 and "has been evaluated" in result.output


def test_similarity_with_too_few_pairs_fails_cleanly(tmp_path, bertram_dir):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("word1\tword2\tscore\ncat\tkumquat\t3.5\n", encoding="utf8")
    result = invoke("similarity", str(pairs), str(tmp_path), bertram_dir)
    assert result.exit_code == 1
    assert "error:" in result.output and "at least two" in result.output


def test_assemble_help_lists_the_modes_it_accepts():
    """The help and the check read the one list the architecture checks; the defaults: recentre, no contexts."""
    from spacy_bertram.types import DEFAULT_INJECTION, INJECTION_MODES

    result = runner.invoke(APPS["bertram_experiments"], ["assemble", "--help"], terminal_width=200)
    assert result.exit_code == 0
    line = " ".join(result.output.split())
    assert ", ".join(INJECTION_MODES) in line and f"[default: {DEFAULT_INJECTION}]" in line
    assert DEFAULT_INJECTION == "recentre" and "slash or replace" not in line
    assert "[default: none]" in line  # --contexts: the spelling alone, the component's default
