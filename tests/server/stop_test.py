"""The server's stop (SIGTERM), each test on a server process of its own serving conftest's tiny export: the
requests in flight answered within --shutdown_timeout_s, and past it a 503 for each one left, the batcher's queue
dropped, a log line that says so and exit status 75 (server/shutdown.py)."""
import concurrent.futures
import os
import signal
import time

import numpy as np
import pytest

from tests.embedding.tiny_model import SENTENCES
from tests.server.server_process import MODEL
from tests.server.server_process import Server
from tests.server.server_process import metric
from tests.server.server_process import request

pytestmark = pytest.mark.slow  # two server processes: ~20 s

TEXTS = [s for s in SENTENCES if s.strip()]
CLOSE = {"rtol": 1e-6, "atol": 1e-6}
# The flood: requests of one model call per sentence (--max_batch_sentences=1; ~1.5 ms a call on the 2-core EPYC
# here): about 18 s of work, far more than the 1 s timeout below on any CPU.
FLOOD_REQUESTS, FLOOD_SENTENCES = 48, 256
# How a stop is cut short: (signals, --shutdown_timeout_s, seconds from the first signal to the cut, the log's words).
CUTS = {"past_the_timeout": ((signal.SIGTERM,), 1, 1, "the --shutdown_timeout_s=1 s deadline"),
        "second_ctrl_c": ((signal.SIGINT, signal.SIGINT), 60, 0, "a second Ctrl-C")}


def test_sigterm_drains_the_requests_in_flight_and_a_full_queue_is_429(tiny_export):
  # Batches wait 2 s for more requests: the two below sit in the queue (8 sentences, its bound) meanwhile.
  server = Server(tiny_export["export_dir"], tiny_export["tmp"] / "drain.log", "--batch_wait_ms=2000",
                  "--max_queue_sentences=8", "--max_batch_sentences=64")
  try:
    body = {"model": MODEL, "input": TEXTS[:4]}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
      pending = [pool.submit(request, server.port, "POST", "/v1/embeddings", body) for _ in range(2)]
      time.sleep(0.5)
      status, headers, answer = request(server.port, "POST", "/v1/embeddings", body)
      assert status == 429 and headers["retry-after"].isdigit(), answer
      assert answer["error"]["message"].startswith("the server is busy: the queue is full; retry after")
      server.process.send_signal(signal.SIGTERM)
      for future in pending:
        status, _, answer = future.result(60)
        assert status == 200, answer
        np.testing.assert_allclose([d["embedding"] for d in answer["data"]], tiny_export["enc"].encode(TEXTS[:4]),
                                   **CLOSE)
    assert server.process.wait(60) == 0
    with pytest.raises(OSError):
      request(server.port, "GET", "/health")
  finally:
    if server.process.poll() is None:  # a failed check above: no server left behind
      server.process.kill()
  log = server.stop() == 0 and server.text()
  assert "stopped: every accepted request answered" in log and "Traceback" not in log
  assert os.path.getsize(tiny_export["tmp"] / "drain.log") < 100000


def _answer(future):
  """A request's (status, headers, answer); None for a connection the server never accepted (still in the listening
  socket's backlog when the stop closed it, so the kernel resets it: no request of it was read, none is owed)."""
  try:
    return future.result(60)
  except ConnectionResetError:
    return None


@pytest.mark.parametrize("cut", CUTS)
def test_a_stop_cut_short_answers_503_drops_the_queue_and_exits_75(tiny_export, cut):
  signals, timeout_s, cut_s, words = CUTS[cut]
  server = Server(tiny_export["export_dir"], tiny_export["tmp"] / f"{cut}.log", "--max_batch_sentences=1",
                  f"--max_inputs={FLOOD_SENTENCES}", "--max_queue_sentences=100000",
                  f"--shutdown_timeout_s={timeout_s}")
  body = {"model": MODEL, "input": [f"{TEXTS[i % len(TEXTS)]} {i}" for i in range(FLOOD_SENTENCES)]}
  try:
    with concurrent.futures.ThreadPoolExecutor(FLOOD_REQUESTS) as pool:
      pending = [pool.submit(request, server.port, "POST", "/v1/embeddings", body) for _ in range(FLOOD_REQUESTS)]
      deadline = time.monotonic() + 60
      while (metric(server.port, "bert_flow_queue_sentences") or 0) < FLOOD_REQUESTS * FLOOD_SENTENCES / 2:
        assert time.monotonic() < deadline, server.text()
        time.sleep(0.1)
      signalled = time.monotonic()
      for stop_signal in signals:
        server.process.send_signal(stop_signal)
        time.sleep(0.5)  # a signal sent before the last one is handled would be merged into it
      answers = [_answer(future) for future in pending]
    exit_status = server.process.wait(60)
    seconds = time.monotonic() - signalled
  finally:
    if server.process.poll() is None:  # a failed check above: no server left behind
      server.process.kill()
  log = server.text()
  answers = [answer for answer in answers if answer is not None]
  unanswered = [(headers, answer) for status, headers, answer in answers if status != 200]
  assert unanswered and len(unanswered) == sum(status == 503 for status, _, _ in answers), log
  for headers, answer in unanswered:
    assert headers["content-type"] == "application/json" and headers["retry-after"] == "1", answer
    assert set(answer) == {"error"} and answer["error"]["code"] == "shutting_down", answer
    assert answer["error"]["type"] == "service_unavailable"
    assert answer["error"]["message"] == (f"the server stopped before answering this request (--shutdown_timeout_s="
                                          f"{timeout_s} s); send it again")
  assert (f"stopped: {len(unanswered)} accepted requests were not answered before {words} (each got a 503); exit "
          "status 75") in log
  assert "every accepted request answered" not in log and "Traceback" not in log
  assert exit_status == 75
  assert seconds < cut_s + 4, seconds  # the 503s, the model call that ran, the process's exit
