"""The one progress line: rate and ETA, forced on or off, auto only for loops that run for a while."""
import io

import pytest

from bert_flow_tf.utils import progress


class _Clock:
  def __init__(self):
    self.now = 0.0

  def __call__(self):
    return self.now


@pytest.fixture(name="clock")
def fixture_clock(monkeypatch):
  clock = _Clock()
  monkeypatch.setattr(progress.time, "perf_counter", clock)
  return clock


def test_a_log_file_gets_a_line_at_every_tenth_with_rate_and_eta(clock):
  out = io.StringIO()
  bar = progress.Progress("fitting flow", 200, unit="step", show=True, stream=out)
  for _ in range(10):
    clock.now += 3.0
    bar.update(20)
  lines = out.getvalue().splitlines()
  assert len(lines) == 10
  assert lines[0] == "fitting flow: 20/200 (10%, 7 step/s, ETA 27s)"
  assert lines[-1] == "fitting flow: 200/200 (100%, 7 step/s, in 30s)"


def test_auto_waits_for_a_loop_that_runs_a_while_and_false_is_silent(clock):
  out = io.StringIO()
  quick = progress.Progress("encoding", 5000, show=None, stream=out)
  clock.now += 1.0
  quick.update(5000)                       # done within AUTO_AFTER_S: silent
  assert out.getvalue() == ""
  slow = progress.Progress("encoding", 100_000, show=None, stream=out)  # starts at t = 1 s
  clock.now += 1.0
  slow.update(10_000)
  assert out.getvalue() == ""
  clock.now += progress.AUTO_AFTER_S
  slow.update(10_000)
  assert out.getvalue().splitlines() == ["encoding: 20,000/100,000 (20%, 3,333 sent/s, ETA 24s)"]
  clock.now += 600
  slow.update(80_000)                      # a loop that has shown its line ends it
  assert out.getvalue().splitlines()[-1] == "encoding: 100,000/100,000 (100%, 165 sent/s, in 10m06s)"
  off = progress.Progress("encoding", 10, show=False, stream=out)
  clock.now += 100
  off.update(10)
  assert len(out.getvalue().splitlines()) == 2
  with pytest.raises(ValueError, match="show_progress_bar must be True, False or None"):
    progress.Progress("encoding", 10, show="False")
