"""spacy-bertram: BERTRAM embeddings for rare words in spaCy transformer pipelines.

`__all__` is the public API: the names a user (and the project's experiments, benchmarks and
scripts) may rely on, grouped and described in docs/api.md. Everything else is internal and may
change; import the names from here, `from spacy_bertram import load_bertram`.

The names are imported on first use (PEP 562), not with the package, each from its own module:
`python -m spacy_bertram --help` must not wait for torch and transformers, and `from spacy_bertram
import check_output_dir` costs what `spacy_bertram.fileio` costs. spaCy finds the factory `bertram`
and everything else the configs name through the entry points in pyproject.toml: the component's
module, and `architectures.py`, where every registration lives.
"""

import sys
from importlib import import_module
from typing import Any, Dict, List


__version__ = "0.1.0"

if "spacy" in sys.modules:
    # spaCy is loaded already (`import spacy` came first): `spacy.registry.context_sources` costs nothing now,
    # and a user's `@spacy.registry.context_sources(...)` below `import spacy_bertram` finds it.
    import_module(".registries", __name__)

#: public name -> the module (relative to this package) that defines it, as "module" or, where the public
#: name differs from the module's own, "module:name". Grouped as docs/api.md lists them.
_EXPORTS: Dict[str, str] = {
    # the model
    "BertramConfig": ".model.config",
    "PAPER_SETTINGS": ".model.config",
    "BertramNetwork": ".model.network",
    "NgramVocab": ".model.inputs",
    "create_bertram": ".model.storage",
    "load_bertram": ".model.storage",
    "save_bertram": ".model.storage",
    "model_fingerprint": ".model.files",
    "DEFAULT_BASE_MODEL": ".model.encoder",
    "load_encoder": ".model.encoder",
    "resolve_base_model": ".model.encoder",
    "word_piece_ids": ".model.encoder",
    "word_start_tokens": ".model.encoder",
    # the component and the pipeline
    "BertramComponent": ".pipeline.component",
    "DEFAULT_CONFIG": ".pipeline.component",
    "make_bertram": ".pipeline.component",
    "save_pipeline": ".pipeline.serialization",
    "Bertram_v1": ".architectures",
    "get_bertram_network": ".model.layers",
    "set_bertram_network": ".model.layers",
    "VectorCache": ".pipeline.vector_cache",
    "VectorTable": ".pipeline.vector_table",
    "encoder_identity": ".pipeline.vector_table",
    "WordSources": ".pipeline.word_sources",
    "word_key_function": ".pipeline.word_sources",
    "install_extension": ".extension",
    "DOC_EXTENSION": ".types",
    "DEFAULT_CONTEXTS": ".types",
    "DEFAULT_CONTEXTS_PER_WORD": ".types",
    # the injection into the transformer
    "BertramTransformerModel": ".injection",
    "DEFAULT_INJECTION": ".types",
    "INJECTION_MODES": ".types",
    "check_injection": ".types",
    "slash_token_id": ".injection.builders",
    "FREEZE_CALLBACK": ".injection.frozen_embeddings",
    "embedding_drift": ".injection.frozen_embeddings",
    # the rare-word rule and the frequency tables
    "RareWordRule": ".rarity.rare_words",
    "RareWordFinder": ".rarity.rare_words",
    "is_alphabetic": ".rarity.rare_words",
    "DEFAULT_MIN_WORDPIECES": ".types",
    "CountTable": ".rarity.frequencies",
    "WordfreqFrequencies": ".rarity.frequencies",
    "WorldFrequencies": ".rarity.frequencies",
    "COUNTS_FILE": ".rarity.frequencies",
    "DEFAULT_MAX_ZIPF": ".rarity.frequencies",
    "check_max_zipf": ".rarity.frequencies",
    # contexts: the stores, the sources, the dictionary
    "ContextStore": ".context_store",
    "open_context_store": ".context_store",
    "STORE_FILE": ".context_store",
    "add_texts": ".training.text_store",
    "read_texts": ".training.text_store",
    "tokenize": ".training.corpus",
    "DocContexts": ".pipeline.context_sources",
    "chain_contexts": ".pipeline.context_sources",
    "DefinitionStore": ".dictionary.store",
    "load_wordnet": ".dictionary.wordnet",
    "find_wordnet_source": ".dictionary.wordnet",
    "is_wordnet_dir": ".dictionary.wordnet",
    "WordNetMissingError": ".dictionary.wordnet",
    # the file rule
    "check_output_dir": ".fileio",
    "check_output_file": ".fileio",
    "atomic_directory": ".fileio",
    "atomic_path": ".fileio",
    "write_json_atomic": ".fileio",
    "write_bytes_atomic": ".fileio",
    "mark_json": ".fileio",
    "text_mark": ".fileio",
    "output_mark": ".fileio",
    "remove_written": ".fileio",
    "PathLike": ".types",
    # the device
    "select_device": ".device",
    "use_device": ".device",
    "make_deterministic": ".device",
    # training: the steps, their settings, checkpoints
    "prepare": ".training.prepare",
    "build_targets": ".training.targets",
    "train": ".training.run",
    "build_vector_table": ".training.vectors",
    "TrainSettings": ".training.settings",
    "TrainingData": ".training.settings",
    "RunOptions": ".training.settings",
    "OTASettings": ".training.settings",
    "check_workers": ".training.settings",
    "MemoryTrainingSource": ".training.sources",
    "progress_bar": ".training.progress",
    "CHECKPOINTS_DIR": ".checkpoint_logger",
    "CHECKPOINT_LOGGER": ".checkpoint_logger:LOGGER_NAME",
    "check_checkpoint_steps": ".checkpoint_logger",
    "step_dir": ".checkpoint_logger",
    # Dask
    "open_client": ".training.distributed",
    "optional_client": ".training.distributed",
    "run_tasks": ".training.distributed",
    "describe_client": ".training.distributed",
    "local_threads": ".training.distributed",
    # the command line's shared parts
    "command_line": ".cli.app",
    "run_checked": ".cli.app",
    "fail": ".cli.app",
    "echo_json": ".cli.app",
    "setup_logging": ".cli.app",
    "number_in": ".cli.app",
    "count_range": ".bounds",
    "check_count": ".bounds",
    "COUNT_BOUNDS": ".bounds",
    "check_gpu": ".cli.app",
    "check_lang": ".cli.app",
    "check_made_by": ".cli.app",
    "check_model": ".cli.app",
    "check_store": ".cli.app",
    "FORCE_HELP": ".cli.app",
    "FORCE_FILE_HELP": ".cli.app",
    "GPU_HELP": ".cli.app",
    "INT8_ENCODER_HELP": ".cli.app",
    "MAX_ZIPF_HELP": ".cli.app",
    # errors
    "Errors": ".errors",
    "Warnings": ".errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name == "injection":  # the old eager import made `spacy_bertram.injection` an attribute
        return import_module(".injection", __name__)
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, own_name = _EXPORTS[name].partition(":")
    value = getattr(import_module(module, __name__), own_name or name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted([*globals(), *_EXPORTS])
