"""`python -m bert_flow_tf.beam.worker LAUNCHER_PID`: one Beam SDK worker process of the local runner, which dies
with the process that started it, whatever kills that one (SIGKILL included).

Beam's runner starts the command through `/bin/sh -c`; `command` begins it with `exec`, so the worker is the
launcher's own child. On Linux the worker first asks the kernel for SIGKILL when its parent ends (prctl
PR_SET_PDEATHSIG: strictly, when the parent's thread that started it ends; that is Beam's "run_worker" thread,
which waits for the worker), before it imports anything heavy, then checks that its parent is still LAUNCHER_PID:
a launcher killed in between has already left the worker to PID 1, and it exits at once. Elsewhere there is only
that check, at start. Then it runs Beam's own worker, `apache_beam.runners.worker.sdk_worker_main` (its connection
details come in the environment, from Beam's runner).
"""
import ctypes
import os
import shlex
import signal
import sys

MODULE = "bert_flow_tf.beam.worker"
_PR_SET_PDEATHSIG = 1   # <linux/prctl.h>
_LAUNCHER_GONE = 1      # the exit status of a worker whose launcher died before it started


def command(launcher_pid):
  """The shell command line that starts one worker of the process `launcher_pid` (this interpreter)."""
  return f"exec {shlex.quote(sys.executable)} -m {MODULE} {int(launcher_pid)}"


def bind_to_launcher(launcher_pid):
  """Makes this process die with its parent (Linux), and exits at once when its parent is no longer
  `launcher_pid` (the launcher died before the binding)."""
  if sys.platform.startswith("linux"):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
      raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
  if os.getppid() != launcher_pid:
    os._exit(_LAUNCHER_GONE)  # pylint: disable=protected-access


def main(argv):
  bind_to_launcher(int(argv[1]))
  from apache_beam.runners.worker import sdk_worker_main  # pylint: disable=g-import-not-at-top
  sdk_worker_main.main(argv)


if __name__ == "__main__":
  main(sys.argv)
