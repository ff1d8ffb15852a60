"""The `bert-flow-beam` command's own lines: its install extra and script, --help and a missing apache_beam (both
without apache_beam), and bad inputs refused in one line before any work. Runs without apache_beam where it can."""
import importlib.util
import os
import subprocess
import sys
import tomllib

import pytest

from tests import tiny_runs

REPO = tiny_runs.REPO
# Runs the command as the installed script does, with apache_beam made unimportable (Python's documented way:
# None in sys.modules), as on a machine without the extra.
_WITHOUT_BEAM = ("import sys; sys.modules['apache_beam'] = None; sys.argv[0] = 'bert-flow-beam'; "
                 "import importlib; module, _, name = sys.argv.pop(1).partition(':'); "
                 "getattr(importlib.import_module(module), name)()")


def _pyproject():
  with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
    return tomllib.load(f)


def _run(args, without_beam=False, cwd=REPO):
  entry = _pyproject()["project"]["scripts"]["bert-flow-beam"]
  command = ([sys.executable, "-c", _WITHOUT_BEAM, entry] if without_beam
             else [sys.executable, "-m", "bert_flow_tf.beam"]) + list(args)
  return subprocess.run(command, capture_output=True, text=True, cwd=cwd, timeout=300,
                        env=dict(os.environ, PYTHONPATH=REPO))


def test_the_beam_extra_pins_what_requirements_beam_pins():
  project = _pyproject()["project"]
  assert project["scripts"]["bert-flow-beam"] == "bert_flow_tf.cli.beam:run"
  pins = [line.split("#")[0].strip() for line in open(os.path.join(REPO, "requirements-beam.txt"), encoding="utf-8")]
  pins = [p for p in pins if p]
  assert pins == ["apache-beam==2.77.0", "protobuf>=6.31.1,<7", "numpy<2.5"]
  assert project["optional-dependencies"]["beam"] == ["apache-beam>=2.77.0,<2.78", "protobuf>=6.31.1,<7",
                                                      "numpy<2.5"]


@pytest.mark.slow  # two processes, each importing TensorFlow
def test_help_exits_0_and_a_run_says_what_to_install_without_apache_beam(tmp_path):
  helped = _run(["--help"], without_beam=True)
  assert helped.returncode == 0, helped.stderr[-2000:]
  assert "--input_pattern" in helped.stdout and "--num_workers" in helped.stdout
  (tmp_path / "in.txt").write_text("a sentence\n", encoding="utf-8")
  ran = _run([f"--input_pattern={tmp_path / 'in.txt'}", f"--cache_dir={tmp_path / 'cache'}", "--model_dir=m"],
             without_beam=True)
  assert ran.returncode == 1
  assert tiny_runs.messages(ran.stderr) == [
      'error: the Beam command needs apache_beam, which is not installed: pip install "bert-flow-tf[beam]" '
      "(in a clone: pip install -r requirements-beam.txt)"]
  assert not (tmp_path / "cache").exists()


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("apache_beam") is None, reason="apache_beam is not installed")
def test_bad_inputs_end_in_one_line_before_any_work(tmp_path):
  model = tiny_runs.tiny_model_dir(tmp_path)
  (tmp_path / "good.txt").write_text("a man\nthe dog\n", encoding="utf-8")
  (tmp_path / "bad.txt").write_bytes(b"a man\nthe \xff dog\n")
  cache = tmp_path / "cache"
  common = [f"--cache_dir={cache}", f"--model_dir={model}"]
  cases = {
      f"--input_pattern={tmp_path / '*.txt'}":
          f"error: not valid UTF-8 (byte 0xff at column 5) ({tmp_path / 'bad.txt'}:2)",
      f"--input_pattern={tmp_path / 'none*.txt'}": f"error: no file matches this pattern (--input_pattern="
                                                   f"{tmp_path / 'none*.txt'})",
      f"--input_pattern={tmp_path / 'missing.txt'}": f"error: no file matches this pattern (--input_pattern="
                                                     f"{tmp_path / 'missing.txt'})",
  }
  # The command lines run in one tests/entry_driver.py process (its `run()`, as the script's, once per line).
  ran = tiny_runs.drive("beam", {**{arg: [arg] + common for arg in cases},
                                 "pooling": [f"--input_pattern={tmp_path / 'good.txt'}", "--pooling=last-avg,nope"]
                                            + common,
                                 "shard_size": [f"--input_pattern={tmp_path / 'good.txt'}", "--shard_size=0"] + common},
                        tmp_path)
  for arg, line in cases.items():
    assert ran[arg]["returncode"] == 1 and tiny_runs.messages(ran[arg]["stderr"]) == [line], (arg, ran[arg])
  assert ran["pooling"]["returncode"] == 1 and len(tiny_runs.messages(ran["pooling"]["stderr"])) == 1
  assert "(--pooling)" in ran["pooling"]["stderr"]
  assert ran["shard_size"]["returncode"] == 1 and tiny_runs.messages(ran["shard_size"]["stderr"]) == [
      "error: flag --shard_size=0: 0 is not a positive integer (--shard_size)"], ran["shard_size"]["stderr"][-3000:]
  assert not cache.exists()                                       # nothing was embedded or written
