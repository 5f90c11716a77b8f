#!/usr/bin/env python
"""The reference side of scripts/reference_fixtures.py, run by it inside the reference's own environment
(Python 3.11, torch, transformers 2.1.1, jsonpickle), never in the project's: it imports the checkout of
timoschick/bertram given as --reference and makes every fixture with that code's own classes and methods.

`python reference_runner.py --reference DIR --out DIR` writes into the (empty) --out directory one folder a
checkpoint (the reference's files, saved by its own save methods, and the tokenizer's files) and `cases.json`:
per checkpoint, each case's word, contexts, the vector the reference's BertramWrapper infers, its n-grams,
attentive-mimicking weights and, per used context, the row the reference feeds its encoder.

Nothing here may import the project: this environment has neither spaCy nor the plugin.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import string
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

HIDDEN = 32
LAYERS = 2
INTERMEDIATE = 64
MAX_POSITIONS = 64
#: Small, so that a long context is cut, on either side of its mask.
MAX_SEQ_LENGTH = 24
#: Lower than the reference's default (4) for a small vocabulary: an n-gram of two of its words gets an id.
NGRAM_THRESHOLD = 2
#: Where the input processor finds its tokenizer and word list: the checkpoint directory itself, the
#: working directory while it is built and loaded (so no absolute path of this machine is saved).
HERE = "."
WORD_LIST = "ngram_vocab.txt"

# -- the tokenizers' words ---------------------------------------------------------------------------

#: The words of the contexts below (lowercase: the WordPiece tokenizer lowercases) and a few more.
WORDS = (
    "the a an of to in and is was it that this he she they we i on for with as at by from be are were "
    "had has have not but or one two some small big sweet sour fruit fruits tree trees garden farmer "
    "market sold bought ate eat grows grew orange lemon apple green yellow round little people like "
    "liked tasty peel skin jam winter summer bowl table kitchen cook made morning grow where say other"
).split()
#: Pieces the rare words split into.
WORDPIECES = ["kum", "##qua", "##t", "##s", "quo", "##kka", "zor", "##bing", "##ing", "##ed", "##er", "##ly"]
BPE_PIECES = ["Ġkum", "qu", "at", "Ġquo", "kka", "Ġzor", "bing", "ing", "ed", 'Ġ"', "Ġ.", "Ġ,", "Ġ:", "Ġ!"]
#: The n-gram vocabulary ("word count" lines, as the reference reads them): the context words and some
#: that share n-grams with the rare words.
NGRAM_WORDS = WORDS + ["kumquats", "kumar", "squat", "quota", "quokkas", "kayak", "zorro", "robbing", "bingo"]

# -- the cases -----------------------------------------------------------------------------------------

LONG_TAIL = "the farmer sold some fruit at the market in the morning and the people liked it a lot"
CASES: List[Tuple[str, str, List[str]]] = [
    ("no_context", "kumquat", []),
    ("one_context", "kumquat", ["the farmer sold a kumquat at the market"]),
    (
        "three_contexts",
        "kumquat",
        [
            "she ate a sweet kumquat in the garden",
            "a kumquat is a small orange fruit",
            "they made jam from the kumquat",
        ],
    ),
    (
        "eight_contexts",
        "kumquat",
        [
            "the kumquat grows on a little tree",
            "a kumquat",
            "he bought one kumquat and two lemons",
            "the skin of the kumquat is sweet but the fruit is sour",
            "kumquat jam",
            "we ate the kumquat with the peel",
            "in winter the kumquat tree has yellow fruit",
            "people like the kumquat",
        ],
    ),
    (
        "truncated",
        "kumquat",
        [
            "a kumquat " + LONG_TAIL + " and then they ate it",  # the mask near the start: the end is cut
            LONG_TAIL + " kumquat " + LONG_TAIL,  # in the middle: both ends are cut
            LONG_TAIL + " and then they ate a kumquat",  # near the end: the start is cut
        ],
    ),
    (
        "skipped_context",
        "kumquat",
        [
            "the kumquat was sweet",
            "the orange was sour",  # does not hold the word: the reference leaves it out
            "a green kumquat",
        ],
    ),
    ("twice_in_a_context", "kumquat", ["the kumquat and the other kumquat were sweet"]),
    (
        "punctuation",
        "kumquat",
        [
            "i ate a kumquat. the kumquat was sour",  # "kumquat." is no whitespace token equal to the word
            'Kumquat trees grow where the kumquat grows, "kumquat" they say',  # nor are "Kumquat", '"kumquat"'
        ],
    ),
    ("whitespace", "kumquat", ["  the\tkumquat   grows\n in  the garden  ", "kumquat\t\tjam"]),
    ("other_word", "quokka", ["the quokka ate a green apple", "a quokka is small"]),
    ("unknown_ngrams", "xyzzy", ["the xyzzy was on the table"]),
]

# -- the checkpoints: (directory, transformer class, mode, heads, seed of its BERTRAM weights) -------------

CHECKPOINTS: List[Tuple[str, str, str, int, int]] = [
    ("bert-add", "bert", "add", 4, 11),
    ("bert-replace", "bert", "replace", 4, 12),
    ("roberta-add", "roberta", "add", 2, 21),
    ("roberta-add-quotes", "roberta", "add-quotes", 2, 22),
    ("roberta-replace", "roberta", "replace", 2, 23),
]
ENCODER_SEEDS = {"bert": 1, "roberta": 2}


def stub_gensim() -> None:
    """utils.py imports gensim's Word2Vec at the top but calls it only to read training targets: a stub."""

    class Word2Vec:
        @staticmethod
        def load(*_: Any) -> None:
            raise RuntimeError("gensim is not installed in the reference's fixture environment")

    gensim = types.ModuleType("gensim")
    models = types.ModuleType("gensim.models")
    models.Word2Vec = Word2Vec  # type: ignore[attr-defined]
    gensim.models = models  # type: ignore[attr-defined]
    sys.modules["gensim"], sys.modules["gensim.models"] = gensim, models


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf8")


