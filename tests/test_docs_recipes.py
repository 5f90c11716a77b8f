"""What the README and the docs show a user, run as written in fresh processes."""

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import srsly
from spacy.util import registry
from thinc.api import Config

import spacy_bertram.architectures  # noqa: F401  (registers spacy-bertram.memory_contexts.v1 in this process)

from spacy_bertram import ContextStore, load_bertram
from spacy_bertram.training.text_store import add_texts
from tests.util import (
    GLOSSARY,
    config_of_own_source,
    context_store_of,
    make_bertram_dir,
    make_nlp,
    markdown_blocks,
    recipe_of_own_source,
)

ROOT = Path(__file__).parent.parent

#: `debug config` resolves [training], whose corpora need a path (not a file): the data a user gives at train time.
PATHS = ["--paths.train", "train.spacy", "--paths.dev", "dev.spacy"]


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd)


#: The README's Python block names its model and the project command that makes it, and demo's tiny one.
README_MODEL = re.compile(
    r'^MODEL = "(?P<path>[^"]+)"\s+# made by `spacy project run (?P<workflow>\w+)`; '
    r'after `(?P<other>\w+)`: "(?P<other_path>[^"]+)"$',
    re.MULTILINE,
)


def readme_block_routes() -> list:
    """(the README's Python block with MODEL set for the route, the workflow, the model path) for the model it
    names and for the one its comment gives after the other workflow (demo)."""
    blocks = markdown_blocks(ROOT / "README.md", "python")
    assert len(blocks) == 1 and 'nlp.add_pipe("transformer"' in blocks[0]  # the README's one Python block
    (block,) = blocks
    match = README_MODEL.search(block)
    assert match, "the README's Python block sets MODEL, naming the command that makes it and demo's"
    other = block.replace(f'MODEL = "{match["path"]}"', f'MODEL = "{match["other_path"]}"', 1)
    return [(block, match["workflow"], match["path"]), (other, match["other"], match["other_path"])]


def models_written_by(workflow: str) -> set:
    """The BERTRAM model directories a project workflow writes: OUTPUT/model of each `spacy_bertram train
    CONTEXTS OUTPUT` in its commands' scripts."""
    project = srsly.read_yaml(ROOT / "project.yml")
    scripts = {command["name"]: command["script"] for command in project["commands"]}
    models = set()
    for name in project["workflows"][workflow]:
        for line in scripts[name]:
            words = shlex.split(line)
            if words[:4] == ["python", "-m", "spacy_bertram", "train"]:
                models.add(f"{words[5]}/model")
    return models


def test_the_readme_python_block_reads_the_model_the_command_it_names_writes():
    """After `spacy project run demo`, which the README calls a few-minute version of `all`, the block read
    training/bertram/model, which only `all` writes, and failed with E043. The block's MODEL is where the
    workflow its comment names writes its model, for `all` and for `demo` alike; the README's demo sentence
    names demo's model; and E043 says how to get a model."""
    routes = readme_block_routes()
    assert [workflow for _, workflow, _ in routes] == ["all", "demo"]
    for _, workflow, path in routes:
        assert path in models_written_by(workflow), (workflow, path, models_written_by(workflow))
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf8").split())
    demo_model = routes[1][2]
    assert "`python -m spacy project run demo` is a few-minute version of `all`" in readme
    assert f"`{demo_model}`" in readme.split("few-minute version of `all`", 1)[1][:200]
    with pytest.raises(ValueError, match=r"\[E043\].*spacy_bertram train.*spacy project run all.*demo") as err:
        load_bertram(ROOT / "no-such-dir" / "training" / "bertram" / "model")
    assert routes[0][2] in str(err.value) and demo_model in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("route", [0, 1], ids=["all", "demo"])
