"""The local runner: Beam's FnApi runner with worker processes on this machine that never outlive this process;
its options; and `run`, which ends a run in one line when a worker is lost or this process is told to stop.

Worker processes. `LocalRunner` is Beam's FnApiRunner given, through its `default_environment` argument, a
subprocess environment whose command is `worker.command`: each worker asks the kernel to kill it when this process
ends (Linux, prctl PR_SET_PDEATHSIG), so a SIGKILL of this process leaves no worker behind, not even one still
starting. Beam's own workers, which `--direct_running_mode=multi_processing` would start instead (refused here),
outlive it: up to 121 s when still starting. FnApiRunner's warning that its default in-memory mode runs a single
worker is left out: this environment runs `--direct_num_workers` of them.

A lost worker. A worker process that dies (killed, out of memory) makes Beam's FnApi runner (apache_beam 2.77)
either fail with a traceback ("Channel closed prematurely") or, when the worker had received all of a bundle's
input, wait for that bundle's result forever. `run` watches the runner's worker threads (threading.excepthook:
Beam's "run_worker" thread raises when its process exits with a nonzero status) and ends the run with `LostWorker`,
one line, within LOST_WORKER_GRACE_S seconds; the worker processes left are stopped.

A stop. SIGTERM during `run` (in the main thread, where SIGTERM has its default action) raises `Terminated`, a
SystemExit with status 143 (128 + SIGTERM), once the workers are stopped; Ctrl-C (KeyboardInterrupt) stops them too.

After LostWorker or a stop, the broken channels' echoes in Beam's other threads (grpc.RpcError tracebacks, the data
plane's error log) stay silent for the rest of the process (the runner is abandoned); after a run that ends
otherwise they are shown as usual. The shards written before are complete files (each is renamed into place), so
a rerun embeds only the rest.
"""
import contextlib
import logging
import os
import signal
import threading
import time

import grpc
from apache_beam.options.pipeline_options import DirectOptions
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import fn_runner
from apache_beam.transforms import environments

from bert_flow_tf.beam import worker
from bert_flow_tf.utils import errors

LOST_WORKER_GRACE_S = 2.0    # after a worker is lost, how long the runner may take to end the run on its own
LOST_WORKER_REPORT_S = 2.0   # after the run fails, how long a lost worker's report may take to arrive
STOP_WAIT_S = 5.0            # after the workers are killed, how long to wait for them to be gone
_WAKE_S = 0.1                # how often the waiting main thread wakes to run signal handlers
_WORKER_THREAD = "run_worker"   # the thread of Beam's SubprocessSdkWorker (local_job_service.py)
_CHANNEL_LOGGER = "apache_beam.runners.worker.data_plane"   # logs a broken data channel with its traceback
_RUNNER_LOGGER, _ONE_WORKER_WARNING = fn_runner.__name__, "If direct_num_workers is not equal to 1"


class LocalRunner(fn_runner.FnApiRunner):
  """Beam's FnApiRunner whose `--direct_num_workers` worker processes each run `worker.command(this pid)`."""

  def __init__(self):
    super().__init__(default_environment=environments.SubprocessSDKEnvironment.from_command_string(
        worker.command(os.getpid())))

  def run_pipeline(self, pipeline, options):
    if options.view_as(DirectOptions).direct_running_mode == "multi_processing":   # Beam's workers, not ours
      raise errors.UserError("this runner starts its own worker processes (--num_workers); leave the option out",
                             "--direct_running_mode=multi_processing")
    warning = _HeldBack(_RUNNER_LOGGER, lambda record: str(record.msg).startswith(_ONE_WORKER_WARNING))
    try:
      return super().run_pipeline(pipeline, options)
    finally:
      warning.release()


class LostWorker(errors.UserError):
  """A Beam worker process died during the run."""


class Terminated(SystemExit):
  """SIGTERM arrived during `run`; the worker processes are stopped. Exits with status 143 unless caught."""

  def __init__(self):
    super().__init__(128 + signal.SIGTERM)


