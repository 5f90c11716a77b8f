#!/usr/bin/env bash
# A learning curve of BERTRAM: train on smaller sets chosen from one target set, measure each model
# on real rare words, then draw the curve.
#
#   bash scripts/learning_curve.sh OUT STORE TARGETS POINT...
#
# OUT      directory the points and the curve go to (OUT/NAME/..., OUT/curve/)
# STORE    the context store (contexts.sqlite of `prepare`)
# TARGETS  a target set made by `targets` (with --multi-piece-words for the multi-piece points)
# POINT    NAME:CORPUS_WORDS:MULTI_PIECE_WORDS, e.g. words-4k:4000:0 or mixed:4000:4000; the first
#          point is the reference the others are compared with
#
# Environment (all optional):
#   CURVE_RARIFIED   rarify output directories, space separated (synonym recovery on their substitutions)
#   CURVE_WORDNET    1 (default): synonym recovery on WordNet pairs too
#   CURVE_FOLD       fold of the rare words for the WordNet pairs (default 0/2)
#   CURVE_MAX_PAIRS  WordNet pairs sampled before the fold is taken (default 3000)
#   CURVE_EVAL_STORE the context store synonym recovery reads (default STORE); give one built without
#                    WordNet's glosses (the project's corpus/bertram-eval), which name the replaced words
#   CURVE_CRW        a CRW directory (pairs.tsv, contexts/) and CURVE_CARD a Card-660 pairs TSV, for `intrinsic`
#                    (one that is not there is skipped, and `intrinsic` names it)
#   CURVE_TRAIN      further `train` options, e.g. "--epochs 50 20 30"
#   CURVE_OUTPUT     where the curve goes (default OUT/curve)
#
# Every step writes under OUT/NAME only, and a finished step is skipped when the script runs again
# (train resumes a killed run itself): delete a point's directory to redo it. A point whose
# train/model (and train/metrics.json) is already there, say trained elsewhere, is only measured.
set -euo pipefail

if [ "$#" -lt 4 ]; then
    sed -n '2,27p' "$0"
    exit 2
fi
out=$1; store=$2; targets=$3; shift 3
python=${PYTHON:-python}
fold=${CURVE_FOLD:-0/2}
max_pairs=${CURVE_MAX_PAIRS:-3000}
eval_store=${CURVE_EVAL_STORE:-$store}
read -r -a train_options <<< "${CURVE_TRAIN:-}"
rarified=()
for dir in ${CURVE_RARIFIED:-}; do rarified+=(--rarified "$dir"); done

names=()
for point in "$@"; do
    IFS=: read -r name corpus_words multi_piece_words <<< "$point"
    if [ -z "$name" ] || [ -z "$corpus_words" ] || [ -z "$multi_piece_words" ]; then
        echo "learning_curve.sh: a point is NAME:CORPUS_WORDS:MULTI_PIECE_WORDS, got '$point'" >&2
        exit 2
    fi
    dir=$out/$name
    names+=("$dir")
    mkdir -p "$dir"
    echo "== $name: $corpus_words corpus words, $multi_piece_words multi-piece words ($(date +%T))"
    if [ ! -f "$dir/targets/targets.json" ] && [ ! -f "$dir/train/model/config.json" ]; then
        $python -m spacy_bertram targets "$store" "$dir/targets" --from-targets "$targets" \
            --max-words "$corpus_words" --multi-piece-words "$multi_piece_words" > /dev/null
    fi
    if [ ! -f "$dir/train/model/config.json" ]; then
        $python -m spacy_bertram train "$store" "$dir/train" --targets "$dir/targets" --no-ablation --no-progress \
            "${train_options[@]}" > "$dir/train.log" 2>&1
    fi
    model=$dir/train/model
    if [ "${#rarified[@]}" -gt 0 ] && [ ! -f "$dir/synonyms-rarified.json" ]; then
        $python -m bertram_experiments synonym-recovery "$model" "${rarified[@]}" --store "$eval_store" \
            --output "$dir/synonyms-rarified.json" > /dev/null
    fi
    if [ "${CURVE_WORDNET:-1}" = 1 ] && [ ! -f "$dir/synonyms-wordnet.json" ]; then
        $python -m bertram_experiments synonym-recovery "$model" --wordnet --store "$eval_store" --max-pairs "$max_pairs" \
            --fold "$fold" --output "$dir/synonyms-wordnet.json" > /dev/null
    fi
    intrinsic=()
    [ -n "${CURVE_CRW:-}" ] && intrinsic+=(--crw "$CURVE_CRW")
    [ -n "${CURVE_CARD:-}" ] && intrinsic+=(--card "$CURVE_CARD")
    if [ "${#intrinsic[@]}" -gt 0 ] && [ ! -f "$dir/intrinsic.json" ]; then
        $python -m bertram_experiments intrinsic "$model" "${intrinsic[@]}" --store "$store" \
            --output "$dir/intrinsic.json" --skip-missing > /dev/null
    fi
done
$python -m bertram_experiments learning-curve "${names[@]}" --output "${CURVE_OUTPUT:-$out/curve}"
