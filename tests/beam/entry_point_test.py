"""`python -m bert_flow_tf.beam` with 2 workers fills the store; `run_flow.py --cache_dir` then runs no BERT. A
worker killed mid-run ends the run in one line, and a rerun completes."""
import glob
import json
import os
import random
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


@pytest.mark.slow
def test_run_flow_finds_every_vector_the_pipeline_wrote(tmp_path, data_dir):
  model = tiny_runs.tiny_model_dir(tmp_path)
  stsb = tiny_runs.tiny_stsb(data_dir, tmp_path / "data", rows=16)
  task = data.load_task("sts-b", stsb)
  sentences = sorted({s for split in (task.train, task.dev, task.test) for p in split
                      for s in (*p.sentences_a, *p.sentences_b)})
  (tmp_path / "sentences.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
  cache = tmp_path / "exp" / "cache"
  env = dict(os.environ, PYTHONPATH=tiny_runs.REPO)
  beam = subprocess.run(
      [sys.executable, "-m", "bert_flow_tf.beam", f"--input_pattern={tmp_path / 'sentences.txt'}",
       f"--cache_dir={cache}", f"--model_dir={model}", "--pooling=last-avg", "--num_workers=2"],
      capture_output=True, text=True, cwd=tiny_runs.REPO, env=env, timeout=300)
  assert beam.returncode == 0, beam.stderr[-3000:]
  summary = json.loads(beam.stdout.strip().splitlines()[-1])
  assert summary["embedded"] == len(sentences) and summary["names"] == ["mean-3"]
  flow = tiny_runs.run("run_flow", ["--model_dir", model, f"--data_dir={stsb}", "--sentence_embedding_type=last-avg",
                                    "--nofit_flow", f"--output_parent_dir={tmp_path / 'exp'}", "--exp_name=c",
                                    f"--cache_dir={cache}"], cwd=tmp_path)
  assert flow.returncode == 0, flow.stderr[-3000:]
  assert "new sentences" not in flow.stderr                          # the store's "encoding N new sentences"
  assert (tmp_path / "exp" / "c" / "results.json").is_file()


def _sentences(n, seed=0):
  rng = random.Random(seed)
  words = ["a", "man", "dog", "runs", "plays", "the", "guitar", ".", "x", "zebra"]
  out = set()
  while len(out) < n:
    out.add(" ".join(rng.choice(words) for _ in range(rng.randint(1, 20))))
  return sorted(out)


@pytest.mark.slow
def test_a_worker_killed_while_shards_are_written_ends_the_run_in_one_line_and_a_rerun_completes(tmp_path):
  model = tiny_runs.tiny_model_dir(tmp_path)
  sentences = _sentences(3000)
  (tmp_path / "in.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
  cache = tmp_path / "cache"
  command = [sys.executable, "-m", "bert_flow_tf.beam", f"--input_pattern={tmp_path / 'in.txt'}",
             f"--cache_dir={cache}", f"--model_dir={model}", "--pooling=first-last-avg", "--num_workers=2",
             "--shard_size=10", "--max_seq_length=16"]
  env = dict(os.environ, PYTHONPATH=tiny_runs.REPO)
  run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tiny_runs.REPO,
                         env=env, start_new_session=True)
  try:
    deadline = time.time() + 300
    while not glob.glob(str(cache / "*" / "mean-*" / "*.npz*")):   # the write stage has begun (a temporary file)
      assert run.poll() is None and time.time() < deadline, run.communicate()[1][-3000:]
      time.sleep(0.01)
    os.kill(local_runner.worker_pids(run.pid)[-1], signal.SIGKILL)
    _, err = run.communicate(timeout=240)                       # before: the runner waited forever
  finally:
    if run.poll() is None:
      os.killpg(run.pid, signal.SIGKILL)
  # After the workers' own log lines (and "Killed" from a killed worker's shell): one error line, no traceback.
  lines = [line for line in err.splitlines() if line.strip() and line != "Killed"]
  assert run.returncode == 1 and "Traceback" not in err, err[-5000:]
  assert [line for line in lines if line.startswith("error:")] == lines[-1:], err[-5000:]
  assert lines[-1].startswith("error: a Beam worker process was lost (Worker subprocess exited with return code")
  assert local_runner.worker_pids(os.getpid()) == []            # no worker left behind
  again = subprocess.run(command, capture_output=True, text=True, cwd=tiny_runs.REPO, env=env, timeout=300)
  assert again.returncode == 0, again.stderr[-3000:]
  summary = json.loads(again.stdout.strip().splitlines()[-1])
  assert summary["embedded"] + summary["already_stored"] == len(sentences) and summary["already_stored"] > 0
  embedder = SentenceEmbedder(loaders.load_model(model_dir=model), "first-last-avg", max_seq_length=16)
  store = EmbeddingStore(embedder, str(cache))
  fit = store_stream.fit_set(store.folder, embedder.pooling_spec, sentences)   # each sentence once, whatever was killed
  assert int(fit.rows.sum()) == len(sentences)
  store.ensure(sentences, ["mean-1", "mean-3"], show_progress=False)
  assert store.encoded == 0
