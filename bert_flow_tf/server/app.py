"""The FastAPI application: routes, the one-line access log, the metrics, and errors in OpenAI's shape.

  POST /v1/embeddings   OpenAI's embeddings (protocol.read_embeddings), batched across requests (batcher)
  POST /v1/search       the export's corpus searched (search/ or binary_search/)
  GET  /v1/models       the served model's name (what `model` must be)
  GET  /health          200 {"status": "ready"} once the warm-up request answered; 503 before, and while stopping
  GET  /metrics         Prometheus text format (metrics)

Every answer other than 200 is `protocol.ApiError`'s JSON with a one-line message; an unexpected error is logged
here with its traceback and answered as a 500 "internal error" without one. A client that closes its connection
before its body is complete is counted as 499 (nothing is sent). The warm-up runs as soon as the app starts (the
port is open meanwhile, /health says 503). On SIGTERM uvicorn stops accepting and lets the requests in flight
finish, within the deadline of `shutdown.Shutdown`: a request still in flight then is answered 503.
"""
import asyncio
import contextlib
import time

import fastapi
from absl import logging
from fastapi import responses
from starlette import background
from starlette import exceptions as starlette_exceptions

from bert_flow_tf.server import batcher as batcher_lib
from bert_flow_tf.server import limits as limits_lib
from bert_flow_tf.server import protocol

WARMUP_SENTENCES = ["A warm-up sentence.", ""]
_JSON = "application/json"


def _future_done(loop, future):
  """A batcher `done(result, error)` that resolves an asyncio future from the worker thread."""

  def resolve(result, error):
    if not future.done():
      if error is None:
        future.set_result(result)
      else:
        future.set_exception(error)

  return lambda result, error: loop.call_soon_threadsafe(resolve, result, error)


def create_app(served, batcher, metrics, limits, stop):
  """The application over a ServedExport and its Batcher (not started: the app's lifespan starts and stops it).

  Args:
    served: server.served_export.ServedExport.
    batcher: server.batcher.Batcher over `served`.
    metrics: server.metrics.Metrics.
    limits: server.limits.Limits.
    stop: server.shutdown.Shutdown over `batcher`: the requests in flight, the deadline of a stop.

  Returns:
    fastapi.FastAPI.
  """
  state = {"ready": False}
  created = int(time.time())

  async def queued(submit, *args):
    future = asyncio.get_running_loop().create_future()
    try:
      submit(*args, _future_done(asyncio.get_running_loop(), future))
    except batcher_lib.QueueFull as e:
      raise protocol.ApiError(429, f"the server is busy: {e} (--max_queue_sentences)",
                              headers={"Retry-After": str(e.retry_after)}) from None
    return await future

  async def embedded(texts):
    """(vectors, tokens) of one request's texts: on this thread when it is the only request in flight and the model
    is idle (`Batcher.run_now`: no hand-offs), else through the queue, batched with the others."""
    await asyncio.sleep(0)  # lets the requests that arrived with this one start first, so that they count
    now = batcher.run_now(texts) if stop.in_flight == 1 else None
    return now if now is not None else await queued(batcher.submit, texts)

  async def warm_up():
    began = time.monotonic()
    await queued(batcher.submit, WARMUP_SENTENCES)
    for precision in served.search_precisions:
      await queued(batcher.submit_call, lambda p=precision: served.search(WARMUP_SENTENCES[:1], 1, p, 1))
    state["ready"] = True
    metrics.ready.set(1)
    logging.info("ready: warm-up answered in %.2f s", time.monotonic() - began)

  @contextlib.asynccontextmanager
  async def lifespan(_):
    batcher.start()
    task = asyncio.get_running_loop().create_task(warm_up())
    yield
    stop.end()
    state["ready"] = False
    metrics.ready.set(0)
    await asyncio.to_thread(batcher.stop)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, batcher_lib.Abandoned):  # a warm-up cut short by the stop
      await task

  app = fastapi.FastAPI(title="bert-flow-tf embeddings", lifespan=lifespan, docs_url=None, redoc_url=None,
                        openapi_url=None)

  async def answered(endpoint, request, handle):
    """Runs handle(body) -> (bytes, n inputs) with the access log, the metrics and the error shape."""
    began = time.monotonic()
    inputs, headers, error = 0, None, None
    task = stop.track()
    try:
      body = await limits_lib.read_body(request, limits.max_body_bytes)
      content, inputs = await handle(body)
      status = 200
    except protocol.ApiError as e:
      error = e
    except asyncio.CancelledError:  # the stop's deadline: a 503; any other cancel goes on
      if not stop.expired:
        raise
      error = stop.answer_cancelled(task)
    except Exception:  # pylint: disable=broad-except  logged here; the client gets one line, never a traceback
      logging.exception("%s failed", endpoint)
      error = protocol.ApiError(500, "internal error (the server's log has the details)")
    finally:
      stop.untrack(task)
    if error is not None:
      status, content, headers = error.status, error.body(), error.headers
    seconds = time.monotonic() - began
    metrics.requests.labels(endpoint, str(status)).inc()
    metrics.latency.labels(endpoint).observe(seconds)
    if status == 200:
      metrics.inputs.labels(endpoint).inc(inputs)
    client = request.client

    async def access_log():  # once the answer is sent: the log line's write is off the request's latency
      logging.info("%s %s %d %d inputs %.1f ms", f"{client.host}:{client.port}" if client else "-", endpoint, status,
                   inputs, seconds * 1e3)

    return responses.Response(content, status, headers=headers, media_type=_JSON,
                              background=background.BackgroundTask(access_log))

  @app.post("/v1/embeddings")
  async def embeddings(request: fastapi.Request):
    async def handle(body):
      asked = protocol.read_embeddings(body, served, limits)
      vectors, tokens = await embedded(asked.texts)
      rows = served.request_output(vectors, asked.precision, asked.dimensions)
      protocol.check_float_rows(rows)
      return protocol.embeddings_body(rows, asked.encoding_format, served.name, int(tokens.sum())), len(asked.texts)
    return await answered("/v1/embeddings", request, handle)

  @app.post("/v1/search")
  async def search(request: fastapi.Request):
    async def handle(body):
      asked = protocol.read_search(body, served, limits)
      results = await queued(batcher.submit_call, lambda: served.search(asked.queries, asked.top_k, asked.precision,
                                                                         asked.candidates))
      return protocol.search_body(results, served.name), len(asked.queries)
    return await answered("/v1/search", request, handle)

  @app.get("/v1/models")
  async def models():
    return responses.Response(protocol.models_body(served.name, created), media_type=_JSON)

  @app.get("/health")
  async def health():
    ready = state["ready"]
    return responses.JSONResponse({"status": "ready" if ready else "warming up", "model": served.name},
                                  200 if ready else 503)

  @app.get("/metrics")
  async def prometheus():
    content, media_type = metrics.exposition()
    return responses.Response(content, media_type=media_type)

  @app.exception_handler(starlette_exceptions.HTTPException)
  async def http_error(request, e):
    message = (f"no route {request.method} {request.url.path}" if e.status_code in (404, 405) else str(e.detail))
    error = protocol.ApiError(e.status_code, message)
    return responses.Response(error.body(), e.status_code, media_type=_JSON)

  @app.exception_handler(Exception)
  async def internal_error(request, e):
    logging.exception("%s %s failed", request.method, request.url.path, exc_info=e)
    return responses.Response(protocol.ApiError(500, "internal error").body(), 500, media_type=_JSON)

  return app
