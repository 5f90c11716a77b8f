"""encoder.py: how a word splits into the encoder's wordpieces (the one rule), and the BPE test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from spacy_bertram.model.encoder import is_bpe_tokenizer, load_encoder, text_ids, word_piece_ids, word_start_tokens

ROOT = Path(__file__).parent.parent
WORDS = [
    "kumquat",
    "Kumquats",
    "the",
    "quokka-like",
    "naïve",
    "Ærøskøbing",
    "don't",
    "x",
    "",
    "\U0001f34a",
    "supercalifragilisticexpialidocious" * 3,
    "  spaced ",
    "\u6c34\u679c",
    "42nd",
]


@pytest.mark.parametrize("kind", ["minilm", "tiny_roberta"])
def test_the_fast_path_gives_the_wrappers_ids(request, kind):
    tokenizer = AutoTokenizer.from_pretrained(request.getfixturevalue(f"{kind}_path"))
    prefix = " " if is_bpe_tokenizer(tokenizer) else ""
    for word in WORDS:
        wrapped = list(tokenizer(prefix + word, add_special_tokens=False)["input_ids"])[:32]
        assert word_piece_ids(tokenizer, word) == wrapped, word
        context = f"The farmer's {word}, sold at the market... [MASK] twice!"
        assert text_ids(tokenizer, context) == list(tokenizer(context, add_special_tokens=False)["input_ids"])
    assert is_bpe_tokenizer(tokenizer) == (kind == "tiny_roberta")


def test_a_tokenizer_set_to_pad_or_truncate_goes_through_the_wrapper(minilm_path):
    """The Rust tokenizer keeps padding/truncation a caller set on it; the wrapper resets them per call."""
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    expected = word_piece_ids(tokenizer, "kumquat")
    tokenizer.backend_tokenizer.enable_padding(length=16)
    tokenizer.backend_tokenizer.enable_truncation(max_length=2)
    assert word_piece_ids(tokenizer, "kumquat") == expected and len(expected) > 2


FORKED_PIPE = """
import os, sys
from pathlib import Path
from tests.util import make_bertram_dir, make_nlp, write_tiny_bert

root = Path(sys.argv[1])
tiny = str(write_tiny_bert(root / "tiny"))
nlp = make_nlp(make_bertram_dir(root / "model", tiny), tiny, transformer=tiny)
texts = ["The kumquat grows in a garden. A farmer sold one kumquat at the market."] * 8
list(nlp.pipe(texts))  # the fast tokenizer runs in parallel here, before the fork
docs = list(nlp.pipe(texts, n_process=2, batch_size=2))
print(sum(len(doc._.bertram) for doc in docs), os.environ.get("TOKENIZERS_PARALLELISM"))
"""


@pytest.mark.slow
def test_workers_forked_by_nlp_pipe_print_no_tokenizers_warning(tmp_path):
    """huggingface/tokenizers warned once per worker of n_process=2; the parent's own setting is left as it was."""
    env = {key: value for key, value in os.environ.items() if key != "TOKENIZERS_PARALLELISM"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-c", FORKED_PIPE, str(tmp_path)], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "huggingface/tokenizers" not in result.stderr, result.stderr[-3000:]
    assert result.stdout.split() == ["16", "None"]  # both kumquats of 8 texts; the parent's environment untouched


def test_word_start_tokens_one_rule_for_wordpiece_and_bpe(tiny_bert_path, tiny_roberta_path):
    """A whole-word token begins a word: WordPiece's non-"##" tokens, byte-level BPE's "Ġ" tokens (the
    mark dropped); never markup ("[CLS]", "[unused0]", "<s>") and never a piece inside a word."""
    _, bert = load_encoder(tiny_bert_path)
    words = word_start_tokens(bert)
    assert words[bert.convert_tokens_to_ids("cat")] == "cat"
    assert not any(w.startswith("##") or (len(w) > 1 and w[0] == "[" and w[-1] == "]") for w in words.values())
    assert "[CLS]" not in words.values()
    assert all(bert.convert_ids_to_tokens(i) == w for i, w in words.items())
    _, roberta = load_encoder(tiny_roberta_path)
    words = word_start_tokens(roberta)
    vocab = roberta.get_vocab()
    marked = {token for token in vocab if token.startswith("\u0120") and len(token) > 1}
    assert {roberta.convert_ids_to_tokens(i) for i in words} == marked
    assert all(roberta.convert_ids_to_tokens(i) == "\u0120" + w for i, w in words.items())
    assert not any(len(w) > 1 and w[0] == "<" and w[-1] == ">" for w in words.values())


CACHED_CHECK = """
import json, sys
from spacy_bertram.model.encoder import check_base_model, encoder_layer_count, load_encoder
check_base_model("someone/tiny-bert")
n_layers = encoder_layer_count("someone/tiny-bert", files_here_only=True)
heavy = sorted(m for m in ("torch", "transformers") if m in sys.modules)
encoder, _ = load_encoder("someone/tiny-bert", shared=False)
print(json.dumps([n_layers, heavy, encoder.config.num_hidden_layers]))
"""


def test_a_base_model_is_refused_at_once_only_where_it_can_never_load(tiny_bert_path, tmp_path):
    """A path that is no directory here and no Hugging Face name is refused without torch (transformers
    failed on it 5-20 s later, E003); a Hugging Face name in the cache still passes, its layers read from
    the cached config.json alone, and loads."""
    from spacy_bertram.model.encoder import check_base_model, encoder_layer_count

    for name, why in [
        ("/nonexistent/enc", "no such directory"),
        (str(Path(tiny_bert_path) / "config.json"), "it is a file, not a directory"),
    ]:
        with pytest.raises(
            ValueError,
            match=rf"\[E295\] --base-model '{name}' is neither a directory here nor a "
            rf"Hugging Face model name: {why}\.",
        ):
            check_base_model(name)
    for name in ("default", tiny_bert_path, "someone/not-downloaded-yet"):
        check_base_model(name)
    assert encoder_layer_count(tiny_bert_path, files_here_only=True) == 2
    assert encoder_layer_count("someone/not-downloaded-yet", files_here_only=True) is None
    snapshot = tmp_path / "hub" / "models--someone--tiny-bert" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    for path in Path(tiny_bert_path).iterdir():
        (snapshot / path.name).write_bytes(path.read_bytes())
    (tmp_path / "hub" / "models--someone--tiny-bert" / "refs").mkdir()
    (tmp_path / "hub" / "models--someone--tiny-bert" / "refs" / "main").write_text("0" * 40)
    env = {
        **os.environ,
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    out = subprocess.run([sys.executable, "-c", CACHED_CHECK], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[2, [], 2]"
