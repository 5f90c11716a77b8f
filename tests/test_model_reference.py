"""This network with the reference's settings against the reference implementation itself.

tests/fixtures/reference/ holds tiny BERT and RoBERTa checkpoints that the reference's own code
(github timoschick/bertram, transformers 2.1.1) built and saved in its format, and, in cases.json,
the vectors its BertramWrapper inferred from them and the rows it fed its encoder
(scripts/reference_fixtures.py made both). Loading a checkpoint here must give those vectors within
1e-5 and those rows exactly; a damaged or mismatched checkpoint is refused with a code, quickly.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import numpy
import pytest
import torch

from spacy_bertram import load_bertram
from spacy_bertram.model.reference import (
    BERTRAM_CONFIG_FILE,
    INPUT_PROCESSOR_FILE,
    VOCAB_FILE,
    WEIGHTS_FILE,
)
from spacy_bertram.model.storage import convert_reference, load_reference

FIXTURES = Path(__file__).parent / "fixtures" / "reference"
CASES = json.loads((FIXTURES / "cases.json").read_text(encoding="utf8"))["checkpoints"]
PARAMS = [(name, case["name"]) for name, checkpoint in CASES.items() for case in checkpoint["cases"]]
TOLERANCE = 1e-5
TOKENIZER_FILES = ("vocab.txt", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json")


def checkpoint_dir(name: str) -> str:
    return str(FIXTURES / name)


@pytest.fixture(scope="module")
def base_models(tmp_path_factory):
    """Each checkpoint's encoder as a Hugging Face directory (its weights and its tokenizer's files): the
    base model the checkpoint was built around, as a user would have it."""
    from spacy_bertram.model.reference import (
        checkpoint_encoder,
        read_reference_settings,
        read_reference_weights,
        split_weights,
    )

    made = {}

    def get(name: str) -> str:
        if name not in made:
            source = FIXTURES / name
            target = tmp_path_factory.mktemp(name)
            settings = read_reference_settings(source)
            encoder_weights, _ = split_weights(read_reference_weights(source), settings)
            checkpoint_encoder(source, settings, encoder_weights).save_pretrained(str(target))
            for tokenizer_file in TOKENIZER_FILES:
                if (source / tokenizer_file).is_file():
                    shutil.copy(source / tokenizer_file, target / tokenizer_file)
            made[name] = str(target)
        return made[name]

    return get


@pytest.fixture(scope="module")
def networks(base_models):
    """Each checkpoint loaded once, for its own encoder."""
    loaded = {}

    def get(name: str):
        if name not in loaded:
            loaded[name] = load_bertram(checkpoint_dir(name), base_model=base_models(name))
        return loaded[name]

    return get


def case_of(name: str, case_name: str) -> dict:
    return next(case for case in CASES[name]["cases"] if case["name"] == case_name)


@pytest.mark.parametrize("name,case_name", PARAMS)
def test_vectors_equal_the_references(networks, name, case_name):
    network = networks(name)
    case = case_of(name, case_name)
    vector = network.infer([(case["word"], case["contexts"])])[0]
    expected = numpy.asarray(case["vector"], dtype="float32")
    assert numpy.abs(vector - expected).max() < TOLERANCE, (name, case_name)


@pytest.mark.parametrize("name,case_name", PARAMS)
def test_rows_and_ngrams_equal_the_references(networks, name, case_name):
    network = networks(name)
    case = case_of(name, case_name)
    batch = network.prepare([case["word"]], [case["contexts"]])
    expected = case["rows"]
    assert [list(r.input_ids) for r in batch.rows] == [r["input_ids"] for r in expected]
    assert [r.mask_position for r in batch.rows] == [r["mask_position"] for r in expected]
    assert network.ngram_vocab.encode(case["word"]) == case["ngram_ids"]
    form = network.form_vectors(batch.ngram_ids, batch.subword_ids)[0].detach().numpy()
    assert numpy.abs(form - numpy.asarray(case["form_vector"], dtype="float32")).max() < TOLERANCE


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_ngram_table_is_rebuilt_as_the_reference_rebuilds_it(networks, name):
    assert networks(name).ngram_vocab.itos == CASES[name]["ngram_table"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_converted_checkpoint_saves_and_loads_to_the_same_vectors(tmp_path, name, base_models):
    target = convert_reference(checkpoint_dir(name), tmp_path / "converted", base_models(name))
    assert not (target / "encoder").exists()  # its encoder is the base model's
    network = load_bertram(target)
    case = case_of(name, "three_contexts")
    vector = network.infer([(case["word"], case["contexts"])])[0]
    assert numpy.abs(vector - numpy.asarray(case["vector"], dtype="float32")).max() < TOLERANCE


def test_a_checkpoint_with_its_own_encoder_is_converted_with_that_encoder(tmp_path, base_models):
    """The reference fine-tunes the encoder by default: with another base model of the same vocabulary,
    loading refuses (E074) and converting writes the checkpoint's encoder beside the model."""
    name = "bert-add"
    checkpoint = tmp_path / "bert-add"
    shutil.copytree(checkpoint_dir(name), checkpoint)
    state = torch.load(str(checkpoint / WEIGHTS_FILE), weights_only=True)
    bias = state["bert.encoder.layer.0.output.dense.bias"]
    state["bert.encoder.layer.0.output.dense.bias"] = bias + torch.linspace(-1.0, 1.0, len(bias))  # not a shift
    torch.save(state, str(checkpoint / WEIGHTS_FILE))
    with pytest.raises(ValueError, match=r"\[E074\]"):
        load_bertram(checkpoint, base_model=base_models(name))
    target = convert_reference(checkpoint, tmp_path / "converted", base_models(name))
    assert (target / "encoder" / "model.safetensors").is_file()
    converted = load_bertram(target)
    own, _ = load_reference(checkpoint, base_models(name))
    case = case_of(name, "three_contexts")
    items = [(case["word"], case["contexts"])]
    assert numpy.abs(converted.infer(items) - own.infer(items)).max() < TOLERANCE
    assert numpy.abs(converted.infer(items)[0] - numpy.asarray(case["vector"], dtype="float32")).max() > 1e-3


