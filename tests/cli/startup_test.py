"""What a command prints and loads before its work: --help and bad flags without TensorFlow, and a run that shows
only its own lines (no TensorFlow start-up notes)."""
import os
import re
import subprocess
import sys

import pytest

from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES

# Runs one command's `run()` with argv, then says whether TensorFlow (or the package's TF-backed code) was loaded.
_PROBE = """
import sys
sys.argv = ["cmd", *sys.argv[2:]]
from bert_flow_tf.cli import {command} as command
try:
  command.run()
except SystemExit as e:
  print("exit", e.code, "tensorflow" in sys.modules, "bert_flow_tf.sentence_encoder" in sys.modules)
"""
# absl's own log lines, from the package's Python files: what a command's run may print on stderr.
_OWN_LINE = re.compile(r"^[IWE]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \w+\.py:\d+\] ")


def _env(**extra):
  """The test process's environment without TF_CPP_MIN_LOG_LEVEL (conftest sets it), as a user's shell has it."""
  env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
  return dict(env, PYTHONPATH=tiny_runs.REPO, **extra)


@pytest.mark.parametrize("command,args,status", [
    ("run_flow", ["--help"], 0), ("run_siamese", ["--helpfull"], 0), ("encode", ["--help"], 0),
    ("beam", ["--help"], 0), ("serve", ["--help"], 0), ("run_flow", ["--pooling=bogus"], 1),
    ("encode", ["--max_seq_length=1"], 1), ("serve", ["--port=-1"], 1)])
def test_help_and_flag_errors_answer_without_tensorflow(command, args, status):
  done = subprocess.run([sys.executable, "-c", _PROBE.format(command=command), "--", *args], capture_output=True,
                        text=True, cwd=tiny_runs.REPO, env=_env(), timeout=120)
  assert done.stdout.splitlines()[-1] == f"exit {status} False False", done.stdout[-500:] + done.stderr[-1000:]
  if status:
    assert done.stderr.startswith("error: flag --")
  # The usage examples print as written: a docstring's line continuation (a lone backslash) ran two lines together.
  assert [line for line in done.stdout.splitlines() if re.search(r"\S {3,}--", line)] == []


def test_importing_the_packages_loads_no_tensorflow():
  done = subprocess.run([sys.executable, "-c", "import sys, bert_flow_tf, glow, bert_flow_tf.loaders, "
                         "bert_flow_tf.siamese; print('tensorflow' in sys.modules)"],
                        capture_output=True, text=True, cwd=tiny_runs.REPO, env=_env(), timeout=120)
  assert done.stdout.strip() == "False", done.stderr[-1000:]


@pytest.mark.slow  # an encode process
def test_the_encode_command_prints_only_its_own_lines(tmp_path):
  """The README's encode command on the tiny model: every stderr line is one of the package's log lines (the
  strategy, the cut warning once, the encoding, the file written), none of TensorFlow's start-up notes."""
  model = tiny_runs.tiny_model_dir(tmp_path)
  (tmp_path / "in.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
  command = tiny_runs.command("encode", [f"--model_dir={model}", "--max_seq_length=16", "--noprogress",
                                         f"--input_file={tmp_path / 'in.txt'}", f"--output_file={tmp_path / 'o.npy'}"])
  done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=300)
  assert done.returncode == 0, done.stderr
  lines = done.stderr.splitlines()
  assert [line for line in lines if not _OWN_LINE.match(line)] == [] and done.stdout == ""
  assert len(lines) == 6 and sum("were cut to 16 tokens" in line for line in lines) == 1, lines


@pytest.mark.slow  # loads TensorFlow
def test_the_python_api_loads_tensorflow_without_its_start_up_notes():
  done = subprocess.run([sys.executable, "-c", "import bert_flow_tf; bert_flow_tf.SentenceEncoder; import tensorflow "
                         "as tf; print(float(tf.reduce_sum(tf.ones([2]))))"],
                        capture_output=True, text=True, cwd=tiny_runs.REPO, env=_env(), timeout=120)
  assert (done.stdout, done.stderr) == ("2.0\n", ""), done.stderr[-2000:]
