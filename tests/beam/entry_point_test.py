"""`python -m bert_flow_tf.beam` with 2 workers: a worker killed mid-run ends the run in one line, a rerun completes
the store, and `run_flow.py --cache_dir` then runs no BERT on it."""
import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests import beam as beam_tests

beam_tests.require_apache_beam()

# pylint: disable=g-import-not-at-top,wrong-import-position
from bert_flow_tf import data
from bert_flow_tf import loaders
from bert_flow_tf.beam import local_runner
from bert_flow_tf.calibration import store_stream
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from tests import tiny_runs


# The kill test's input: the distinct sentences of the first rows of each STS-B split (1193 with 250 rows), about
# 300 shards at SHARD_SIZE: the write stage lasts long enough to be hit.
STSB_ROWS, SHARD_SIZE, POOLING, MAX_LEN = 250, 4, "first-last-avg", 16


@pytest.fixture(scope="module")
def killed_then_rerun(tmp_path_factory, data_dir):
  """The pipeline killed (one worker, SIGKILL) once its write stage has begun, then run again to the end, on the
  STS-B sentences of a tiny STS-B folder; returns the paths, the sentences and both runs' (returncode, stdout,
  stderr)."""
  tmp = tmp_path_factory.mktemp("beam_kill")
  model = tiny_runs.tiny_model_dir(tmp)
  stsb = tiny_runs.tiny_stsb(data_dir, tmp / "data", rows=STSB_ROWS)
  task = data.load_task("sts-b", stsb)
  sentences = sorted({s for split in (task.train, task.dev, task.test) for p in split
                      for s in (*p.sentences_a, *p.sentences_b)})
  (tmp / "in.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
  cache = tmp / "cache"
  command = [sys.executable, "-m", "bert_flow_tf.beam", f"--input_pattern={tmp / 'in.txt'}",
             f"--cache_dir={cache}", f"--model_dir={model}", f"--pooling={POOLING}", "--num_workers=2",
             f"--shard_size={SHARD_SIZE}", f"--max_seq_length={MAX_LEN}"]
  env = dict(os.environ, PYTHONPATH=tiny_runs.REPO)
  run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tiny_runs.REPO,
                         env=env, start_new_session=True)
  try:
    deadline = time.time() + 300
    while not glob.glob(str(cache / "*" / "mean-*" / "*.npz*")):   # the write stage has begun (a temporary file)
      assert run.poll() is None and time.time() < deadline, run.communicate()[1][-3000:]
      time.sleep(0.01)
    os.kill(local_runner.worker_pids(run.pid)[-1], signal.SIGKILL)
    out, err = run.communicate(timeout=240)                       # before: the runner waited forever
  finally:
    if run.poll() is None:
      os.killpg(run.pid, signal.SIGKILL)
  workers_left = local_runner.worker_pids(os.getpid())
  again = subprocess.run(command, capture_output=True, text=True, cwd=tiny_runs.REPO, env=env, timeout=300)
  return {"model": model, "stsb": stsb, "cache": cache, "sentences": sentences, "tmp": tmp,
          "workers_left": workers_left, "killed": (run.returncode, out, err),
          "rerun": (again.returncode, again.stdout, again.stderr)}


@pytest.mark.slow
def test_a_worker_killed_while_shards_are_written_ends_the_run_in_one_line_and_a_rerun_completes(killed_then_rerun):
  sentences, cache = killed_then_rerun["sentences"], killed_then_rerun["cache"]
  returncode, _, err = killed_then_rerun["killed"]
  # After the workers' own log lines (and "Killed" from a killed worker's shell): one error line, no traceback.
  lines = [line for line in err.splitlines() if line.strip() and line != "Killed"]
  assert returncode == 1 and "Traceback" not in err, err[-5000:]
  assert [line for line in lines if line.startswith("error:")] == lines[-1:], err[-5000:]
  assert lines[-1].startswith("error: a Beam worker process was lost (Worker subprocess exited with return code")
  assert killed_then_rerun["workers_left"] == []                  # no worker left behind
  returncode, out, err = killed_then_rerun["rerun"]
  assert returncode == 0, err[-3000:]
  summary = json.loads(out.strip().splitlines()[-1])
  assert summary["names"] == ["mean-1", "mean-3"]
  assert summary["embedded"] + summary["already_stored"] == len(sentences) and summary["already_stored"] > 0
  embedder = SentenceEmbedder(loaders.load_model(model_dir=killed_then_rerun["model"]), POOLING,
                              max_seq_length=MAX_LEN)
  store = EmbeddingStore(embedder, str(cache))
  fit = store_stream.fit_set(store.folder, embedder.pooling_spec, sentences)   # each sentence once, whatever was killed
  assert int(fit.rows.sum()) == len(sentences)
  store.ensure(sentences, ["mean-1", "mean-3"], show_progress=False)
  assert store.encoded == 0


@pytest.mark.slow
def test_run_flow_finds_every_vector_the_pipeline_wrote(killed_then_rerun):
  """run_flow.py --cache_dir on the same STS-B folder, model, pooling and length: the store the two pipeline runs
  filled holds every sentence it needs."""
  tmp = killed_then_rerun["tmp"]
  assert killed_then_rerun["rerun"][0] == 0, killed_then_rerun["rerun"][2][-3000:]
  flow = tiny_runs.run("run_flow", ["--model_dir", killed_then_rerun["model"],
                                    f"--data_dir={killed_then_rerun['stsb']}", f"--sentence_embedding_type={POOLING}",
                                    f"--max_seq_length={MAX_LEN}", "--nofit_flow",
                                    f"--output_parent_dir={tmp / 'exp'}", "--exp_name=c",
                                    f"--cache_dir={killed_then_rerun['cache']}"], cwd=tmp)
  assert flow.returncode == 0, flow.stderr[-3000:]
  assert "new sentences" not in flow.stderr                          # the store's "encoding N new sentences"
  assert (tmp / "exp" / "c" / "results.json").is_file()
