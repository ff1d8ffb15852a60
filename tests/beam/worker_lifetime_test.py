"""No Beam worker process outlives the local runner's process. `python -m bert_flow_tf.beam` with 2 workers, its
main process sent SIGKILL or SIGTERM while the workers start and while they write shards: no process of the run is
left a moment later, a SIGTERM ends with status 143 in one line, and the store holds whole shards only (a rerun
completes it). Beam's own worker processes (--direct_running_mode=multi_processing) are refused.

Each run is started in a session of its own, so every process it ever made, reparented or not, carries the
session id (the main process's pid) in /proc/<pid>/stat: that is what is checked, not the run's descendants.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from tests import beam as beam_tests
from tests import tiny_runs

beam_tests.require_apache_beam()

# pylint: disable=g-import-not-at-top,wrong-import-position
from bert_flow_tf.beam import local_runner
from bert_flow_tf.embedding import store_files
from bert_flow_tf.utils import errors

# 1,200 sentences in shards of 2: the write stage lasts long enough to be hit.
SENTENCES, SHARD_SIZE, POOLING, MAX_LEN = 1200, 2, "first-last-avg", 16
# How long after the main process ends its workers may take to be gone. The kernel kills them as it ends (Beam's
# own workers, before: 121 s when they were starting, about 4 s when running, on the 2-core EPYC here).
GRACE_S = 2.0
STOP_S = 10.0   # how long the main process may take to end after the signal (it waits up to 5 s for its workers)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
  """The tiny model's folder and a file of SENTENCES distinct sentences."""
  tmp = tmp_path_factory.mktemp("beam_stop")
  rng, words, sentences = random.Random(0), "a man dog runs plays the guitar . x zebra".split(), set()
  while len(sentences) < SENTENCES:
    sentences.add(" ".join(rng.choice(words) for _ in range(rng.randint(1, 20))))
  (tmp / "in.txt").write_text("\n".join(sorted(sentences)) + "\n", encoding="utf-8")
  return tiny_runs.tiny_model_dir(tmp), tmp / "in.txt"


def _command(inputs, cache):
  model, corpus = inputs
  return [sys.executable, "-m", "bert_flow_tf.beam", f"--input_pattern={corpus}", f"--cache_dir={cache}",
          f"--model_dir={model}", f"--pooling={POOLING}", "--num_workers=2", f"--shard_size={SHARD_SIZE}",
          f"--max_seq_length={MAX_LEN}"]


def _session(sid):
  """[(pid, command line)] of the live processes (zombies hold nothing) in session `sid`."""
  found = []
  for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    try:
      with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
      with open(f"/proc/{pid}/cmdline", "rb") as f:
        command = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
      continue
    if int(fields[3]) == sid and fields[0] != b"Z":
      found.append((int(pid), command))
  return found


def _starting(run):
  """Whether a worker process of `run` exists (a process of its session running another command)."""
  with open(f"/proc/{run.pid}/cmdline", "rb") as f:
    main = f.read().replace(b"\0", b" ").decode(errors="replace")
  return any(pid != run.pid and command and command != main for pid, command in _session(run.pid))


def _writing(cache):
  """Whether the write stage has begun: a file (a shard or a temporary one) in a quantity folder of the store."""
  folders = [os.path.join(cache, key, name) for key in (os.listdir(cache) if os.path.isdir(cache) else ())
             if os.path.isdir(os.path.join(cache, key)) for name in os.listdir(os.path.join(cache, key))]
  return any(os.path.isdir(folder) and os.listdir(folder) for folder in folders)


def _stop(inputs, cache, log, moment, signum):
  """Runs the command until `moment` ("starting" or "writing"), sends `signum` to its main process; returns
  (its exit status, its stderr, the processes of its session left GRACE_S after it ended). It must end within
  STOP_S."""
  env = dict(os.environ, PYTHONPATH=tiny_runs.REPO)
  with open(log, "wb") as f:
    run = subprocess.Popen(_command(inputs, cache), stdout=f, stderr=f, cwd=tiny_runs.REPO, env=env,
                           start_new_session=True)
  try:
    deadline = time.monotonic() + 300
    while not (_starting(run) if moment == "starting" else _writing(cache)):
      assert run.poll() is None, f"the run ended before it was {moment}: {log.read_text()[-3000:]}"
      assert time.monotonic() < deadline, f"not {moment} after 300 s"
      time.sleep(0.01)
    os.kill(run.pid, signum)
    run.wait(timeout=STOP_S)
    deadline = time.monotonic() + GRACE_S
    while _session(run.pid) and time.monotonic() < deadline:
      time.sleep(0.01)
    return run.returncode, log.read_text(), _session(run.pid)
  finally:
    try:
      os.killpg(run.pid, signal.SIGKILL)   # what a failing run left (its workers stay in its process group)
    except ProcessLookupError:
      pass
    run.wait()


def _temporary_files(cache):
  return [os.path.join(root, name) for root, _, names in os.walk(cache) for name in names if ".tmp-" in name]


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["starting", "writing"])
def test_a_sigkill_of_the_main_process_leaves_no_worker(inputs, tmp_path, moment):
  returncode, err, left = _stop(inputs, str(tmp_path / "cache"), tmp_path / "log", moment, signal.SIGKILL)
  assert left == []
  assert returncode == -signal.SIGKILL, err[-3000:]


@pytest.mark.slow
def test_a_sigterm_while_the_workers_start_exits_143_and_leaves_no_worker(inputs, tmp_path):
  returncode, err, left = _stop(inputs, str(tmp_path / "cache"), tmp_path / "log", "starting", signal.SIGTERM)
  assert left == []
  assert returncode == 143, err[-3000:]
  assert tiny_runs.messages(err)[-1].startswith("error: stopped by SIGTERM"), err[-3000:]


@pytest.mark.slow
def test_a_sigterm_while_shards_are_written_exits_143_leaves_whole_shards_and_a_rerun_completes(inputs, tmp_path):
  cache = str(tmp_path / "cache")
  returncode, err, left = _stop(inputs, cache, tmp_path / "log", "writing", signal.SIGTERM)
  assert left == []
  assert returncode == 143 and "Traceback" not in err, err[-3000:]
  assert tiny_runs.messages(err)[-1] == (
      "error: stopped by SIGTERM; the worker processes were stopped. The shards written so far are kept: run the "
      "same command again to embed the rest")
  assert _temporary_files(cache) == []   # the stopped workers' temporary files are removed
  (key,) = os.listdir(cache)
  folder = os.path.join(cache, key)
  shards = [path for name in ("mean-1", "mean-3") for path in store_files.shard_paths(folder, name)]
  width = store_files.shard_member(shards[0], "vectors").shape[1]
  for path in shards:
    store_files.check_shard(path, width)   # every byte of a whole shard
  again = subprocess.run(_command(inputs, cache), capture_output=True, text=True, cwd=tiny_runs.REPO,
                         env=dict(os.environ, PYTHONPATH=tiny_runs.REPO), timeout=300)
  assert again.returncode == 0, again.stderr[-3000:]
  summary = json.loads(again.stdout.strip().splitlines()[-1])
  assert summary["embedded"] + summary["already_stored"] == SENTENCES and summary["already_stored"] > 0


def test_beams_own_worker_processes_are_refused():
  with pytest.raises(errors.UserError, match="^--direct_running_mode=multi_processing: this runner starts its own"):
    local_runner.LocalRunner().run_pipeline(None, local_runner.options(2, ["--direct_running_mode=multi_processing"]))
