"""The injecting TransformerModel on spacy-transformers' public API: the package imports only names it exports,
the batch is tokenized once, no mode changes a batch without vectors, no private name of spacy-transformers,
thinc or spaCy is used, and the injection tests pass on the oldest and newest spacy-transformers the pins allow."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import numpy
import pytest
import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from spacy_transformers import FullTransformerBatch, TransformerModel
from thinc.api import Adam

from spacy_bertram.architectures import stock_span_getter
from spacy_bertram.injection import BertramTransformerModel
from spacy_bertram.injection.model import replace_listener_cfg
from spacy_bertram.injection.wordpieces import has_vectors
from tests.fresh_venv import make_venv

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "spacy_bertram"
MODES = ("none", "recentre", "slash", "replace")
TEXTS = [
    "the farmer sold kumquats at the market",
    "the old man and the red dog walked to the city by the river and saw many birds",
    "kumquats",
    "a",
]
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


# -- no private names of the libraries the plugin builds on -----------------------------------------

#: The libraries whose private names (a module or name starting with "_") the plugin must not use.
LIBRARIES = ("spacy_transformers", "thinc", "spacy")
#: Private attributes of spacy-transformers' objects, reached without an import.
PRIVATE_ATTRIBUTES = re.compile(r"\._hfmodel\b|\._init_(tokenizer|transformer)_config\b")
#: A private module named in a string (importlib) or a comment's import line.
PRIVATE_MODULE_TEXT = re.compile(r"\b(?:spacy_transformers|thinc|spacy)(?:\.\w+)*\._[a-z]\w*")


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> Iterator[Tuple[int, str]]:
    """(line, what) of each private module or name of LIBRARIES that `source` imports or reaches."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] in LIBRARIES and (any(_private(p) for p in parts) or any(_private(a.name) for a in node.names)):
                yield node.lineno, f"from {node.module} import {', '.join(a.name for a in node.names)}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in LIBRARIES and any(_private(p) for p in parts):
                    yield node.lineno, f"import {alias.name}"
    for number, line in enumerate(source.splitlines(), 1):
        for pattern in (PRIVATE_ATTRIBUTES, PRIVATE_MODULE_TEXT):
            for match in pattern.finditer(line):
                yield number, match.group(0)


def test_the_scan_finds_private_imports():
    source = (
        "from spacy_transformers.layers._util import replace_listener_cfg\n"
        "from spacy_transformers.layers.transformer_model import (\n    TransformerModel,\n    _convert_x,\n)\n"
        "import thinc._private.mod\n"
        "hf = model.shims[0]._hfmodel.transformer\n"
        "importlib.import_module('spacy._ml')\n"
        "from spacy_transformers.layers import TransformerModel\n"
        "from spacy import __version__\n"
        "from numpy import _private\n"
    )
    found = sorted({line for line, _ in private_uses(source)})
    assert found == [1, 2, 6, 7, 8]