def options(num_workers, argv=()):
  """PipelineOptions for `LocalRunner` with `num_workers` worker processes on this machine, plus `argv`.

  (Not the DirectRunner's default Prism runner, which downloads a binary at start.)"""
  return PipelineOptions(list(argv), runner=f"{__name__}.{LocalRunner.__name__}", direct_num_workers=num_workers)


def run(pipeline):
  """Runs `pipeline` and waits for it; returns its PipelineResult.

  Raises:
    LostWorker: a worker process died and the run did not finish (see the module notes).
    Terminated: SIGTERM arrived (the workers are stopped); KeyboardInterrupt likewise.
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

  logged, keep = [], _HeldBack(_CHANNEL_LOGGER, _carries_rpc_error)
  threading.excepthook = hook
  abandoned = True   # until the run ends on its own, or with an error other than a lost worker
  try:
    with _sigterm_raises_terminated():
      # A daemon thread: a runner waiting forever for a lost worker's bundle does not keep the process alive.
      thread = threading.Thread(target=target, name="beam-pipeline", daemon=True)
      thread.start()
      # A SIGTERM (Terminated) or a Ctrl-C (KeyboardInterrupt) is raised here. Their handlers run in this thread,
      # and only once it wakes: the signal may reach another thread, so it wakes every _WAKE_S.
      while not ended.wait(_WAKE_S):
        pass
      if "error" in outcome:   # a lost worker fails some runs too: name it rather than the runner's traceback
        worker_lost.wait(LOST_WORKER_REPORT_S)
      if lost:
        thread.join(LOST_WORKER_GRACE_S)
    abandoned = bool(lost) and "result" not in outcome
  finally:
    if abandoned:   # its threads stay quiet for the rest of the process
      _stop_workers()
    else:
      threading.excepthook = previous_hook
      logged.extend(keep.release())
  if abandoned:
    raise LostWorker(f"a Beam worker process was lost ({lost[0]}); the run stopped. The shards written so far are "
                     "kept: run the same command again to embed the rest")
  for args in echoes:
    previous_hook(args)
  for record in logged:
    logging.getLogger(record.name).handle(record)
  if "error" in outcome:
    raise outcome["error"]
  return outcome["result"]


@contextlib.contextmanager
def _sigterm_raises_terminated():
  """Within: SIGTERM raises Terminated in the main thread. Left alone elsewhere than in the main thread, and where
  the program has its own SIGTERM handler."""
  if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
    yield
    return

  def handler(signum, frame):
    del signum, frame
    raise Terminated()

  signal.signal(signal.SIGTERM, handler)
  try:
    yield
  finally:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _carries_rpc_error(record):
  return bool(record.exc_info) and isinstance(record.exc_info[1], grpc.RpcError)


class _HeldBack:
  """Holds back the records of logger `name` for which `matches(record)` is true, until `release`, which returns
  them."""

  def __init__(self, name, matches):
    self.logger, self.matches, self.held = logging.getLogger(name), matches, []
    self.logger.addFilter(self._keep)

  def _keep(self, record):
    if self.matches(record):
      self.held.append(record)
      return False
    return True

  def release(self):
    self.logger.removeFilter(self._keep)
    return self.held


def worker_pids(parent):
  """The pids of the Beam worker processes (`worker.MODULE`) among the descendants of process `parent`, sorted.
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
      if worker.MODULE.encode() in command.split(b"\0"):
        found.append(pid)
  return sorted(found)


def _stop_workers():
  """Kills the worker processes this process started and waits (up to STOP_WAIT_S) until they are gone, so that a
  runner left waiting for them holds on to nothing and their temporary files are stale. Linux (/proc); elsewhere
  they end with this process."""
  pids = worker_pids(os.getpid())
  for pid in pids:
    try:
      os.kill(pid, signal.SIGKILL)
    except OSError:
      pass
  deadline = time.monotonic() + STOP_WAIT_S   # Beam's worker threads reap them
  while any(os.path.exists(f"/proc/{pid}") for pid in pids) and time.monotonic() < deadline:
    time.sleep(0.01)
