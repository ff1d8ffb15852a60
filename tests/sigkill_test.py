"""SIGKILL safety: run_flow.py, run_siamese.py and an export killed with a real `kill -9` at several points, then
rerun.

Each kill is sent when a file shows the run is in the phase to hit (the embedding store's model.json: embedding;
a flow checkpoint: fitting; a SavedModel in the export's hidden staging folder: exporting; a training checkpoint:
siamese training). The state left behind is checked to be that phase's, and the final rerun must give the results of an
uninterrupted run exactly. A tiny random BERT and 24 rows per STS-B split keep each run to a few seconds of work.

The killed runs are real processes (the kill is what is tested). The final rerun and the uninterrupted reference
run are two command lines of one tests/entry_driver.py process, the rerun first: it starts from what the kills
left on disk, as a fresh process would, and TensorFlow's import is paid once for both.
"""
import json
import os
import signal
import subprocess
import time

import pytest

import bert_flow_tf
from tests import tiny_runs
from tests.serving import export_writer


def _run_until(script, args, cwd, marker, log, timeout=300):
  """Starts an entry point (its stdout and stderr go to the file `log`), sends SIGKILL once `marker()` is true;
  returns True if the kill came before the process ended by itself."""
  env = dict(os.environ, PYTHONPATH=tiny_runs.REPO)
  with open(log, "wb") as f:
    process = subprocess.Popen(tiny_runs.command(script, args), cwd=cwd, env=env, stdout=f, stderr=f)
  deadline = time.monotonic() + timeout
  try:
    while time.monotonic() < deadline:
      if process.poll() is not None:
        return False
      if marker():
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return True
      time.sleep(0.01)
    raise AssertionError(f"{script}: no marker within {timeout} s")
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()


def _exists(folder, pattern):
  return lambda: any(folder.glob(pattern))


def _rerun_and_reference(script, rerun_args, reference_args, cwd):
  """Runs the killed run's rerun and an uninterrupted reference in one process; both must succeed."""
  runs = tiny_runs.drive(script, {"final": rerun_args, "reference": reference_args}, cwd)
  for run in runs.values():
    assert run["returncode"] == 0, run["stderr"][-3000:]
  return runs["final"], runs["reference"]


@pytest.fixture(scope="module")
def flow_setup(tmp_path_factory, data_dir):
  root = tmp_path_factory.mktemp("sigkill_flow")
  model = tiny_runs.tiny_model_dir(root)
  data = tiny_runs.tiny_stsb(data_dir, root / "data", rows=24)
  flow = tiny_runs.tiny_flow_config(root / "tiny_flow.json")
  return root, ["--model_dir", model, "--data_dir", data, "--task_name=sts-b", "--sentence_embedding_type=last-avg",
                "--flow_model_config", flow, "--train_batch_size=2", "--save_checkpoints_steps=4",
                "--baselines=whitening", "--exp_name=k"]