def test_the_package_uses_no_private_name_of_spacy_transformers_thinc_or_spacy():
    """What spacy-transformers, thinc and spaCy keep private may change in any release: the plugin uses their
    public API only."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, what in private_uses(path.read_text(encoding="utf8"))
    ]
    assert offenders == []


#: Every name the package imports from spacy-transformers: names its package and its `layers` export
#: (`__all__`) and its data classes. Nothing else: its functions for tokenizing, aligning and truncating,
#: and its forward, are internals that change between releases; its default spans are read from its
#: factory's default config (`architectures.stock_span_getter`).
SPACY_TRANSFORMERS_IMPORTS = {
    ("spacy_transformers", "FullTransformerBatch"),
    ("spacy_transformers", "TransformerModel"),
    ("spacy_transformers.data_classes", "WordpieceBatch"),
    ("spacy_transformers.layers", "split_trf_batch"),
    ("spacy_transformers.layers", "trfs2arrays"),
}


def spacy_transformers_imports() -> set:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "spacy_transformers":
                found.update((node.module, alias.name) for alias in node.names)
            elif isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "spacy_transformers" for a in node.names), path
    return found


def test_the_package_imports_only_what_spacy_transformers_exports():
    import dataclasses
    import importlib

    assert spacy_transformers_imports() == SPACY_TRANSFORMERS_IMPORTS
    stock = Language.get_factory_meta("transformer").default_config["model"]["get_spans"]
    assert stock["@span_getters"] == "spacy-transformers.strided_spans.v1"
    docs = [spacy.blank("en")(" ".join(["word"] * 300))]
    assert [[(s.start, s.end) for s in spans] for spans in stock_span_getter()(docs)] == [
        [(s.start, s.end) for s in spans] for spans in registry.resolve({"g": stock})["g"](docs)
    ]
    for module_name, name in SPACY_TRANSFORMERS_IMPORTS:
        module = importlib.import_module(module_name)
        if module_name.endswith("data_classes"):
            assert dataclasses.is_dataclass(getattr(module, name))
        else:
            assert name in module.__all__, (module_name, name)


# -- pipelines --------------------------------------------------------------------------------------


def make_pipeline(
    path: str,
    injection: Optional[str],
    tagger: bool = True,
    window: int = 6,
    stride: int = 4,
    transformer_config: Optional[dict] = None,
) -> spacy.Language:
    """A transformer (stock v3 for injection None) and a tagger listening to it, initialized with seed 0."""
    model = {
        "@architectures": "spacy-transformers.TransformerModel.v3",
        "name": path,
        "tokenizer_config": {"use_fast": True},
        "transformer_config": dict(transformer_config or {}),
        "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": window, "stride": stride},
    }
    if injection is not None:
        model.update({"@architectures": "spacy-bertram.TransformerModel.v1", "injection": injection})
    nlp = spacy.blank("en")
    nlp.add_pipe("transformer", config={"model": model})
    if tagger:
        listener = {
            "@architectures": "spacy-transformers.TransformerListener.v1",
            "grad_factor": 1.0,
            "pooling": {"@layers": "reduce_mean.v1"},
        }
        nlp.add_pipe("tagger", config={"model": {"@architectures": "spacy.Tagger.v2", "tok2vec": listener}})
        for label in ("N", "V", "D"):
            nlp.get_pipe("tagger").add_label(label)
    spacy.util.fix_random_seed(0)
    nlp.initialize()
    return nlp


def docs_for(nlp: spacy.Language, vectors: List[Optional[Dict[int, numpy.ndarray]]]) -> List[Doc]:
    docs = [nlp.make_doc(text) for text in TEXTS]
    for doc, vecs in zip(docs, vectors):
        doc._.bertram = vecs
    return docs


def vec(seed: int, width: int = 32) -> numpy.ndarray:
    return numpy.random.default_rng(seed).normal(size=width).astype("float32")


def transformer_of(nlp: spacy.Language) -> TransformerModel:
    return nlp.get_pipe("transformer").model


@pytest.fixture(scope="module")
def stock_nlp(tiny_encoder_path):
    return make_pipeline(tiny_encoder_path, None)


@pytest.mark.parametrize("mode", MODES)
def test_a_pipeline_without_vectors_is_bit_identical_to_stock(tiny_encoder_path, stock_nlp, mode):
    """doc._.trf_data and the listener's outputs in prediction, and a training step, as the stock pipeline's
    ("none" with vectors there: it ignores them)."""
    nlp = make_pipeline(tiny_encoder_path, mode)
    vectors = [{3: vec(0)}, {1: vec(1)}, None, {}] if mode == "none" else [None, {}, None, {}]
    ours = list(nlp.pipe(docs_for(nlp, vectors)))
    ref = list(stock_nlp.pipe(docs_for(stock_nlp, [None] * len(TEXTS))))
    for a, b in zip(ours, ref):
        assert a._.trf_data.wordpieces.strings == b._.trf_data.wordpieces.strings
        assert len(a._.trf_data.tensors) == len(b._.trf_data.tensors)
        for x, y in zip(a._.trf_data.tensors, b._.trf_data.tensors):
            assert numpy.array_equal(numpy.asarray(x), numpy.asarray(y))
        assert [t.tag_ for t in a] == [t.tag_ for t in b]
    listener = nlp.get_pipe("tagger").model.get_ref("tok2vec")
    ref_listener = stock_nlp.get_pipe("tagger").model.get_ref("tok2vec")
    for x, y in zip(listener.predict(ours), ref_listener.predict(ref)):
        assert numpy.array_equal(x, y)
    # Training steps, same seeds (both initialized with seed 0): same losses, same weights after. The tagger's
    # output layer starts at zero, so the transformer's weights move from the third step on.
    runs = []
    for pipeline, vecs in ((nlp, vectors), (make_pipeline(tiny_encoder_path, None), [None] * len(TEXTS))):
        weight = transformer_of(pipeline).transformer.encoder.layer[0].output.dense.weight
        before = weight.detach().clone()
        optimizer = Adam(1e-3)
        torch.manual_seed(7)
        losses: List[Dict[str, float]] = []
        for _ in range(3):
            examples = [
                Example.from_dict(doc, {"tags": (["N", "V"] * len(doc))[: len(doc)]})
                for doc in docs_for(pipeline, vecs)
            ]
            losses.append({})
            pipeline.update(examples, sgd=optimizer, losses=losses[-1])
        assert not torch.equal(before, weight)
        runs.append((losses, weight.detach()))
    assert runs[0][0] == runs[1][0]
    assert torch.equal(runs[0][1], runs[1][1])


# -- recentre: the stock forward plus the shifts ----------------------------------------------------


def expected_recentre(
    stock: TransformerModel, docs: List[Doc], vectors: List[Dict[int, numpy.ndarray]], is_train: bool = False
) -> Tuple[FullTransformerBatch, torch.Tensor]:
    """The stock model run by hand on inputs_embeds = embeddings + shifts, each injected word's pieces moved by
    v - (their mean) in every span that holds them; returns the stock batch and the last hidden state."""
    batch = stock.predict(docs)
    hf = stock.transformer
    ids = torch.as_tensor(numpy.asarray(batch.wordpieces.input_ids))
    mask = torch.as_tensor(numpy.asarray(batch.wordpieces.attention_mask))
    length = ids.shape[1]
    table = hf.get_input_embeddings().weight.detach()
    shifts = torch.zeros(*ids.shape, table.shape[1])
    offset = 0
    for doc, doc_vectors in zip(docs, vectors):
        for i, v in (doc_vectors or {}).items():
            flat = numpy.asarray(batch.align[offset + i].data).ravel()
            for row in sorted(set(int(f) // length for f in flat)):
                cols = [int(f) % length for f in flat if int(f) // length == row]
                mean = table[ids[row, cols]].mean(0)
                shifts[row, cols] += torch.as_tensor(v) - mean
        offset += len(doc)
    kwargs = {"attention_mask": mask}
    if hf.config.model_type == "roberta":  # the positions it counts from input_ids: after the padding index,
        real = (ids != hf.config.pad_token_id).long()  # padding left at it (from inputs_embeds it cannot tell)
        kwargs["position_ids"] = torch.cumsum(real, dim=1) * real + hf.config.pad_token_id
    if batch.wordpieces.token_type_ids is not None:
        kwargs["token_type_ids"] = torch.as_tensor(numpy.asarray(batch.wordpieces.token_type_ids))
    hf.train(is_train)
    embeds = hf.get_input_embeddings()(ids) + shifts
    out = hf(inputs_embeds=embeds, **kwargs).last_hidden_state
    hf.train(True)
    return batch, out


RARE_VECTORS = [{3: vec(0), 5: vec(1)}, {2: vec(2), 9: vec(3), 16: vec(4)}, {0: vec(5)}, None]


def test_recentre_is_the_encoder_on_shifted_embeddings_from_one_tokenization(tiny_encoder_path, monkeypatch):
    """Strided spans (a word in two spans is shifted in both), padded rows, several words per row: the outputs,
    padding included, are the HF model's on embeddings + shifts (as the earlier implementation gave), and the
    batch is tokenized once."""
    from spacy_bertram.injection import wordpieces as wordpieces_module

    nlp = make_pipeline(tiny_encoder_path, "recentre", tagger=False)
    stock = transformer_of(make_pipeline(tiny_encoder_path, None, tagger=False))
    calls = []
    tokenize = wordpieces_module.tokenize
    monkeypatch.setattr(wordpieces_module, "tokenize", lambda *a: calls.append(1) or tokenize(*a))
    docs = docs_for(nlp, RARE_VECTORS)
    ours = transformer_of(nlp).predict(docs)
    assert calls == [1]
    with torch.no_grad():
        ref, expected = expected_recentre(stock, docs_for(nlp, RARE_VECTORS), RARE_VECTORS)
    assert ours.wordpieces.strings == ref.wordpieces.strings
    assert numpy.array_equal(ours.align.data, ref.align.data)
    real = numpy.asarray(ref.wordpieces.attention_mask) > 0
    assert (~real).any() and len(ref.wordpieces) > len(TEXTS)  # padding and strided spans are exercised
    got = numpy.asarray(ours.model_output.last_hidden_state)
    numpy.testing.assert_allclose(got, expected.numpy(), atol=1e-5)
    assert numpy.abs(got - numpy.asarray(ref.model_output.last_hidden_state))[real].max() > 1e-2  # vectors went in
    assert not transformer_of(nlp).transformer.get_input_embeddings()._forward_hooks  # the hook is gone


def test_recentre_gradients_are_those_of_the_shifted_embeddings(tiny_encoder_path):
    nlp = make_pipeline(tiny_encoder_path, "recentre", tagger=False, transformer_config=NO_DROPOUT)
    stock = transformer_of(make_pipeline(tiny_encoder_path, None, tagger=False, transformer_config=NO_DROPOUT))
    model = transformer_of(nlp)
    output, backprop = model.begin_update(docs_for(nlp, RARE_VECTORS))
    rng = numpy.random.default_rng(0)
    d_last = rng.normal(size=output.model_output.last_hidden_state.shape).astype("float32")
    d_tensors = [[d_last[numpy.asarray(rows)]] for rows in _rows_by_doc(output)]
    model.transformer.zero_grad(set_to_none=True)
    backprop(output.unsplit_by_doc(d_tensors))
    _, expected = expected_recentre(stock, docs_for(nlp, RARE_VECTORS), RARE_VECTORS, is_train=True)
    torch.testing.assert_close(output.model_output.last_hidden_state, expected, atol=1e-5, rtol=0)
    stock.transformer.zero_grad(set_to_none=True)
    expected.backward(torch.as_tensor(d_last))
    for name in ("embeddings.word_embeddings.weight", "encoder.layer.0.attention.self.query.weight"):
        got = dict(model.transformer.named_parameters())[name].grad
        want = dict(stock.transformer.named_parameters())[name].grad
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


def _rows_by_doc(batch: FullTransformerBatch) -> List[List[int]]:
    rows, start = [], 0
    for spans in batch.spans:
        rows.append(list(range(start, start + len(spans))))
        start += len(spans)
    return rows


# -- the model: conversions per mode, the saved layout, listeners ----------------------------------


def test_every_mode_keeps_the_stock_conversions_and_the_mode_can_change_on_a_built_model(tiny_encoder_path):
    """The HF layer is spacy-transformers' own in every mode: slash and replace feed it rebuilt rows as a plain
    WordpieceBatch, so no conversion of ours stands in for its private ones."""
    stock = transformer_of(make_pipeline(tiny_encoder_path, None, tagger=False)).layers[0].attrs
    for mode in MODES:
        model = transformer_of(make_pipeline(tiny_encoder_path, mode, tagger=False))
        attrs = model.layers[0].attrs
        assert (attrs["convert_inputs"], attrs["convert_outputs"]) == (
            stock["convert_inputs"],
            stock["convert_outputs"],
        )
        other = "slash" if mode not in ("slash", "replace") else "recentre"
        model.injection = other
        assert model.injection == other and model.copy().injection == other
        assert (attrs["convert_inputs"], attrs["convert_outputs"]) == (
            stock["convert_inputs"],
            stock["convert_outputs"],
        )
        with pytest.raises(ValueError, match=r"\[E156\]"):
            model.injection = "prefix"


@pytest.mark.parametrize("mode", MODES)
def test_the_saved_layout_is_the_stock_models(tiny_encoder_path, stock_nlp, mode):
    """Same bytes as spacy-transformers' TransformerModel: pipelines saved by either load in the other."""
    stock_bytes = transformer_of(stock_nlp).to_bytes()
    model = transformer_of(make_pipeline(tiny_encoder_path, mode, tagger=False))
    assert isinstance(model, BertramTransformerModel)
    assert model.to_bytes() == stock_bytes
    model.from_bytes(stock_bytes)
    assert model.injection == mode


