"""A progress line on stderr for long loops: redrawn in place on a terminal, every 10% in a log file."""
import sys
import time


class Progress:
  """Reports `done/total` with a rate. Prints nothing for totals below `min_total`.

  Args:
    label: str, what is being counted ("encoding", "fitting").
    total: int, units of work.
    unit: str, the unit's name for the rate ("sent", "step").
    min_total: int, smaller jobs stay silent.
    forced: None (as min_total says), True (always report) or False (never): a caller's show_progress_bar.
  """

  def __init__(self, label, total, unit="sent", min_total=2000, stream=None, forced=None):
    self.label, self.total, self.unit = label, total, unit
    self.stream = stream or sys.stderr
    self.enabled = total >= min_total if forced is None else bool(forced)
    self.tty = self.enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
    self.start = time.perf_counter()
    self.done = 0
    self._next_report = 0.1

  def update(self, n):
    self.done += n
    if not self.enabled:
      return
    fraction = self.done / max(self.total, 1)
    if self.tty or fraction >= self._next_report or self.done >= self.total:
      while self._next_report <= fraction:
        self._next_report += 0.1
      rate = self.done / max(time.perf_counter() - self.start, 1e-9)
      line = f"{self.label}: {self.done}/{self.total} ({100 * fraction:.0f}%, {rate:.0f} {self.unit}/s)"
      self.stream.write(("\r" + line) if self.tty else line + "\n")
      if self.tty and self.done >= self.total:
        self.stream.write("\n")
      self.stream.flush()
