"""The server's stop (SIGTERM, Ctrl-C) with a deadline: the requests in flight get `timeout_s` to be answered; at
the deadline each one still unanswered is answered 503 and the batcher drops its queue, so the process ends about
`timeout_s` (plus the batch that runs) after the signal.

  stop = Shutdown(batcher, timeout_s)
  app = create_app(..., stop)           # each request is `stop.track()`ed while it is in flight
  Server(config, stop).run()            # uvicorn's server, whose drain starts the clock (`begin`)
  sys.exit(stop.report())               # its log line; 0, or UNANSWERED_EXIT when a request got the 503

uvicorn stops accepting at the signal and waits for the requests open; its own timeout (`timeout_s` + GRACE_S, set
by the caller) is only a backstop for an answer that could not be written: it would cancel the request with a
plain-text 500.
"""
import asyncio

import uvicorn
from absl import logging

from bert_flow_tf.server import protocol

UNANSWERED_EXIT = 75  # sysexits.h's EX_TEMPFAIL: a temporary failure; the dropped requests may be sent again
GRACE_S = 1.  # seconds after the deadline before uvicorn's own timeout: the 503s are written meanwhile


class Shutdown:
  """The requests in flight, and the deadline of a stop (see the module notes).

  Args:
    batcher: server.batcher.Batcher, abandoned at the deadline.
    timeout_s: float, seconds from the start of the drain to the deadline.

  Attributes:
    expired: bool, the deadline passed (its cancels are `answer_cancelled`'s 503s).
    unanswered: int, requests answered 503 at the deadline.
  """

  def __init__(self, batcher, timeout_s):
    self.batcher, self.timeout_s = batcher, timeout_s
    self.expired = False
    self.unanswered = 0
    self._cut = f"the --shutdown_timeout_s={timeout_s:g} s deadline"  # what ended the drain (the log line's)
    self._requests = set()  # the asyncio tasks of the requests between their arrival and their answer
    self._timer = None

  @property
  def in_flight(self):
    """int: requests between their arrival and their answer."""
    return len(self._requests)

  def track(self):
    """Counts the running task as a request in flight until `untrack(task)`; returns the task."""
    task = asyncio.current_task()
    self._requests.add(task)
    return task

  def untrack(self, task):
    self._requests.discard(task)

  def begin(self):
    """Starts the clock, on the event loop: at the deadline `expire` runs."""
    if self._timer is None:
      self._timer = asyncio.get_running_loop().call_later(self.timeout_s, self.expire)

  def end(self):
    """Stops the clock (the drain is over)."""
    if self._timer is not None:
      self._timer.cancel()

  def expire(self, cut=None):
    """The deadline, or `cut` (str, what ends the drain before it): the batcher drops its queue, and each request
    in flight is cancelled (`answer_cancelled`)."""
    self.expired = True
    self._cut = cut or self._cut
    self.batcher.abandon()
    for task in self._requests:
      task.cancel()

  def answer_cancelled(self, task):
    """The 503 of a request `expire` cancelled (called as its task catches the CancelledError); counts it."""
    if hasattr(task, "uncancel"):  # Python 3.11+: the cancel is answered here, not passed on
      task.uncancel()
    self.unanswered += 1
    return protocol.ApiError(503, f"the server stopped before answering this request (--shutdown_timeout_s="
                                  f"{self.timeout_s:g} s); send it again", code="shutting_down",
                             headers={"Retry-After": "1"})

  def report(self):
    """Logs the stop's line; returns the process's exit status: 0 when every accepted request was answered, else
    UNANSWERED_EXIT."""
    if not self.unanswered:
      logging.info("stopped: every accepted request answered")
      return 0
    logging.warning("stopped: %d accepted requests were not answered before %s (each got a 503); exit status %d",
                    self.unanswered, self._cut, UNANSWERED_EXIT)
    return UNANSWERED_EXIT


class Server(uvicorn.Server):
  """uvicorn's server whose drain (after SIGTERM or SIGINT) starts a Shutdown's clock.

  Args:
    config: uvicorn.Config, with timeout_graceful_shutdown = the Shutdown's timeout_s + GRACE_S.
    stop: Shutdown.
  """

  def __init__(self, config, stop):
    super().__init__(config)
    self.stop = stop

  async def shutdown(self, sockets=None):
    self.stop.begin()
    await super().shutdown(sockets)
    if self.force_exit:  # a second Ctrl-C: uvicorn waited for nothing and skipped the lifespan's end
      self.stop.expire("a second Ctrl-C")
      await self.lifespan.shutdown()  # the batcher stops; the cancelled requests write their 503s meanwhile