def test_replace_listener_cfg_names_our_tok2vec():
    tok2vec = {"@architectures": "spacy-bertram.TransformerModel.v1", "name": "x", "injection": "slash"}
    listener = {
        "@architectures": "spacy-transformers.TransformerListener.v1",
        "grad_factor": 0.5,
        "pooling": {"@layers": "reduce_mean.v1"},
    }
    result = replace_listener_cfg(tok2vec, listener)
    assert result == {
        **tok2vec,
        "@architectures": "spacy-bertram.Tok2VecTransformer.v1",
        "grad_factor": 0.5,
        "pooling": {"@layers": "reduce_mean.v1"},
    }
    assert tok2vec["@architectures"] == "spacy-bertram.TransformerModel.v1"  # the input is not changed
    assert replace_listener_cfg(tok2vec, {"@architectures": "spacy.Tok2VecListener.v1"}) == tok2vec


def test_has_vectors(tiny_encoder_path):
    nlp = spacy.blank("en")
    docs = [nlp.make_doc("a b"), nlp.make_doc("c")]
    assert not has_vectors(docs)
    docs[1]._.bertram = {}
    assert not has_vectors(docs)
    docs[1]._.bertram = {0: vec(0)}
    assert has_vectors(docs)


# -- the oldest and newest spacy-transformers the pins allow -----------------------------------------


