"""Keeps the command-line logs readable: our progress and results, not TensorFlow's routine INFO lines."""
import logging as std_logging

from absl import logging

# Python files whose INFO lines repeat on every checkpoint save.
_NOISY_FILES = ("functional_saver.py",)
# Loading a SavedModel warns once per custom-gradient function it holds ("Importing a function ... with ops with
# unsaved custom gradients"): dozens of lines about gradients, which serving never asks for.
_GRADIENT_WARNINGS = ("function_deserialization.py",)


class _DropRoutineTensorFlowInfo(std_logging.Filter):

  def filter(self, record):
    if record.pathname.endswith(_GRADIENT_WARNINGS):
      return record.levelno > std_logging.WARNING
    return record.levelno > std_logging.INFO or not record.pathname.endswith(_NOISY_FILES)


def quiet_tensorflow():
  """Drops TensorFlow's per-checkpoint INFO lines and a SavedModel's custom-gradient warnings from the absl
  handler (other warnings and errors still show)."""
  logging.get_absl_handler().addFilter(_DropRoutineTensorFlowInfo())