def damaged_copy(tmp_path: Path, edit) -> Path:
    checkpoint = tmp_path / "bert-add"
    shutil.copytree(checkpoint_dir("bert-add"), checkpoint)
    edit(checkpoint)
    return checkpoint


def _edit_json(name: str, key: str, value):
    def edit(checkpoint: Path) -> None:
        data = json.loads((checkpoint / name).read_text(encoding="utf8"))
        state = data.get("py/state", data)
        state[key] = value
        (checkpoint / name).write_text(json.dumps(data), encoding="utf8")

    return edit


def _drop_weight(key: str):
    def edit(checkpoint: Path) -> None:
        state = torch.load(str(checkpoint / WEIGHTS_FILE), weights_only=True)
        del state[key]
        torch.save(state, str(checkpoint / WEIGHTS_FILE))

    return edit


DAMAGE = {
    "unknown mode": (_edit_json(BERTRAM_CONFIG_FILE, "mode", "stacked"), "E098", "mode 'stacked'"),
    "modes disagree": (_edit_json(INPUT_PROCESSOR_FILE, "mode", "replace"), "E098", "mode 'replace'"),
    "size": (_edit_json(BERTRAM_CONFIG_FILE, "output_size", 768), "E099", "output_size is 768"),
    "vocabulary": (_edit_json(BERTRAM_CONFIG_FILE, "ngram_vocab_size", 5), "E099", "ngram_vocab_size says 5"),
    "missing key": (_drop_weight("linear.weight"), "E098", "lacks 'linear.weight'"),
    "missing file": (lambda c: (c / VOCAB_FILE).unlink(), "E098", VOCAB_FILE),
    "not json": (lambda c: (c / BERTRAM_CONFIG_FILE).write_text("{not json", encoding="utf8"), "E098", "JSON"),
    "another object": (_edit_json(BERTRAM_CONFIG_FILE, "py/object", "os.system"), "E098", "bertram.BertramConfig"),
    "damaged weights": (lambda c: (c / WEIGHTS_FILE).write_bytes(b"\x80\x02garbage"), "E098", WEIGHTS_FILE),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_or_mismatched_checkpoint_is_refused_with_a_code_in_under_a_second(
    tmp_path, damage, networks, base_models
):
    networks("bert-add")  # the encoder is loaded once (cached), as in a process that loads models
    edit, code, says = DAMAGE[damage]
    checkpoint = damaged_copy(tmp_path, edit)
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        load_bertram(checkpoint, base_model=base_models("bert-add"))
    assert time.perf_counter() - start < 1.0
    assert f"[{code}]" in str(err.value) and says in str(err.value), str(err.value)


def test_no_jsonpickle_decoding_anywhere():
    """The reference's JSON files name classes to build: nothing here may decode them with jsonpickle."""
    root = Path(__file__).parent.parent
    sources = [*root.glob("spacy_bertram/**/*.py"), *root.glob("bertram_experiments/**/*.py")]
    decoding = re.compile(
        r"^\s*(import|from)\s+jsonpickle|jsonpickle\.(decode|loads|unpickler)|__import__\(.jsonpickle", re.M
    )
    offenders = [str(p) for p in sources if decoding.search(p.read_text(encoding="utf8"))]
    assert offenders == []
    assert decoding.search("import jsonpickle\ncfg = jsonpickle.decode(text)")  # the pattern finds a decoding


@pytest.mark.parametrize("name", ["bert-add", "roberta-add"])
def test_a_spacy_loaded_pipeline_with_a_reference_checkpoint_gives_the_references_vectors(tmp_path, name, base_models):
    """The checkpoint as the component's model_path, its encoder as the pipeline's transformer: after
    `spacy.load`, the doc's rare word gets the vector the reference infers from the doc's text."""
    import spacy

    base = base_models(name)
    case = case_of(name, "one_context")
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "bertram",
        config={
            "contexts": "doc",
            "model": {"model_path": checkpoint_dir(name), "base_model": base},
            "rare_words": {"max_zipf": 3.0},
        },
    )
    nlp.add_pipe(
        "transformer",
        config={"model": {"@architectures": "spacy-bertram.TransformerModel.v1", "name": base, "injection": "slash"}},
    )
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    doc = loaded(case["contexts"][0])
    vectors = {doc[i].text: v for i, v in doc._.bertram.items()}
    assert case["word"] in vectors, sorted(vectors)
    assert numpy.abs(vectors[case["word"]] - numpy.asarray(case["vector"], dtype="float32")).max() < TOLERANCE


def test_a_checkpoint_whose_input_processor_has_no_mode_reads_add_rows_without_the_prefix(tmp_path, base_models):
    """The reference's train.py and fuse_models.py never set the input processor's mode: its ADD model then
    reads `[CLS] context [SEP]` (the rows of its REPLACE, recorded in the bert-replace fixture) with the form
    vector over position 1."""
    checkpoint = damaged_copy(tmp_path, _edit_json(INPUT_PROCESSOR_FILE, "mode", None))
    network = load_bertram(checkpoint, base_model=base_models("bert-add"))
    assert network.config.prefix_tokens is False
    for case in CASES["bert-replace"]["cases"]:
        batch = network.prepare([case["word"]], [case["contexts"]])
        assert [list(r.input_ids) for r in batch.rows] == [r["input_ids"] for r in case["rows"]]
        assert {r.slot_position for r in batch.rows} <= {1}