def allowed_range() -> str:
    """spacy-transformers' range in pyproject.toml's dependencies (requirements.txt pins within it)."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf8"))["project"]["dependencies"]
    (spec,) = [d for d in dependencies if re.match(r"spacy-transformers\b", d)]
    return spec[len("spacy-transformers") :]


def released_versions(python: Path) -> List[str]:
    """The versions the package index has (pip's own listing)."""
    result = subprocess.run(
        [str(python), "-m", "pip", "index", "versions", "spacy-transformers"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    match = re.search(r"Available versions: (.+)", result.stdout)
    if result.returncode or not match:
        pytest.skip(f"no package index: {result.stderr.strip()[-300:]}")
    return [v.strip() for v in match.group(1).split(",")]


@pytest.fixture(scope="module")
def version_venv(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Dict[str, str]]:
    """A venv that sees this interpreter's packages, and the oldest and newest allowed spacy-transformers.

    Today the registry holds one release in the range (>=1.4.0,<2.1), 1.4.0: one run tests it (2.0.0, released in
    its repository, is tested by scripts/stack_suite.sh). 1.3.9 is outside it and
    needs transformers < 4.50, which the project's transformers pin (>=4.53.0) excludes."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    python = make_venv(tmp_path_factory.mktemp("spacy-transformers-versions") / "venv")
    allowed = sorted((v for v in released_versions(python) if Version(v) in SpecifierSet(allowed_range())), key=Version)
    assert allowed, f"no spacy-transformers release in {allowed_range()}"
    return python, {"oldest": allowed[0], "newest": allowed[-1]}


@pytest.mark.slow
@pytest.mark.parametrize("which", ["oldest", "newest"])
def test_injection_tests_pass_on_the_oldest_and_newest_allowed_spacy_transformers(version_venv, which):
    from importlib.metadata import version as installed

    python, versions = version_venv
    version = versions[which]
    if which == "newest" and version == versions["oldest"]:
        pytest.skip(f"the registry's newest allowed release is its oldest, {version}: the oldest run tested it")
    if int(version.split(".")[0]) < 2 and int(installed("transformers").split(".")[0]) >= 5:
        pytest.skip(
            f"spacy-transformers {version} caps transformers below 4.53.3; this stack has transformers "
            f"{installed('transformers')} (the pinned stack runs this test)"
        )
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--ignore-installed",
            f"spacy-transformers=={version}",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # The venv's own copy is the one imported (its site-packages come before this interpreter's).
    probe = (
        "import json, sys, importlib.metadata as m, spacy_transformers; "
        "print(json.dumps([m.version('spacy-transformers'), spacy_transformers.__file__.startswith(sys.prefix)]))"
    )
    seen = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True, cwd=ROOT)
    assert json.loads(seen.stdout.strip().splitlines()[-1]) == [version, True]
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_injection*.py"))
    run = subprocess.run(
        # One tiny encoder there: the versions are what this test varies, the encoders the suite's own run covers.
        [
            str(python),
            "-m",
            "pytest",
            *tests,
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "not slow",
            "-x",
            "-k",
            "not roberta",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert run.returncode == 0, f"spacy-transformers {version}:\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    assert re.search(r"\d+ passed", run.stdout), run.stdout[-2000:]


def test_the_stock_models_flush_chance_and_debug_logger_are_honoured(tiny_encoder_path, monkeypatch, caplog):
    """What spacy-transformers' forward does with `flush_cache_chance` and `set_logger`, the injecting one does too."""
    import logging

    from spacy_bertram.injection import model as injection_model

    model = transformer_of(make_pipeline(tiny_encoder_path, "recentre", tagger=False))
    emptied = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(1))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda: 3 * 1024**2)
    model.attrs["flush_cache_chance"] = 1.0
    model.attrs["logger"] = logging.getLogger("trf-debug")
    docs = docs_for(make_pipeline(tiny_encoder_path, "recentre", tagger=False), RARE_VECTORS)
    with caplog.at_level(logging.INFO, logger="trf-debug"):
        injection_model.forward(model, docs, False)
    assert emptied == [1]
    messages = [r.getMessage() for r in caplog.records if r.name == "trf-debug"]
    assert any(m.endswith("predict; 3.0 MB: begin forward") for m in messages), messages
    assert "3.0 MB: after forward" in messages
    model.attrs["flush_cache_chance"] = 0.0
    injection_model.forward(model, docs, False)
    assert emptied == [1]
