"""Small helpers shared by the library and the entry points.

  io_utils.py     strict UTF-8 reads with file:line, atomic writes
  saved_models.py SavedModels loaded with one-line errors naming a damaged file
  checks.py       range checks of settings, one sentence each (the API's ValueError, the flags' parse errors)
  progress.py     progress lines on stderr
  logs.py         quiet TensorFlow start-up logs
  lazy.py         package names imported on first use (PEP 562)
  distribute.py   tf.distribute strategy and mixed-precision policy
  tf_data.py      the tf.data options every dataset runs with (autotuning off)
  timer.py        wall seconds per named stage (timings.json)
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["errors"]
