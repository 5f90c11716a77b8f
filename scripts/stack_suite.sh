#!/usr/bin/env bash
# Builds a venv for one library stack and runs the test suite in it (docs/packaging.md#the-stacks-it-runs-on).
#
#   bash scripts/stack_suite.sh VENV STACK [PYTEST ARGS...]
#
# STACK:
#   pinned  the stack CI installs: requirements-test.txt (spacy-transformers 1.4.0, transformers 4.53.x)
#   next    spacy-transformers 2.0 with transformers 5: from the registry, or from a source directory of
#           spacy-transformers given as SPACY_TRANSFORMERS_SRC=DIR (2.0.0 is released in its repository
#           before the registry serves it); TRANSFORMERS=VERSION picks transformers (default 5.24.0)
# PYTHON: the interpreter the venv is made from (default python3).
#
# VENV must not exist, or be a venv this script made (it leaves a marker file in it); the suite's own
# files are not touched. The venv imports the package from this checkout (an editable install).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
VENV=$1; STACK=$2; shift 2
PY=${PYTHON:-python3}
MARKER=".spacy-bertram-stack"
case "$STACK" in
  pinned|next) ;;
  *) echo "error: STACK must be pinned or next, got '$STACK'" >&2; exit 2 ;;
esac
if [ -e "$VENV" ] && [ ! -f "$VENV/$MARKER" ]; then
  echo "error: $VENV exists and is not a venv this script made; give a new path" >&2
  exit 2
fi
if [ -n "${SPACY_TRANSFORMERS_SRC:-}" ] && [ ! -f "$SPACY_TRANSFORMERS_SRC/setup.cfg" ]; then
  echo "error: SPACY_TRANSFORMERS_SRC=$SPACY_TRANSFORMERS_SRC is not a spacy-transformers source directory" \
       "(no setup.cfg)" >&2
  exit 2
fi
[ -d "$VENV" ] || "$PY" -m venv "$VENV"
echo "$STACK" > "$VENV/$MARKER"
PIP=("$VENV/bin/python" -m pip install -q)
# torch first and pinned, as scripts/install.sh does: an unpinned torch may pull a multi-GB CUDA build.
"${PIP[@]}" "$(grep -E '^torch==' requirements.txt)"
if [ "$STACK" = pinned ]; then
  "${PIP[@]}" -r requirements-test.txt
else
  ST=${SPACY_TRANSFORMERS_SRC:-"spacy-transformers>=2.0,<2.1"}
  "${PIP[@]}" "transformers==${TRANSFORMERS:-5.24.0}" "$(grep -E '^spacy[><=]' requirements.txt)" "$ST"
  # Everything else as pinned, but the stack's own lines (spacy-transformers, transformers, tokenizers).
  REST=$(mktemp)
  trap 'rm -f "$REST"' EXIT
  cat requirements.txt requirements-project.txt requirements-test.txt \
    | grep -v -E '^(-r |torch|spacy-transformers|transformers|tokenizers)' > "$REST"
  "${PIP[@]}" -r "$REST"
fi
"${PIP[@]}" --no-deps -e .
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import sys
names = ["torch", "spacy", "spacy-transformers", "thinc", "transformers", "tokenizers", "numpy", "pytest"]
print("stack:", "Python", sys.version.split()[0], "|", " | ".join(f"{n} {md.version(n)}" for n in names))
PY
"$VENV/bin/python" -m pytest tests -q -p no:cacheprovider "$@"
