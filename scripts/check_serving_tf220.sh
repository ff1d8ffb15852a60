#!/usr/bin/env bash
# Serves a fresh MiniLM + flow export (or EXPORT_DIR) from TF 2.21 (.venv) and from TF 2.20 + tensorflow-text
# 2.20.1 (what TF Serving 2.20 runs; the venv of scripts/tf220_venv.sh) through the TF1 session loader, audits its
# ops in both, and compares the embeddings (scripts/serving_across_versions.py; prints JSON, exit 1 on a failure).
# Usage, from anywhere:  bash scripts/check_serving_tf220.sh [--export_dir EXPORT_DIR] [--pooling P]
# Env: TF220_VENV (default ~/.cache/bert-flow-tf-tf220), PYTHON (to build it, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tf220_venv.sh
TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2} .venv/bin/python scripts/serving_across_versions.py \
  --other_python "$VENV/bin/python" "$@"
