"""Timer: wall seconds per named stage of a run."""
import contextlib
import time


class Timer:
  """Wall seconds per named stage, summed over the stage's visits (`seconds`: dict stage -> float)."""

  def __init__(self):
    self.seconds = {}

  @contextlib.contextmanager
  def stage(self, name):
    start = time.perf_counter()
    try:
      yield
    finally:
      self.seconds[name] = self.seconds.get(name, 0.) + time.perf_counter() - start
