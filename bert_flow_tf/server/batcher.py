"""Dynamic batching: the sentences of concurrent requests run through the model together, on one worker thread.

Requests wait in a bounded queue (`max_queue_sentences`: one over that is refused with QueueFull, the server's
429). The worker takes the waiting requests whole, oldest first, up to `max_batch_sentences` sentences (a larger
request is taken alone); with `wait_s` > 0 it first waits up to that long for more to arrive. Under load the queue
fills while a batch runs, so batches grow with the load without any wait. A request that finds nothing running or
waiting (with `wait_s` 0) runs at once on the caller's thread instead (`run_now`: the server's event loop, for one
model call at most), sparing it the hand-offs to the worker and back.

A batch that fits one model call whatever its sentences' lengths (n <= `max_batch_sentences` and n x max_seq_length
<= `max_batch_tokens`: every batch at the defaults) runs in one TensorFlow call that also counts its tokens; a larger
one is counted first, sorted by length and run in model calls of at most `max_batch_sentences` sentences and
`max_batch_tokens` padded tokens (sentences x the longest's tokens). Each request then gets its rows. Other work
for the model (a search) is queued as a call and runs alone, in turn, on the worker: one model call runs at a time,
so TensorFlow's calls never compete for the cores.

`stop` lets the worker finish everything queued, then ends it: what was accepted is answered. `abandon` (a stop
that ran out of time) answers every queued request with Abandoned at once instead, and a batch cut in several model
calls with Abandoned after the call that runs; the worker then ends. Either way every request's `done` is called
exactly once.

Legend: n = sentences of a batch, D = width.
"""
import collections
import threading
import time

import numpy as np
from absl import logging


class QueueFull(Exception):
  """The queue holds too many sentences to take a request's; `retry_after` is whole seconds."""

  def __init__(self, retry_after):
    super().__init__(f"the queue is full; retry after {retry_after} s")
    self.retry_after = retry_after


class Abandoned(Exception):
  """A request dropped by `Batcher.abandon` before its answer was computed."""

  def __init__(self):
    super().__init__("abandoned: the batcher stopped before this request ran")


class _Item:
  """One request's sentences (texts), or one call (fn), and where its answer goes (done(result, error))."""

  def __init__(self, texts, fn, done):
    self.texts, self.fn, self.done = texts, fn, done

  @property
  def size(self):
    return len(self.texts) if self.texts is not None else 1


