"""Keeps the command-line logs readable: our progress and results, not TensorFlow's routine lines.

  quiet_tensorflow()             drops TensorFlow's per-checkpoint INFO lines from the absl handler
  tensorflow_startup(verbose)    the commands' heavy imports, without TensorFlow's C++ start-up lines
"""
import contextlib
import logging as std_logging
import os
import sys
import tempfile

from absl import logging

# Python files whose INFO lines repeat on every checkpoint save.
_NOISY_FILES = ("functional_saver.py",)
LOG_LEVEL_VARIABLE = "TF_CPP_MIN_LOG_LEVEL"
_level_set_here = False  # tensorflow_startup set LOG_LEVEL_VARIABLE (then it is not the user's)


class _DropRoutineTensorFlowInfo(std_logging.Filter):

  def filter(self, record):
    return record.levelno > std_logging.INFO or not record.pathname.endswith(_NOISY_FILES)


def quiet_tensorflow():
  """Drops TensorFlow's per-checkpoint INFO lines from the absl handler (warnings and errors still show)."""
  logging.get_absl_handler().addFilter(_DropRoutineTensorFlowInfo())


@contextlib.contextmanager
def tensorflow_startup(verbose):
  """Runs a command's first import of TensorFlow without its C++ start-up lines on stderr.

  TensorFlow's libraries print notes while they load (oneDNN, the CUDA probe, CPU features; on a CPU machine a
  "failed call to cuInit" error line when the first op runs), before TF_CPP_MIN_LOG_LEVEL is read for some of them.
  Inside the block, file descriptor 2 goes to a temporary file, shown only if the block raises, and
  TF_CPP_MIN_LOG_LEVEL is 3 for the rest of the process. Nothing changes when `verbose` (absl's -v), when the user
  set TF_CPP_MIN_LOG_LEVEL (their level stands), or when TensorFlow is already loaded.

  Args:
    verbose: bool, show everything TensorFlow prints.
  """
  global _level_set_here  # pylint: disable=global-statement
  user_level = LOG_LEVEL_VARIABLE in os.environ and not _level_set_here
  if verbose or user_level or "tensorflow" in sys.modules:
    yield
    return
  os.environ[LOG_LEVEL_VARIABLE] = "3"
  _level_set_here = True
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as captured:
    os.dup2(captured.fileno(), 2)
    try:
      yield
    except BaseException:
      os.dup2(saved, 2)
      captured.seek(0)
      sys.stderr.write(captured.read().decode("utf-8", "replace"))
      raise
    finally:
      os.dup2(saved, 2)
      os.close(saved)