@pytest.mark.slow
def test_run_flow_killed_while_embedding_fitting_and_exporting_resumes_to_the_same_results(flow_setup):
  root, args = flow_setup
  exp, export = root / "exp", root / "export"
  run_args = args + [f"--output_parent_dir={exp}", f"--export_dir={export}"]
  out, flow_dir = exp / "k", exp / "k" / "flows" / "target-STS-B"
  # 1. While embedding: the store has written model.json and encodes (traces, then runs) the sentences.
  assert _run_until("run_flow", run_args, root, _exists(exp / "cache", "*/model.json"), root / "1.log")
  assert not flow_dir.exists() and not (out / "results.json").exists()
  # 2. While fitting: once the first flow checkpoint (step 4 of 36) is recorded in the `checkpoint` file. Reaching
  # it, the rerun survived kill 1.
  assert _run_until("run_flow", run_args, root, _exists(flow_dir, "checkpoint"), root / "2.log")
  assert not json.loads((flow_dir / "flow.json").read_text())["complete"]
  assert not (out / "results.json").exists()
  # 3. While exporting: the text SavedModel is being written in the export's hidden staging folder beside export/.
  # The results were written before the export began (compared with the uninterrupted run's below: the rerun
  # survived kill 2).
  assert _run_until("run_flow", run_args, root, _exists(root, ".tmp-*/text/.tmp-*"), root / "3.log")
  assert "resuming from" in (root / "3.log").read_text()
  after_kill_3 = json.loads((out / "results.json").read_text())
  assert not export.exists()
  # 4. The rerun completes: the cached vectors, the fitted flow, and a complete export. Then the uninterrupted run.
  final, reference = _rerun_and_reference("run_flow", run_args, args + [f"--output_parent_dir={root / 'ref'}"], root)
  assert "already fitted" in final["stderr"] and "already fitted" not in reference["stderr"]
  expected = json.loads((root / "ref" / "k" / "results.json").read_text())
  assert after_kill_3 == expected
  assert json.loads((out / "results.json").read_text()) == expected
  assert (export / "text" / "1" / "saved_model.pb").is_file() and (export / "export_info.json").is_file()
  assert not list(root.glob(".tmp-*"))  # the killed export's staging folder, removed by the rerun


@pytest.mark.slow
def test_an_export_killed_part_way_leaves_no_export_and_the_rerun_writes_a_whole_one(tmp_path):
  """Killed while its search model is written, after its text and ids models: before exports were written whole,
  that left text/, ids/ and export_info.json, which loaded as an export without its search model."""
  model, export = tiny_runs.tiny_model_dir(tmp_path), tmp_path / "export"
  searching = lambda: any(p.parent.name == "search" for p in tmp_path.rglob(".tmp-*"))
  assert _run_until("export", [model, str(export), "16", "30"], tmp_path, searching, tmp_path / "killed.log")
  assert not export.exists() and len(list(tmp_path.glob(".tmp-*"))) == 1  # the hidden staging folder alone
  with pytest.raises(FileNotFoundError, match="no such export folder"):
    bert_flow_tf.ExportedEncoder(str(export))
  enc = bert_flow_tf.SentenceEncoder.from_pretrained(model, pooling="last-avg", max_seq_length=16)
  enc.export(str(export), corpus=export_writer.corpus(16, 30))
  assert bert_flow_tf.ExportedEncoder(str(export)).search_precisions == ("float32",)
  assert not list(tmp_path.glob(".tmp-*"))  # the killed export's staging folder, removed by the next write


@pytest.mark.slow
def test_run_siamese_killed_mid_training_resumes_to_the_same_results(tmp_path):
  from tests.tiny import make_tiny_setup  # pylint: disable=g-import-not-at-top
  from tests.tiny import siamese_flow_config  # pylint: disable=g-import-not-at-top
  model, data = make_tiny_setup(tmp_path)
  args = ["--task_name=snli", f"--data_dir={data}", f"--model_dir={model}", "--train_splits=dev,test",
          "--max_seq_length=16", "--train_batch_size=4", "--num_train_epochs=1", "--save_checkpoints_steps=2",
          "--learning_rate=1e-3", "--use_flow", "--flow_loss", f"--flow_model_config={siamese_flow_config(model)}",
          "--do_train", "--do_eval", "--do_predict"]
  out = tmp_path / "out"
  run_args = args + [f"--output_dir={out}"]
  assert _run_until("run_siamese", run_args, tmp_path, _exists(out / "checkpoints", "checkpoint"),
                    tmp_path / "killed.log")
  assert not (out / "eval_results.json").exists()  # killed after step 2 of 12
  final, reference = _rerun_and_reference("run_siamese", run_args, args + [f"--output_dir={tmp_path / 'ref'}"],
                                          tmp_path)
  assert "restored" in final["stderr"] and "restored" not in reference["stderr"]
  for name in ("eval_results.json", "test_results.tsv"):
    assert (out / name).read_text() == (tmp_path / "ref" / name).read_text(), name
