#!/usr/bin/env bash
# Runs the fast tests and the distributed/XLA ones (`pytest -m "not slow or distributed"`) on TensorFlow 2.20, the newest version with a TPU wheel
# (tensorflow-tpu 2.20.0) and the one TF Serving 2.20 runs, in the second venv that scripts/tf220_venv.sh builds.
# Usage, from anywhere:  bash scripts/check_tf220.sh [extra pytest args]
# Env: TF220_VENV (default ~/.cache/bert-flow-tf-tf220), PYTHON (to build it, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tf220_venv.sh
TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2} "$VENV/bin/python" -m pytest -q -m "not slow or distributed" -p no:cacheprovider "$@"
