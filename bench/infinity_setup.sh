#!/usr/bin/env bash
# Builds the Python that bench/serve_http.py runs Infinity (infinity-emb) in, once: torch CPU, Infinity's server
# and its torch engine (its fastest CPU engine that runs here: bench/README.md says why not its ONNX one).
# Usage: bash bench/infinity_setup.sh [VENV_DIR]   (default /tmp/infvenv; serve_http.py --infinity_python VENV/bin/python)
set -euo pipefail
VENV=${1:-/tmp/infvenv}
if [ -f "$VENV/.ready" ]; then echo "$VENV is ready"; exit 0; fi
python3 -m venv "$VENV"
# The CPU build of torch where a wheel is at hand (pip's find-links); else PyPI's (which pulls CUDA libraries).
"$VENV/bin/pip" install -q "torch==2.13.0+cpu" || "$VENV/bin/pip" install -q "torch==2.13.0"
# infinity-emb 0.0.78 (its last release) with the transformers its torch engine still imports (< 4.49).
"$VENV/bin/pip" install -q "infinity-emb[server,torch]==0.0.78" "transformers>=4.47,<4.49"
touch "$VENV/.ready"
echo "$VENV is ready"
