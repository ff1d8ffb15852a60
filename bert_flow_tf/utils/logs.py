"""Keeps the command-line logs readable: our progress and results, not TensorFlow's routine INFO lines."""
import logging as std_logging

from absl import logging

# Python files whose INFO lines repeat on every checkpoint save.
_NOISY_FILES = ("functional_saver.py",)


class _DropRoutineTensorFlowInfo(std_logging.Filter):

  def filter(self, record):
    return record.levelno > std_logging.INFO or not record.pathname.endswith(_NOISY_FILES)


def quiet_tensorflow():
  """Drops TensorFlow's per-checkpoint INFO lines from the absl handler (warnings and errors still show)."""
  logging.get_absl_handler().addFilter(_DropRoutineTensorFlowInfo())
