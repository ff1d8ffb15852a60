#!/usr/bin/env bash
# Builds the Python that bench/vs_st.py runs sentence-transformers in (torch CPU, ONNX Runtime, OpenVINO), once.
# Usage: bash bench/vs_st_setup.sh [VENV_DIR]   (default /tmp/stvenv; bench/vs_st.py --peers_python VENV/bin/python)
set -euo pipefail
VENV=${1:-/tmp/stvenv}
if [ -f "$VENV/.ready" ]; then echo "$VENV is ready"; exit 0; fi
python3 -m venv "$VENV"
# The CPU build of torch where a wheel is at hand (pip's find-links); else PyPI's (which pulls CUDA libraries).
"$VENV/bin/pip" install -q "torch==2.13.0+cpu" || "$VENV/bin/pip" install -q "torch==2.13.0"
"$VENV/bin/pip" install -q "sentence-transformers[onnx,openvino]"
touch "$VENV/.ready"
echo "$VENV is ready"
