"""The internals the repository's own experiments, benchmarks and scripts import: not a stable API.

The public API is `spacy_bertram.__all__` (docs/api.md). The project side beside the package
(bertram_experiments/, benchmarks/, scripts/) shares more of the plugin than a user needs: the
command line's help texts and checks, the file rule's writers, Dask, training's parts. It imports
those names from here, `from spacy_bertram.project_support import fail`, so that they need not be
public; any of them may change or go in any release. The list holds exactly what the project side
imports (tests/test_package_layout.py checks it), each name imported from its module on first use,
as the package's own names are.
"""

from typing import Dict

from . import _lazy_names

#: name -> the module (relative to the package) that defines it, as "module" or "module:own_name".
_EXPORTS: Dict[str, str] = {
    # the model
    "NgramVocab": ".model.inputs",
    "model_fingerprint": ".model.files",
    "load_encoder": ".model.encoder",
    "resolve_base_model": ".model.encoder",
    "word_piece_ids": ".model.encoder",
    "word_start_tokens": ".model.encoder",
    # the component and the pipeline
    "Bertram_v1": ".architectures",
    "encoder_identity": ".pipeline.vector_table",
    "WordSources": ".pipeline.word_sources",
    "word_key_function": ".pipeline.word_sources",
    "install_extension": ".extension",
    "DOC_EXTENSION": ".types",
    "DEFAULT_CONTEXTS": ".types",
    "DEFAULT_CONTEXTS_PER_WORD": ".types",
    # the injection into the transformer
    "DEFAULT_INJECTION": ".types",
    "check_injection": ".types",
    "slash_token_id": ".injection.builders",
    "FREEZE_CALLBACK": ".injection.frozen_embeddings",
    "embedding_drift": ".injection.frozen_embeddings",
    # the rare-word rule and the frequency tables
    "is_alphabetic": ".rarity.rare_words",
    "DEFAULT_MIN_WORDPIECES": ".types",
    "WordfreqFrequencies": ".rarity.frequencies",
    "WorldFrequencies": ".rarity.frequencies",
    "COUNTS_FILE": ".rarity.frequencies",
    "DEFAULT_MAX_ZIPF": ".rarity.frequencies",
    "check_max_zipf": ".rarity.frequencies",
    # contexts: the stores, the sources, the dictionary
    "STORE_FILE": ".context_store",
    "add_texts": ".training.text_store",
    "tokenize": ".training.corpus",
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
    "build_targets": ".training.targets",
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

__getattr__, __dir__ = _lazy_names(__name__, _EXPORTS)
