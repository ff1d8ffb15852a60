"""The one progress line of every long loop (encoding, flow fits): done/total, percent, rate and ETA on stderr.

  progress = Progress("encoding", total=n, unit="sent", show=None)
  progress.update(k)   # after each batch

  encoding: 12,288/50,000 (25%, 812 sent/s, ETA 46s)

`show`, as sentence-transformers' `show_progress_bar`: True always reports, False never, None (auto) reports once
the loop has run AUTO_AFTER_S seconds with work left, so quick calls (and one-batch calls) stay silent. On a terminal the line is
redrawn in place; in a log file one line is written at every 10% reached.
"""
import sys
import time

AUTO_AFTER_S = 5.0


def _duration(seconds):
  """'45s', '3m05s' or '2h07m'."""
  seconds = int(round(seconds))
  if seconds < 60:
    return f"{seconds}s"
  if seconds < 3600:
    return f"{seconds // 60}m{seconds % 60:02d}s"
  return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def check_show(show):
  """Returns `show` if it is True, False or None, else raises ValueError (e.g. the string "False")."""
  if show not in (True, False, None) or (show is not None and not isinstance(show, bool)):
    raise ValueError(f"show_progress_bar must be True, False or None (auto), got {show!r}")
  return show


class Progress:
  """Reports `done/total` with a rate and an ETA (see the module notes).

  Args:
    label: str, what is being counted ("encoding", "fitting flow").
    total: int, units of work.
    unit: str, the unit's name for the rate ("sent", "step").
    show: True, False or None (auto: after AUTO_AFTER_S seconds).
    stream: a text stream, default sys.stderr.
  """

  def __init__(self, label, total, unit="sent", show=None, stream=None):
    self.label, self.total, self.unit = label, total, unit
    self.show = check_show(show)
    self.stream = stream or sys.stderr
    self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
    self.start = time.perf_counter()
    self.done = 0
    self._next_tenth = 1       # the next 10% step to report in a log file (integers: no float drift)
    self._shown = False

  def line(self, elapsed):
    """The report after `elapsed` seconds: 'label: done/total (pct%, rate unit/s, ETA t)' ('in t' when done)."""
    fraction = self.done / max(self.total, 1)
    rate = self.done / max(elapsed, 1e-9)
    tail = f"in {_duration(elapsed)}" if self.done >= self.total else \
        f"ETA {_duration((self.total - self.done) / rate) if rate > 0 else '?'}"
    return f"{self.label}: {self.done:,}/{self.total:,} ({100 * fraction:.0f}%, {rate:,.0f} {self.unit}/s, {tail})"

  def update(self, n):
    """Counts `n` more units done and reports when due."""
    self.done += n
    if self.show is False:
      return
    elapsed = time.perf_counter() - self.start
    if self.show is None and not self._shown and (elapsed < AUTO_AFTER_S or self.done >= self.total):
      return
    tenths = 10 * self.done // max(self.total, 1)
    if not (self.tty or tenths >= self._next_tenth or self.done >= self.total):
      return
    self._next_tenth = tenths + 1
    self._shown = True
    line = self.line(elapsed)
    self.stream.write(("\r" + line + ("\n" if self.done >= self.total else "")) if self.tty else line + "\n")
    self.stream.flush()