def write_wordpiece(directory: Path) -> int:
    """A WordPiece vocabulary BertTokenizer (2.1.1) and BertTokenizerFast (today's) both read."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list(string.ascii_lowercase + string.digits)
    vocab: List[str] = []
    for token in specials + list(string.punctuation) + chars + ["##" + c for c in chars] + WORDS + WORDPIECES:
        if token not in vocab:
            vocab.append(token)
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf8")
    write_json(
        directory / "tokenizer_config.json",
        {"do_lower_case": True, "model_max_length": MAX_POSITIONS, "tokenizer_class": "BertTokenizer"},
    )
    names = ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
    write_json(directory / "special_tokens_map.json", dict(zip(names, ["[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"])))
    return len(vocab)


def bpe_merges(pieces: Sequence[str]) -> List[Tuple[str, str]]:
    """Each piece built left to right, one character at a time: every merge's result is a piece's prefix."""
    merges: List[Tuple[str, str]] = []
    for piece in pieces:
        for end in range(1, len(piece)):
            merge = (piece[:end], piece[end])
            if merge not in merges:
                merges.append(merge)
    return merges


def write_bpe(directory: Path) -> int:
    """A byte-level BPE vocabulary RobertaTokenizer (2.1.1) and RobertaTokenizerFast (today's) both read:
    <s> <pad> </s> <unk> first (the pad id 1 RoBERTa's embeddings expect), the 256 byte symbols, the merges'
    results, <mask> last."""
    from transformers.tokenization_gpt2 import bytes_to_unicode

    space = bytes_to_unicode()[ord(" ")]
    pieces = [space + word for word in WORDS] + BPE_PIECES
    merges = bpe_merges(pieces)
    vocab: Dict[str, int] = {}
    symbols = ["<s>", "<pad>", "</s>", "<unk>", *bytes_to_unicode().values(), *(a + b for a, b in merges), "<mask>"]
    for symbol in symbols:
        vocab.setdefault(symbol, len(vocab))
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False) + "\n", encoding="utf8")
    # The reference drops the first line and the last element of the split: a header and a final newline.
    lines = ["#version: 0.2"] + [f"{a} {b}" for a, b in merges]
    (directory / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    write_json(
        directory / "tokenizer_config.json",
        {"model_max_length": MAX_POSITIONS - 2, "tokenizer_class": "RobertaTokenizer"},
    )
    tokens = ["<s>", "</s>", "<unk>", "</s>", "<pad>", "<s>", "<mask>"]
    names = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
    write_json(directory / "special_tokens_map.json", dict(zip(names, tokens)))
    return len(vocab)


def randomize(module: Any, seed: int, prefixes: Sequence[str] = ("",)) -> None:
    """Every parameter under `prefixes` drawn anew from one seeded generator, in name order: LayerNorm scales
    near 1, all else around 0, large enough that attention and the mimicking weights are not uniform."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in sorted(module.named_parameters()):
            if not name.startswith(tuple(prefixes)):
                continue
            noise = torch.randn(param.shape, generator=generator)
            if "LayerNorm" in name:
                value = 1.0 + 0.1 * noise if name.endswith("weight") else 0.1 * noise
            else:
                value = (0.1 if name.endswith("bias") else 0.3) * noise
            param.copy_(value)


def write_encoder(kind: str, heads: int, vocab_size: int, directory: Path) -> None:
    """A tiny random encoder saved as a pretrained model: BERTRAM starts from one (train.py's from_pretrained)."""
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    settings = dict(
        vocab_size_or_config_json_file=vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=heads,
        intermediate_size=INTERMEDIATE,
        hidden_act="gelu",
        max_position_embeddings=MAX_POSITIONS,
    )
    if kind == "bert":
        encoder = BertModel(BertConfig(type_vocab_size=2, layer_norm_eps=1e-12, **settings))
    else:
        encoder = RobertaModel(RobertaConfig(type_vocab_size=1, layer_norm_eps=1e-5, **settings))
    randomize(encoder, ENCODER_SEEDS[kind])
    directory.mkdir(parents=True)
    encoder.save_pretrained(str(directory))


def write_checkpoint(spec: Tuple[str, str, str, int, int], scratch: Path, out: Path) -> None:
    """One checkpoint, made and saved the way the reference's train.py makes and saves one."""
    import bertram
    from input_processor import InputProcessor

    name, kind, mode, heads, seed = spec
    directory = scratch / name  # built here, with the word list beside it; all but the list then goes to out
    directory.mkdir(parents=True)
    vocab_size = (write_wordpiece if kind == "bert" else write_bpe)(directory)
    encoder_dir = scratch / f"{kind}-{heads}"
    if not encoder_dir.exists():
        write_encoder(kind, heads, vocab_size, encoder_dir)
    (directory / WORD_LIST).write_text(
        "".join(f"{word} {100 + 7 * i}\n" for i, word in enumerate(NGRAM_WORDS)), encoding="utf8"
    )
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        processor = InputProcessor(
            word_embeddings_file=None,
            word_embeddings_format="text",
            train_files=[],
            vocab_file=WORD_LIST,
            vector_size=HIDDEN,
            ngram_threshold=NGRAM_THRESHOLD,
            max_seq_length=MAX_SEQ_LENGTH,
            model_cls=kind,
            bert_model=HERE,
            mode=mode,
        )
        config = bertram.BertramConfig(
            transformer_cls=kind,
            output_size=HIDDEN,
            mode=mode,
            ngram_vocab_size=processor.ngram_builder.get_number_of_ngrams(),
        )
        _, _, bertram_cls = bertram.MODELS[kind]
        model = bertram_cls.from_pretrained(str(encoder_dir), bertram_config=config)
        randomize(model, seed, ("ngram_processor.", "reliability_measure.", "linear."))
        model.setup()
        model.save_pretrained(HERE)
        config.save(bertram.CONFIG_NAME)
        processor.save(bertram.IP_NAME)
    finally:
        os.chdir(cwd)
    (out / name).mkdir()
    for path in sorted(directory.iterdir()):
        if path.name != WORD_LIST:
            shutil.copyfile(path, out / name / path.name)


def context_rows(processor: Any, word: str, contexts: Sequence[str]) -> Tuple[List[Dict[str, Any]], List[int]]:
    """The row of each context the reference keeps (one context at a time, through its own
    generate_processed_input), and the indices of those it skips."""
    from input_processor import RawInput

    rows, skipped = [], []
    for index, context in enumerate(contexts):
        try:
            processed = processor.generate_processed_input(RawInput(word, [context]))
        except IndexError:  # no row at all: the context does not hold the word
            skipped.append(index)
            continue
        length = int(processed.input_mask[0].sum())
        ids = [int(i) for i in processed.input_ids[0].tolist()]
        assert all(i == 0 for i in ids[length:])
        rows.append(
            {
                "context": index,
                "tokens": processor.tokenizer.convert_ids_to_tokens(ids[:length]),
                "input_ids": ids[:length],
                "mask_position": int(processed.mask_positions[0]),
            }
        )
    return rows, skipped


def infer_cases(directory: Path) -> Tuple[List[str], List[Dict[str, Any]]]:
    """Each case through the reference's BertramWrapper, loaded from the saved checkpoint."""
    import torch
    from bertram import BertramWrapper

    cwd = os.getcwd()
    os.chdir(directory)
    try:
        wrapper = BertramWrapper(HERE)
        processor = wrapper.input_processor
        captured: Dict[str, List[List[float]]] = {"form": [], "weights": []}
        hooks = [
            getattr(wrapper.model, module).register_forward_hook(
                lambda _module, _inputs, output, key=key: captured[key].append([float(v) for v in output[0].tolist()])
            )
            for module, key in (("ngram_processor", "form"), ("reliability_measure", "weights"))
        ]
        cases = []
        for name, word, contexts in CASES:
            for values in captured.values():
                values.clear()
            vector = wrapper.infer_vector(word, list(contexts))
            rows, skipped = context_rows(processor, word, contexts)
            batch = processor.generate_batch_from_input(word, list(contexts))
            if rows:  # the rows one at a time are the rows of the word's batch
                width = batch.input_ids.shape[1]
                assert batch.input_ids.tolist() == [r["input_ids"] + [0] * (width - len(r["input_ids"])) for r in rows]
                assert batch.mask_positions.tolist() == [r["mask_position"] for r in rows]
            features = processor.ngram_builder.get_ngram_features(word)
            cases.append(
                {
                    "name": name,
                    "word": word,
                    "contexts": list(contexts),
                    "vector": [float(v) for v in vector.to(torch.float32).tolist()],
                    "ngrams": list(features.ngrams),
                    "ngram_ids": [int(i) for i in features.ngram_ids],
                    "form_vector": captured["form"][0],
                    "weights": captured["weights"][0] if captured["weights"] else None,
                    "skipped": skipped,
                    "rows": rows,
                }
            )
        for hook in hooks:
            hook.remove()
        table = list(processor.ngram_builder.id2ngram)
    finally:
        os.chdir(cwd)
    return table, cases


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", required=True, help="a checkout of timoschick/bertram")
    parser.add_argument("--out", required=True, help="an empty directory to write the fixtures into")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    sys.path.insert(0, str(Path(args.reference).resolve()))
    stub_gensim()

    import torch

    torch.set_num_threads(1)  # one thread: the same sums in the same order, run after run
    torch.manual_seed(0)  # the reference's own initialisation draws too, before randomize overwrites it
    import bertram  # noqa: F401  (first: input_processor imports bertram, which imports input_processor)
    import transformers

    checkpoints: Dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bertram-reference-") as scratch:  # the encoders, the word lists
        for spec in CHECKPOINTS:
            write_checkpoint(spec, Path(scratch), out)
            table, cases = infer_cases(out / spec[0])
            checkpoints[spec[0]] = {
                "transformer_cls": spec[1],
                "mode": spec[2],
                "max_seq_length": MAX_SEQ_LENGTH,
                "ngram_table": table,
                "cases": cases,
            }
    versions = {
        "python": ".".join(map(str, sys.version_info[:3])),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    write_json(out / "cases.json", {"versions": versions, "checkpoints": checkpoints})
    return 0


if __name__ == "__main__":
    sys.exit(main())
