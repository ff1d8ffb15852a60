"""An HTTP server for an export: OpenAI's /v1/embeddings, /v1/search, /health and /metrics (docs/serving.md).

  served_export  the export's text (and search) models as the server runs them: a batch in, each request's rows
  batcher        dynamic batching across concurrent requests on one worker thread; the bounded queue
  protocol       the wire format: requests read and checked, answers and errors in OpenAI's shapes
  limits         what one request may hold; the body read within its size limit
  metrics        the Prometheus metrics
  app            the FastAPI application (routes, access log, errors), run under uvicorn by cli/serve.py
  shutdown       the stop on SIGTERM: the deadline, the 503s of the requests it cuts off, the exit status

Needs the `server` extra (`pip install "bert-flow-tf[server]"`: fastapi, uvicorn, httptools, uvloop, orjson,
prometheus-client).
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["app", "served_export"]
