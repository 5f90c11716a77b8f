"""scripts/reference_fixtures.py and the fixtures it made with the paper's reference implementation
(tests/fixtures/reference): every checkpoint holds the reference's files and a tokenizer today's stack loads as
a fast one, every case is complete and agrees with its checkpoint, and each recorded row is what that tokenizer
makes of the context. The script's own checks run without the reference's environment."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
import torch
from transformers import AutoTokenizer, BertTokenizerFast, RobertaTokenizerFast

from tests.util import load_script

fixtures = load_script("reference_fixtures")

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "reference"
CASES = json.loads((FIXTURES / "cases.json").read_text(encoding="utf8"))
CHECKPOINTS: Dict[str, Dict[str, Any]] = CASES["checkpoints"]
REFERENCE_FILES = ("pytorch_model.bin", "config.json", "bertram_config.json", "input_processor.json")
TOKENIZER_FILES = {
    "bert": ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"),
    "roberta": ("vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json"),
}
FAST = {"bert": BertTokenizerFast, "roberta": RobertaTokenizerFast}


def read_json(name: str, file: str) -> Dict[str, Any]:
    return json.loads((FIXTURES / name / file).read_text(encoding="utf8"))


def test_the_fixtures_are_the_script_s_and_hold_every_checkpoint_it_makes():
    assert CASES["written_by"] == fixtures.COMMAND
    assert list(CHECKPOINTS) == [name for name, *_ in fixtures.CHECKPOINTS]
    assert {p.name for p in FIXTURES.iterdir()} == {*CHECKPOINTS, "cases.json", "README.md"}
    assert CASES["versions"]["transformers"] == "2.1.1" and len(CASES["reference"]["commit"]) == 40


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_every_checkpoint_holds_the_reference_s_files_and_a_tokenizer(name):
    checkpoint = CHECKPOINTS[name]
    files = {*REFERENCE_FILES, "input_processor.json.vocab", *TOKENIZER_FILES[checkpoint["transformer_cls"]]}
    assert {p.name for p in (FIXTURES / name).iterdir()} == files
    assert sum(p.stat().st_size for p in (FIXTURES / name).iterdir()) < 300_000


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_the_checkpoint_s_files_agree_with_each_other_and_with_its_cases(name):
    """bertram_config.json and input_processor.json read as plain JSON (jsonpickle's tags are keys), the
    state dict with torch's safe loader."""
    checkpoint, kind = CHECKPOINTS[name], CHECKPOINTS[name]["transformer_cls"]
    config, encoder = read_json(name, "bertram_config.json"), read_json(name, "config.json")
    processor = read_json(name, "input_processor.json")
    assert config["py/object"] == "bertram.BertramConfig" and config["transformer_cls"] == kind
    assert processor["py/object"] == "input_processor.InputProcessor"
    state = processor["py/state"]
    assert config["mode"] == state["mode"] == checkpoint["mode"] and state["model_cls"] == kind
    assert state["max_seq_length"] == checkpoint["max_seq_length"] and state["ngram_dropout"] == 0
    assert config["output_size"] == encoder["hidden_size"] and config["ngram_vocab_size"] == len(
        checkpoint["ngram_table"]
    )
    words = (FIXTURES / name / "input_processor.json.vocab").read_text(encoding="utf8").splitlines()
    assert words and all(len(line.split()) == 2 and line.split()[1].isdigit() for line in words)
    weights = torch.load(FIXTURES / name / "pytorch_model.bin", map_location="cpu", weights_only=True)
    width, hidden = config["output_size"], encoder["hidden_size"]
    assert weights["ngram_processor.ngram_embeddings.weight"].shape == (config["ngram_vocab_size"], width)
    embeddings = weights[f"{kind}.embeddings.word_embeddings.embedding.weight"]
    assert embeddings.shape == (encoder["vocab_size"], hidden) and embeddings.dtype == torch.float32
    assert weights["reliability_measure.linear.weight"].shape == (hidden, hidden)
    assert weights["linear.weight"].shape == (width, hidden)


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_every_case_is_complete_and_its_n_grams_are_the_table_s(name):
    checkpoint = CHECKPOINTS[name]
    width = read_json(name, "bertram_config.json")["output_size"]
    table = checkpoint["ngram_table"]
    assert table[:2] == ["UNK", "PAD"] and len(set(table)) == len(table)
    contexts_per_case = set()
    for case in checkpoint["cases"]:
        for key in ("vector", "form_vector"):
            assert len(case[key]) == width and all(math.isfinite(v) for v in case[key]) and any(case[key])
        assert case["ngram_ids"] == [table.index(g) if g in table else 0 for g in case["ngrams"]]
        used = [i for i in range(len(case["contexts"])) if i not in case["skipped"]]
        assert [row["context"] for row in case["rows"]] == used
        if case["contexts"]:
            assert len(case["weights"]) == len(used) and math.isclose(sum(case["weights"]), 1.0, rel_tol=1e-5)
        else:  # no context: the n-gram vector alone
            assert case["weights"] is None and case["vector"] == case["form_vector"]
        contexts_per_case.add(len(case["contexts"]))
    assert {0, 1, 3, 8} <= contexts_per_case
    assert len({case["name"] for case in checkpoint["cases"]}) == len(checkpoint["cases"])


def row_prefix(tokenizer, kind: str, mode: str) -> List[str]:
    """What the reference puts before a context: the form vector's slot (the separator token) in the add modes."""
    quote = 'Ġ"' if kind == "roberta" else '"'
    return {
        "replace": [tokenizer.cls_token],
        "add": [tokenizer.cls_token, tokenizer.sep_token, ":"],
        "add-quotes": [tokenizer.cls_token, quote, tokenizer.sep_token, quote, ":"],
    }[mode]


def context_tokens(tokenizer, kind: str, word: str, context: str) -> List[str]:
    """The whole context as today's tokenizer splits it, with the mask for each whitespace token equal to
    the word: the pieces between masks tokenized one by one (RoBERTa's with a space in front, as the
    reference's tokenizer adds one)."""
    pieces: List[List[str]] = [[]]
    for token in context.split():
        if token == word:
            pieces.append([])
        else:
            pieces[-1].append(token)
    tokens: List[str] = []
    for index, piece in enumerate(pieces):
        if index:
            tokens.append(tokenizer.mask_token)
        if piece:
            text = " ".join(piece)
            tokens += tokenizer.tokenize(" " + text if kind == "roberta" else text)
    return tokens


def is_slice(part: List[str], whole: List[str]) -> bool:
    return any(whole[start : start + len(part)] == part for start in range(len(whole) - len(part) + 1))


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_the_tokenizer_loads_as_a_fast_one_and_makes_the_recorded_rows(name):
    """Today's fast tokenizer, from the checkpoint's files, gives each row's tokens the row's ids, and the
    tokens between the prefix and the closing separator are the context's, cut where it is too long."""
    checkpoint, kind = CHECKPOINTS[name], CHECKPOINTS[name]["transformer_cls"]
    tokenizer = AutoTokenizer.from_pretrained(str(FIXTURES / name))
    assert tokenizer.is_fast and isinstance(tokenizer, FAST[kind])
    assert FAST[kind].from_pretrained(str(FIXTURES / name)).get_vocab() == tokenizer.get_vocab()
    prefix = row_prefix(tokenizer, kind, checkpoint["mode"])
    limit = checkpoint["max_seq_length"] - 1  # the reference leaves one position free
    rows = cut = 0
    for case in checkpoint["cases"]:
        for row in case["rows"]:
            tokens = row["tokens"]
            assert tokenizer.convert_tokens_to_ids(tokens) == row["input_ids"]
            assert tokens[: len(prefix)] == prefix and tokens[-1] == tokenizer.sep_token and len(tokens) <= limit
            assert row["mask_position"] == tokens.index(tokenizer.mask_token)
            inner = tokens[len(prefix) : -1]
            whole = context_tokens(tokenizer, kind, case["word"], case["contexts"][row["context"]])
            if len(prefix) + len(whole) + 1 <= limit:
                assert inner == whole, (case["name"], inner, whole)
            else:
                assert len(tokens) == limit and is_slice(inner, whole), (case["name"], inner, whole)
                cut += 1
            rows += 1
    assert rows > 20 and cut >= 3


# -- the script's own checks, before any environment is made ------------------------------------------------


def test_a_directory_without_the_reference_s_modules_is_refused(tmp_path):
    (tmp_path / "bertram.py").write_text("", encoding="utf8")
    with pytest.raises(fixtures.FixtureError, match=r"\[E196\].*lacks input_processor\.py, ngram_models\.py"):
        fixtures.make_fixtures(tmp_path, tmp_path / "out", tmp_path / "venv", sys.executable)
    assert not (tmp_path / "out").exists() and not (tmp_path / "venv").exists()


def fake_reference(path: Path) -> Path:
    path.mkdir()
    for module in fixtures.REFERENCE_MODULES:
        (path / module).write_text("", encoding="utf8")
    return path


def test_an_output_directory_holding_others_files_is_refused_before_the_environment_is_made(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "cases.json").write_text("{}", encoding="utf8")  # a name the script writes, not written by it
    with pytest.raises(ValueError, match=r"\[E007\].*cases\.json \(not marked as written by reference_fixtures\)"):
        fixtures.make_fixtures(fake_reference(tmp_path / "ref"), out, tmp_path / "venv", sys.executable)
    assert not (tmp_path / "venv").exists() and (out / "cases.json").read_text(encoding="utf8") == "{}"


def test_an_environment_is_reused_only_when_its_record_matches(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    wanted = {"python": fixtures.python_version(sys.executable), "requirements": list(fixtures.REQUIREMENTS)}
    (venv / fixtures.ENV_STAMP).write_text(json.dumps(fixtures.mark_json(wanted, fixtures.COMMAND)), encoding="utf8")
    assert fixtures.ensure_env(venv, sys.executable, force=False) == venv / "bin" / "python"
    (venv / fixtures.ENV_STAMP).write_text(json.dumps(wanted), encoding="utf8")  # no mark: someone else's
    with pytest.raises(ValueError, match=r"\[E007\].*reference-env\.json \(not marked"):
        fixtures.ensure_env(venv, sys.executable, force=False)
    with pytest.raises(fixtures.FixtureError, match=r"\[E197\] Cannot run '.*no-such-python'"):
        fixtures.ensure_env(venv, str(tmp_path / "no-such-python"), force=False)


def test_cases_json_keeps_each_list_of_values_on_one_line():
    data = {"a": [1.5, -2.25], "b": [{"tokens": ["[CLS]", "x"], "n": None}], "c": {}}
    text = fixtures.dumps(data)
    assert json.loads(text) == data
    assert '  "a": [1.5, -2.25],' in text.splitlines() and '      "tokens": ["[CLS]", "x"],' in text.splitlines()
