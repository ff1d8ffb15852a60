"""Running a pipeline, and the local runner's options: Beam's FnApi runner with worker processes on this machine.

A worker process that dies (killed, out of memory) makes Beam's FnApi runner (apache_beam 2.77) either fail with a
traceback ("Channel closed prematurely") or, when the worker had received all of a bundle's input, wait for that
bundle's result forever. `run` watches the runner's worker threads (threading.excepthook: Beam's "run_worker"
thread raises when its process exits with a nonzero status) and ends the run with `LostWorker`, one line, within
LOST_WORKER_GRACE_S seconds; the worker processes left are stopped. The broken channel's echoes in Beam's other
threads (grpc.RpcError tracebacks, the data plane's error log) are held back during the run: shown as usual after
a run that ends otherwise, silent for the rest of the process after LostWorker (the runner is abandoned then). The
shards written before are complete files (each is renamed into place), so a rerun embeds only the rest.
"""
import logging
import os
import signal
import threading

import grpc
from apache_beam.options.pipeline_options import PipelineOptions

from bert_flow_tf.utils import errors

LOST_WORKER_GRACE_S = 2.0    # after a worker is lost, how long the runner may take to end the run on its own
LOST_WORKER_REPORT_S = 2.0   # after the run fails, how long a lost worker's report may take to arrive
_WORKER_THREAD = "run_worker"   # the thread of Beam's SubprocessSdkWorker (local_job_service.py)
_WORKER_MODULE = b"apache_beam.runners.worker.sdk_worker_main"
_CHANNEL_LOGGER = "apache_beam.runners.worker.data_plane"   # logs a broken data channel with its traceback


class LostWorker(errors.UserError):
  """A Beam worker process died during the run."""


def options(num_workers, argv=()):
  """PipelineOptions for Beam's FnApi runner with `num_workers` worker processes on this machine, plus `argv`.

  (Not the DirectRunner's default Prism runner, which downloads a binary at start.)"""
  return PipelineOptions(list(argv), runner="FnApiRunner", direct_running_mode="multi_processing",
                         direct_num_workers=num_workers)


def run(pipeline):
  """Runs `pipeline` and waits for it; returns its PipelineResult.

  Raises:
    LostWorker: a worker process died and the run did not finish (see the module notes).
    Whatever the pipeline raises otherwise.
  """
  ended, worker_lost, lost, outcome, echoes = threading.Event(), threading.Event(), [], {}, []
  previous_hook = threading.excepthook

  def hook(args):
    if args.thread is not None and args.thread.name == _WORKER_THREAD and isinstance(args.exc_value, RuntimeError):
      lost.append(str(args.exc_value))
      worker_lost.set()
      ended.set()
    elif isinstance(args.exc_value, grpc.RpcError):
      echoes.append(args)
    else:
      previous_hook(args)

  def target():
    try:
      result = pipeline.run()
      result.wait_until_finish()
      outcome["result"] = result
    except BaseException as e:  # pylint: disable=broad-except
      outcome["error"] = e
    finally:
      ended.set()

  logged, keep = [], _HeldBack(_CHANNEL_LOGGER)
  threading.excepthook = hook
  abandoned = False
  try:
    # A daemon thread: a runner waiting forever for a lost worker's bundle does not keep the process alive.
    thread = threading.Thread(target=target, name="beam-pipeline", daemon=True)
    thread.start()
    ended.wait()
    if "error" in outcome:   # a lost worker fails some runs too: name it rather than the runner's traceback
      worker_lost.wait(LOST_WORKER_REPORT_S)
    if lost:
      thread.join(LOST_WORKER_GRACE_S)
    abandoned = bool(lost) and "result" not in outcome
  finally:
    if not abandoned:   # an abandoned runner's threads stay quiet for the rest of the process
      threading.excepthook = previous_hook
      logged.extend(keep.release())
  if abandoned:
    _stop_workers()
    raise LostWorker(f"a Beam worker process was lost ({lost[0]}); the run stopped. The shards written so far are "
                     "kept: run the same command again to embed the rest")
  for args in echoes:
    previous_hook(args)
  for record in logged:
    logging.getLogger(record.name).handle(record)
  if "error" in outcome:
    raise outcome["error"]
  return outcome["result"]


class _HeldBack:
  """Holds back the records of logger `name` that carry a grpc.RpcError until `release`, which returns them."""

  def __init__(self, name):
    self.logger, self.held = logging.getLogger(name), []
    self.logger.addFilter(self._keep)

  def _keep(self, record):
    if record.exc_info and isinstance(record.exc_info[1], grpc.RpcError):
      self.held.append(record)
      return False
    return True

  def release(self):
    self.logger.removeFilter(self._keep)
    return self.held


def worker_pids(parent):
  """The pids of the Beam worker processes (sdk_worker_main) among the descendants of process `parent`, sorted.
  Linux (/proc); [] elsewhere."""
  children = {}
  for pid in (p for p in os.listdir("/proc") if p.isdigit()) if os.path.isdir("/proc") else ():
    try:
      with open(f"/proc/{pid}/stat", "rb") as f:
        ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
      with open(f"/proc/{pid}/cmdline", "rb") as f:
        command = f.read()
    except (OSError, ValueError, IndexError):
      continue
    children.setdefault(ppid, []).append((int(pid), command))
  todo, found = [parent], []
  while todo:
    for pid, command in children.get(todo.pop(), []):
      todo.append(pid)
      if _WORKER_MODULE in command.split(b"\0"):
        found.append(pid)
  return sorted(found)


def _stop_workers():
  """Kills the Beam worker processes this process started, so that a runner left waiting for them holds on to
  nothing; elsewhere than Linux they end with this process."""
  for pid in worker_pids(os.getpid()):
    try:
      os.kill(pid, signal.SIGKILL)
    except OSError:
      pass
