"""Helpers for tests that run the entry points as subprocesses on a tiny model and a few real STS-B rows."""
import json
import os
import re
import subprocess
import sys

from tests import tiny

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = {"encode": ["-m", "bert_flow_tf.encode"], "run_flow": [os.path.join(REPO, "run_flow.py")],
           "run_siamese": [os.path.join(REPO, "run_siamese.py")], "export": ["-m", "tests.serving.export_writer"]}
# Lines that are logs, not messages: absl's Python log lines and TensorFlow's native start-up notices (glog format,
# and the banner before absl::InitializeLog, which the C++ runtime prints whatever TF_CPP_MIN_LOG_LEVEL says).
_LOG_LINE = re.compile(r"^([IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+:\d+\]|WARNING: All log messages before absl|"
                       r"INFO:tensorflow:|WARNING:tensorflow:|To enable the following instructions)")


def tiny_model_dir(folder):
  """Writes the tiny random BERT of tests/embedding/tiny_model.py as an HF directory; returns its path (str)."""
  from bert_flow_tf.loaders import safetensors as hf_loader  # pylint: disable=g-import-not-at-top
  from tests.embedding.tiny_model import tiny_model  # pylint: disable=g-import-not-at-top
  loaded = tiny_model(folder / "source")
  hf_loader.save_hf_encoder(loaded.encoder, loaded.config, str(folder / "model"), vocab_file=loaded.vocab_file)
  return str(folder / "model")


def tiny_stsb(data_dir, out_dir, rows):
  """A data dir whose STS-B csv files hold the first `rows` lines of the real ones; returns it (str)."""
  target = out_dir / "stsbenchmark"
  target.mkdir(parents=True)
  for split in ("train", "dev", "test"):
    lines = (data_dir / "stsbenchmark" / f"sts-{split}.csv").read_bytes().split(b"\n")[:rows]
    (target / f"sts-{split}.csv").write_bytes(b"\n".join(lines) + b"\n")
  return str(out_dir)


def tiny_flow_config(path):
  """tests/tiny.py's Glow config (one step per level: a fit in a second) written at `path`; returns it (str)."""
  return tiny.write_glow_config(path)


def command(script, args):
  return [sys.executable] + SCRIPTS[script] + list(args)


def run(script, args, cwd, timeout=600):
  """subprocess.CompletedProcess of an entry point ("encode", "run_flow", "run_siamese") run from the repo root."""
  env = dict(os.environ, PYTHONPATH=REPO)
  return subprocess.run(command(script, args), capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env)


def messages(stderr):
  """The lines of stderr that are not log lines (see _LOG_LINE)."""
  return [line for line in stderr.splitlines() if line.strip() and not _LOG_LINE.match(line)]


def drive(script, cases, cwd):
  """{name: {"returncode", "stdout", "stderr"}} of `cases` ({name: args}, run in this order), each command line of
  entry point `script` run by one tests/entry_driver.py process in the folder `cwd` (a pathlib.Path)."""
  cases_file, results_file = cwd / f"{script}_cases.json", cwd / f"{script}_results.json"
  cases_file.write_text(json.dumps({"script": script, "cases": {name: {"args": list(args), "cwd": str(cwd)}
                                                                for name, args in cases.items()}}))
  driver = subprocess.run([sys.executable, os.path.join(REPO, "tests", "entry_driver.py"), str(cases_file),
                           str(results_file)], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env=dict(os.environ, PYTHONPATH=REPO))
  assert driver.returncode == 0, driver.stderr[-3000:]
  return json.loads(results_file.read_text())
