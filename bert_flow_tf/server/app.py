"""The FastAPI application: routes, the one-line access log, the metrics, and errors in OpenAI's shape.

  POST /v1/embeddings   OpenAI's embeddings (protocol.read_embeddings), batched across requests (batcher)
  POST /v1/search       the export's corpus searched (search/ or binary_search/)
  GET  /v1/models       the served model's name (what `model` must be)
  GET  /health          200 {"status": "ready"} once the warm-up request answered; 503 before, and while stopping
  GET  /metrics         Prometheus text format (metrics)

Every answer other than 200 is `protocol.ApiError`'s JSON with a one-line message; an unexpected error is logged
here with its traceback and answered as a 500 "internal error" without one. The warm-up runs as soon as the app
starts (the port is open meanwhile, /health says 503); on shutdown (SIGTERM: uvicorn stops accepting, then lets
the requests in flight finish) the batcher answers what it queued before it stops.
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


def create_app(served, batcher, metrics, limits):
  """The application over a ServedExport and its Batcher (not started: the app's lifespan starts and stops it).

  Args:
    served: server.served_export.ServedExport.
    batcher: server.batcher.Batcher over `served`.
    metrics: server.metrics.Metrics.
    limits: server.limits.Limits.

  Returns:
    fastapi.FastAPI.
  """
  state = {"ready": False, "in_flight": 0}  # in_flight: requests between their arrival and their answer
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
    now = batcher.run_now(texts) if state["in_flight"] == 1 else None
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
    state["ready"] = False
    metrics.ready.set(0)
    await asyncio.to_thread(batcher.stop)
    if not task.done():
      task.cancel()
    logging.info("stopped: every accepted request answered")

  app = fastapi.FastAPI(title="bert-flow-tf embeddings", lifespan=lifespan, docs_url=None, redoc_url=None,
                        openapi_url=None)

  async def answered(endpoint, request, handle):
    """Runs handle(body) -> (bytes, n inputs) with the access log, the metrics and the error shape."""
    began = time.monotonic()
    inputs, headers = 0, None
    state["in_flight"] += 1
    try:
      body = await limits_lib.read_body(request, limits.max_body_bytes)
      content, inputs = await handle(body)
      status = 200
    except protocol.ApiError as e:
      status, content, headers = e.status, e.body(), e.headers
    except Exception:  # pylint: disable=broad-except  logged here; the client gets one line, never a traceback
      logging.exception("%s failed", endpoint)
      error = protocol.ApiError(500, "internal error (the server's log has the details)")
      status, content = error.status, error.body()
    finally:
      state["in_flight"] -= 1
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