class Batcher:
  """Runs a ServedExport's `embed` on batches formed across requests (see the module notes).

  Args:
    model: server.served_export.ServedExport (embed_counted, embed, token_counts, max_seq_length).
    metrics: server.metrics.Metrics.
    max_batch_sentences: int, sentences per model call.
    max_batch_tokens: int, padded tokens per model call (sentences x the longest's tokens).
    max_queue_sentences: int, sentences waiting at most.
    wait_s: float, seconds to wait for more requests once one is taken.
  """

  def __init__(self, model, metrics, max_batch_sentences=64, max_batch_tokens=16384, max_queue_sentences=4096,
               wait_s=0.):
    self.model, self.metrics = model, metrics
    self.max_batch_sentences, self.max_batch_tokens = max_batch_sentences, max_batch_tokens
    self.max_queue_sentences, self.wait_s = max_queue_sentences, wait_s
    self._queue = collections.deque()
    self._queued = 0  # sentences in _queue
    self._cond = threading.Condition()
    self._stopping = False
    self._abandoned = False
    self._busy = False  # a batch or a call is running (on the worker, or in `run_now`)
    self._thread = threading.Thread(target=self._work, name="batcher", daemon=True)
    self._sentences_per_s = 100.  # a running estimate, for Retry-After

  def start(self):
    self._thread.start()

  def stop(self, timeout=None):
    """Lets the worker answer what is queued, then ends it."""
    with self._cond:
      self._stopping = True
      self._cond.notify_all()
    self._thread.join(timeout)

  def abandon(self):
    """Answers every queued request done(None, Abandoned()) now, on this thread, and makes the worker end after
    the batch it runs (a batch cut in several model calls ends after the call that runs, its requests answered
    Abandoned). Returns the number of queued requests dropped; `stop` then waits for that batch at most."""
    with self._cond:
      self._stopping = self._abandoned = True
      dropped = list(self._queue)
      self._queue.clear()
      self._queued = 0
      self.metrics.queue.set(0)
      self._cond.notify_all()
    for item in dropped:
      item.done(None, Abandoned())
    return len(dropped)

  def submit(self, texts, done):
    """Queues a request's sentences; done((calibrated vectors float32 [n, D], tokens int64 [n]), error) is called
    on the worker thread. Raises QueueFull."""
    self._put(_Item(list(texts), None, done))

  def run_now(self, texts):
    """A request's (vectors, tokens), as `submit` answers it, computed on the calling thread when batches wait for
    no one (wait_s 0), nothing runs or waits and its sentences fit one model call; else None (then `submit` them).
    A request that would run alone anyway is spared the two hand-offs between threads; the caller waits for one
    model call at most."""
    with self._cond:
      if (self.wait_s > 0 or self._busy or self._queue or self._stopping or
          not self._fits_one_call(len(texts))):
        return None
      self._busy = True
    try:
      return self._run([list(texts)])[0]
    finally:
      with self._cond:
        self._busy = False
        self._cond.notify()

  def submit_call(self, fn, done):
    """Queues fn() to run alone on the worker; done(result, error) is called on the worker thread."""
    self._put(_Item(None, fn, done))

  def _put(self, item):
    with self._cond:
      if self._stopping:
        raise QueueFull(1)
      if self._queued and self._queued + item.size > self.max_queue_sentences:
        raise QueueFull(max(1, int(np.ceil(self._queued / self._sentences_per_s))))
      self._queue.append(item)
      self._queued += item.size
      self.metrics.queue.set(self._queued)
      self._cond.notify()

  def _take(self):
    """The next items to run together (a call alone), or [] once stopped with nothing queued."""
    with self._cond:
      while (not self._queue or self._busy) and not self._stopping:
        self._cond.wait()
      if not self._queue:
        return []
      self._busy = True
      items = [self._queue.popleft()]
      if items[0].fn is None:
        deadline = time.monotonic() + self.wait_s
        size = items[0].size
        while size < self.max_batch_sentences:
          if self._queue:
            if self._queue[0].fn is not None or size + self._queue[0].size > self.max_batch_sentences:
              break
            items.append(self._queue.popleft())
            size += items[-1].size
            continue
          left = deadline - time.monotonic()
          if left <= 0 or self._stopping:
            break
          self._cond.wait(left)
      self._queued -= sum(item.size for item in items)
      self.metrics.queue.set(self._queued)
      return items

  def _work(self):
    while True:
      items = self._take()
      if not items:
        return
      try:
        if items[0].fn is not None:
          results = [items[0].fn()]
        else:
          results = self._run([item.texts for item in items])
      except Abandoned as e:
        results, error = [None] * len(items), e
      except Exception as e:  # pylint: disable=broad-except  the requests get a 500; the worker goes on
        logging.exception("the model failed on a batch of %d requests", len(items))
        results, error = [None] * len(items), e
      else:
        error = None
      with self._cond:
        self._busy = False
      for item, result in zip(items, results):
        item.done(result, error)

  def _fits_one_call(self, n):
    """Whether n sentences fit one model call whatever their lengths."""
    return n <= self.max_batch_sentences and n * self.model.max_seq_length <= self.max_batch_tokens

  def _run(self, requests):
    """Lists of sentences -> per list (float32 [n_i, D] calibrated vectors, int64 [n_i] tokens)."""
    texts = [text for request in requests for text in request]
    if self._fits_one_call(len(texts)):
      began = time.monotonic()
      vectors, tokens = self.model.embed_counted(texts)       # fits one model call whatever the sentences' lengths
      self._observe(len(texts), time.monotonic() - began)
      return self._split(requests, vectors, tokens)
    tokens = self.model.token_counts(texts)                     # [n]
    order = np.argsort(tokens, kind="stable")
    vectors = None
    start = 0
    while start < len(order):
      if self._abandoned:
        raise Abandoned()
      stop = start + 1
      while (stop < len(order) and stop - start < self.max_batch_sentences and
             (stop + 1 - start) * tokens[order[stop]] <= self.max_batch_tokens):
        stop += 1
      rows = order[start:stop]
      began = time.monotonic()
      x = self.model.embed([texts[i] for i in rows])
      self._observe(len(rows), time.monotonic() - began)
      if vectors is None:
        vectors = np.empty([len(texts), x.shape[1]], x.dtype)
      vectors[rows] = x
      start = stop
    return self._split(requests, vectors, tokens)

  def _observe(self, sentences, seconds):
    """Records a model call of `sentences` that took `seconds`."""
    self.metrics.batch_sentences.observe(sentences)
    self.metrics.batch_seconds.observe(seconds)
    self._sentences_per_s = 0.8 * self._sentences_per_s + 0.2 * sentences / max(seconds, 1e-6)

  @staticmethod
  def _split(requests, vectors, tokens):
    """Per request (its rows of vectors [n, D], of tokens [n]), in the order of `requests`."""
    out, at = [], 0
    for request in requests:
      part = slice(at, at + len(request))
      out.append((vectors[part], tokens[part]))
      at += len(request)
    return out
