"""The wheel: built from the sources, installed into a fresh venv outside the repository, used from there.

The venv reaches the already-installed dependencies through a .pth file (pip installs the wheel with --no-deps), so
nothing is downloaded; the API script runs with its working directory outside the repository and no PYTHONPATH.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import pytest

import glow
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from tests import tiny_runs
from tests.embedding.engine_vectors import engine_vectors
from tests.embedding.tiny_model import SENTENCES

REPO = pathlib.Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "bert_flow_tf", "glow")

# Runs in the fresh venv, from a directory outside the repository: argv = model dir, output .npy.
_API_SCRIPT = """
import os, sys
import numpy as np
import bert_flow_tf, glow
model_dir, out = sys.argv[1:]
print(bert_flow_tf.__file__)
print(glow.__file__)
enc = bert_flow_tf.SentenceEncoder.from_pretrained(model_dir, pooling="first-last-avg", max_seq_length=16)
np.save(out, enc.encode(SENTENCES))
print(glow.GlowConfig.load("config_l2_d3_w32").to_dict())
print(sorted(m for m in sys.modules if m.startswith(("tensorflow_serving", "wordfreq"))))
import tensorflow as tf
print(os.environ.get("TF_USE_LEGACY_KERAS"), tf.keras.version())
"""


def _check(cmd, **kwargs):
  result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=300, **kwargs)
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
  return result.stdout


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_repository(tmp_path):
  src = tmp_path / "src"  # a copy, so that setuptools' build/ and egg-info stay out of the repository
  src.mkdir()
  for name in SOURCES:
    if (REPO / name).is_dir():
      shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
      shutil.copy(REPO / name, src / name)
  _check([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist",
          src])
  wheel, = (tmp_path / "dist").glob("bert_flow_tf-*.whl")
  venv = tmp_path / "venv"
  _check([sys.executable, "-m", "venv", "--without-pip", venv])
  python = venv / "bin" / "python"
  purelib = _check([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip()
  pathlib.Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
  _check([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-build-isolation",
          wheel])

  model_dir = tiny_runs.tiny_model_dir(tmp_path / "tiny")
  work = tmp_path / "work"
  work.mkdir()
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  script = f"SENTENCES = {SENTENCES!r}\n" + textwrap.dedent(_API_SCRIPT)
  lines = _check([python, "-c", script, model_dir, work / "api.npy"], cwd=work, env=env).splitlines()
  assert lines[0].startswith(purelib) and lines[1].startswith(purelib), lines[:2]  # the installed copies
  assert lines[2] == str(glow.GlowConfig.load("config_l2_d3_w32").to_dict())  # a data file found in the package
  assert lines[3] == "[]"  # plain encoding imports neither the serving nor the analysis extra
  assert lines[4].startswith("None 3.")  # the caller's environment is left alone: its tf.keras stays Keras 3
  want = engine_vectors(SentenceEmbedder(loaders.load_model(model_dir), "first-last-avg", 16), SENTENCES)
  np.testing.assert_allclose(np.load(work / "api.npy"), want, atol=1e-6)

  (work / "sentences.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
  _check([venv / "bin" / "bert-flow-encode", f"--model_dir={model_dir}", "--pooling=first-last-avg",
          "--max_seq_length=16", "--input_file=sentences.txt", "--output_file=cli.npy"], cwd=work, env=env)
  np.testing.assert_allclose(np.load(work / "cli.npy"), want, atol=1e-6)
  for command in ("bert-flow-run", "bert-flow-siamese"):
    assert (venv / "bin" / command).is_file()


def test_a_script_outside_the_repository_imports_the_package(tmp_path):
  """scripts/setup.sh installs this clone into .venv (editable): a script in any folder, run by the venv's python
  without PYTHONPATH, imports bert_flow_tf and glow from this clone."""
  script = tmp_path / "try.py"
  script.write_text("import bert_flow_tf, glow\nprint(bert_flow_tf.__file__)\nprint(glow.__file__)\n")
  env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
  lines = _check([sys.executable, script], cwd=tmp_path, env=env).splitlines()
  assert lines == [str(REPO / "bert_flow_tf" / "__init__.py"), str(REPO / "glow" / "__init__.py")]