def test_the_readme_python_route_runs_as_written(tmp_path, route):
    """The README's Python block on a blank pipeline: the vector, the rare word and the encoder's output, with
    a model where the command its comment names writes it (after `all`, and after `demo` with MODEL set as the
    comment says)."""
    block, _, path = readme_block_routes()[route]
    make_bertram_dir(tmp_path / path, "default")  # untrained, on the embedded MiniLM
    result = run_python(block, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    shape, vectors, hidden = result.stdout.strip().splitlines()[-3:]
    assert shape == "(1, 384)"
    assert vectors.startswith("{'kumquat': array([")  # the one rare word of the sentence
    assert hidden.startswith("(1, ") and hidden.endswith(", 384)")  # one span of the short text, MiniLM's width


def test_the_documented_context_source_recipe_runs_in_python(tmp_path, bertram_dir, tiny_bert_path):
    """The docs' recipe in a fresh interpreter: `import spacy` and `import spacy_bertram`, nothing private."""
    (tmp_path / "my_sources.py").write_text(recipe_of_own_source(), encoding="utf8")
    (tmp_path / "glossary.tsv").write_text(GLOSSARY, encoding="utf8")
    contexts = config_of_own_source()
    assert contexts == {"@context_sources": "my_glossary.v1", "path": "glossary.tsv"}
    code = f"""
import json
import my_sources
import spacy

nlp = spacy.blank("en")
nlp.add_pipe("bertram", config={{"contexts": {json.dumps(contexts)},
                                  "model": {{"model_path": {bertram_dir!r}, "base_model": {tiny_bert_path!r}}}}})
nlp.initialize()
sources = nlp.get_pipe("bertram").word_sources
print(json.dumps([sources.source, sources.contexts_for(nlp.make_doc("A kumquat."), "kumquat", [1])]))
"""
    result = run_python(code, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    key, texts = json.loads(result.stdout.strip().splitlines()[-1])
    assert key == "glossary:glossary.tsv"
    assert texts == ["A kumquat is a small orange citrus fruit.", "Kumquats are eaten whole."]


def test_the_documented_memory_recipe_runs_as_written(tmp_path, bertram_dir):
    """docs/configuration.md's two passes with "memory", in a fresh interpreter, on the tiny model at the path the
    recipe names; and its config block builds the source it describes (nothing opened: no file written)."""
    doc = ROOT / "docs" / "configuration.md"
    (recipe,) = [block for block in markdown_blocks(doc, "python") if '"contexts": "memory"' in block]
    shutil.copytree(bertram_dir, tmp_path / "training" / "bertram" / "model")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", recipe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    remembered, stats, same = result.stdout.strip().splitlines()[-3:]
    sentences = [
        "We ate a kumquat at the market.",
        "The kumquat tree grew in the garden.",
        "A kumquat is a small orange fruit.",
        "She sold one kumquat.",
    ]
    assert ast.literal_eval(remembered) == sentences and same == "True"
    held = len("kumquat") + sum(len(sentence) for sentence in sentences)
    assert ast.literal_eval(stats) == {"words": 1, "contexts": 4, "bytes": held}
    (block,) = [block for block in markdown_blocks(doc, "ini") if "memory_contexts.v1" in block]
    contexts = Config().from_str("[components]\n[components.bertram]\n" + block)["components"]["bertram"]["contexts"]
    source = registry.resolve({"contexts": contexts})["contexts"]
    assert (source.window, source.max_per_word, source.max_words, source.recompute_at, source.path) == (
        10,
        8,
        10000,
        (1, 2, 4, 8),
        "memory.sqlite",
    )


def test_spacy_cli_creates_the_context_source_registry_for_code_files(tmp_path):
    """`spacy train --code` imports the file after spaCy's CLI loaded its plugins' `spacy_cli` entry points:
    a file that imports only spacy finds spacy.registry.context_sources (checked with `debug config --code`,
    which reads the code file the same way)."""
    (tmp_path / "only_spacy.py").write_text(
        'import spacy\n\n\n@spacy.registry.context_sources("toy.v1")\ndef toy():\n'
        '    return lambda doc, word, indices, limit: [f"A {word}."]\n',
        encoding="utf8",
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "spacy",
            "debug",
            "config",
            str(ROOT / "configs" / "textcat_minilm.cfg"),
            "--code",
            str(tmp_path / "only_spacy.py"),
            *PATHS,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "Config is valid" in result.stdout


#: spaCy's command line run as `python -m spacy` runs it (`setup_cli`: the plugins' `spacy_cli` entry points
#: loaded first), once per command line, in one process: a fresh interpreter per command cost 10 s each.
SPACY_COMMANDS = """
import json, sys
from spacy.cli._util import app, registry
from typer.main import get_command

registry.cli.get_all()
command = get_command(app)
codes = []
for argv in json.loads(sys.argv[1]):
    try:
        command(argv, prog_name="python -m spacy", standalone_mode=False)
        codes.append(0)
    except SystemExit as exit_:
        codes.append(exit_.code)
    except Exception as err:  # what `python -m spacy` would print as its traceback
        codes.append(f"{type(err).__name__}: {err}")
print(json.dumps(codes))
"""


@pytest.mark.slow
def test_every_example_config_fills_and_debugs(tmp_path):
    """`spacy init fill-config` and `spacy debug config` on each file in configs/: no BERTRAM model or store given
    (they are read at initialize), only the training data's paths that spaCy's own [training] needs to resolve."""
    names = sorted(path.name for path in (ROOT / "configs").glob("*.cfg"))
    argvs = []
    for name in names:
        argvs.append(["init", "fill-config", str(ROOT / "configs" / name), str(tmp_path / name)])
        argvs.append(["debug", "config", str(ROOT / "configs" / name), *PATHS])
    result = subprocess.run(
        [sys.executable, "-c", SPACY_COMMANDS, json.dumps(argvs)], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    codes = json.loads(result.stdout.strip().splitlines()[-1])
    assert codes == [0] * len(argvs), list(zip([" ".join(argv[:3]) for argv in argvs], codes))
    assert len(names) == 4 and "Config is valid" in result.stdout
    for name in names:
        assert Config().from_disk(tmp_path / name, interpolate=False)["nlp"]["pipeline"]


def json_objects(text: str) -> list:
    """The JSON objects printed one after another (each command's indented summary)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        value, at = decoder.raw_decode(text, at)
        found.append(value)
    return found


def run_bash(block: str, cwd: Path) -> subprocess.CompletedProcess:
    """A docs bash block as written, `python` being this interpreter, this checkout importable."""
    script = f'set -euo pipefail\npython() {{ {shlex.quote(sys.executable)} "$@"; }}\n{block}'
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd, env=env)


def test_the_own_texts_recipe_builds_grows_and_chains_a_store(tmp_path, monkeypatch, bertram_dir, tiny_bert_path):
    """docs/configuration.md's "Your own texts as contexts": its bash block as written (`python` is this
    interpreter), then its config with the store it built before a general one."""
    (block,) = [b for b in markdown_blocks(ROOT / "docs" / "configuration.md", "bash") if "my_texts.jsonl" in b]
    result = run_bash(block, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    built, added = json_objects(result.stdout)
    assert built["created"] and built["texts"] == 3 and not added["created"] and added["total_texts"] == 4
    with ContextStore.open(tmp_path / "my_texts.sqlite") as store:
        assert store.count("quokka") == 4 and len(store.contexts("quokka")) == 4 and store.meta["adds"] == "2"

    (ini,) = [b for b in markdown_blocks(ROOT / "docs" / "configuration.md", "ini") if "my_texts.sqlite" in b]
    contexts = Config().from_str("[components]\n[components.bertram]\n" + ini)["components"]["bertram"]["contexts"]
    (tmp_path / "general").mkdir()
    general = context_store_of(tmp_path / "general", [f"a quokka and a wallaby, day {i}" for i in range(6)])
    (tmp_path / "corpus" / "bertram").mkdir(parents=True)
    general.rename(tmp_path / "corpus" / "bertram" / "contexts.sqlite")
    monkeypatch.chdir(tmp_path)  # the config's paths are the recipe's, relative
    nlp = make_nlp(bertram_dir, tiny_bert_path, contexts=contexts)
    texts = nlp.get_pipe("bertram").word_sources.contexts_for(nlp.make_doc("A quokka."), "quokka", [1])
    assert len(texts) == 8 and all("Rottnest" in t or "sandwich" in t for t in texts[:4])
    assert all("wallaby, day" in t for t in texts[4:])


def test_the_configuration_recipe_precomputes_the_rare_words_of_own_texts(tmp_path, tiny_bert_path):
    """docs/configuration.md's `vectors --rare-only` on a store of your texts, as written: the table holds
    exactly the words the component calls rare in those texts, and says how many others it left out."""
    from spacy_bertram import VectorTable
    from spacy_bertram.explain import rule_pipeline

    (block,) = [
        b
        for b in markdown_blocks(ROOT / "docs" / "configuration.md", "bash")
        if "--rare-only" in b and "--then-store" not in b
    ]
    texts = [
        "The quokka smiled at the camera on Rottnest Island.",
        "A quokka is a small wallaby that lives on Rottnest Island.",
        "Rottnest ferries were full of people hoping to see a quokka.",
    ]
    (tmp_path / "my_texts").mkdir()
    (tmp_path / "my_texts" / "island.txt").write_text("\n".join(texts) + "\n", encoding="utf8")
    model = make_bertram_dir(tmp_path / "training" / "bertram" / "model", tiny_bert_path)
    result = run_bash(block, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    built, summary = json_objects(result.stdout)
    table = VectorTable.from_disk(tmp_path / "indomain_vectors")
    nlp, pipe = rule_pipeline(model)
    called = {doc[i].text.lower() for doc in map(nlp.make_doc, texts) for i in pipe.rare_tokens(doc)}
    assert {"quokka", "rottnest", "wallaby"} <= called and "the" not in called
    assert set(table.words) == called and summary["words"] == len(called)
    with ContextStore.open(tmp_path / "indomain.sqlite") as store:
        stored = [word for word, _ in store.counts()]
    assert "the" in stored and summary["not_rare"] == len(stored) - len(called) == table.meta["rare_only"]["not_rare"]
    (chained_block,) = [b for b in markdown_blocks(ROOT / "docs" / "configuration.md", "bash") if "--then-store" in b]
    general = ["A quokka slept under the bush at noon.", "Wallaby and quokka share the island."]
    (tmp_path / "corpus" / "bertram").mkdir(parents=True)
    add_texts(tmp_path / "corpus" / "bertram" / "contexts.sqlite", general, progress=False)
    result = run_bash(chained_block, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    chained = VectorTable.from_disk(tmp_path / "chained_vectors")
    assert chained.words == table.words and int(chained.meta["then_stores"][0]["total_words"]) > 0
    quokka = table.words.index("quokka")  # 3 contexts in the texts, 2 more behind them: another vector
    assert numpy.abs(chained.vectors[quokka] - table.vectors[quokka]).max() > 1e-4


def test_the_documented_resave_with_the_weighted_context_mean_runs_as_written(tmp_path, tiny_bert_path):
    """docs/evaluation.md's snippet that gives a saved model the context mean's defaults: run as written, the
    copy has them and keeps its counts (which weigh the context mean), and the original is untouched."""
    (recipe,) = [b for b in markdown_blocks(ROOT / "docs" / "evaluation.md", "python") if "context_mean_smoothing" in b]
    source = tmp_path / "training" / "bertram" / "model"
    make_bertram_dir(source, tiny_bert_path, counts={"the": 50, "market": 3})
    before = (source / "config.json").read_bytes()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", recipe], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (source / "config.json").read_bytes() == before
    saved = load_bertram(tmp_path / "training" / "bertram" / "model-weighted")
    assert (saved.config.context_mean_share, saved.config.context_mean_smoothing) == (0.7, 1e-4)
    assert saved.context_word_counts.counts == {"the": 50, "market": 3}


def test_the_documented_count_of_substitutes_without_store_contexts_runs_as_written(tmp_path):
    """docs/evaluation.md's count of the rarified sets' synonym substitutes by their contexts in the general store,
    run as written in a project-like checkout: every seed's set is read, misspellings are not counted."""
    (recipe,) = [b for b in markdown_blocks(ROOT / "docs" / "evaluation.md", "python") if "open_context_store" in b]

    def item(*substitutions):
        subs = [{"substitute": word, "kind": kind} for word, kind in substitutions]
        return json.dumps({"id": "x", "text": "t", "substitutions": subs}) + "\n"

    for directory, lines in {
        "corpus/bbc/rarified": [item(("Quokka", "synonym"), ("teh", "misspelling"))],
        "corpus/bbc/rarified/seed-1": [item(("wombat", "synonym")), item(("numbat", "synonym"))],
        "corpus/rotten_tomatoes/rarified-zipf3": [item(("quokka", "synonym"))],
    }.items():
        (tmp_path / directory).mkdir(parents=True)
        (tmp_path / directory / "test.jsonl").write_text("".join(lines), encoding="utf8")
    store = tmp_path / "corpus" / "bertram-eval" / "contexts.sqlite"
    store.parent.mkdir(parents=True)
    add_texts(store, ["a quokka here", "the quokka there", "one wombat"], progress=False)
    result = run_python(recipe, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    # quokka twice (2 contexts each), wombat once (1), numbat never (0); the misspelling is not a synonym
    assert result.stdout.strip() == "4 [(0, 1), (1, 1), (2, 2)]"
