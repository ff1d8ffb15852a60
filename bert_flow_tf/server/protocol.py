"""The server's wire format: requests read and checked, answers and errors written, in OpenAI's shapes.

  POST /v1/embeddings  {"input": str | [str, ...], "model": str, "encoding_format": "float" | "base64",
                        "dimensions": int, "user": str (ignored), "precision": "float32" | "int8" | ... (ours)}
    -> {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...] | "<base64>"}],
        "model": str, "usage": {"prompt_tokens": int, "total_tokens": int}}
  POST /v1/search      {"query": str | [str, ...], "model": str, "top_k": int, "precision": "float32" | "binary",
                        "candidates": int}
    -> {"object": "list", "data": [{"object": "search_result", "index": i, "hits": [{"corpus_id": int,
        "score": float, "sentence": str}, ...]}], "model": str}
  an error -> {"error": {"message": str (one line), "type": str, "param": str | null, "code": str | null}}

base64 is the little-endian bytes of each row (float32, as the `openai` client decodes it; int8 / uint8 codes one
byte each); float is each float32 in its shortest decimal form (orjson's numpy output: it reads back to the same
float32). Token-id arrays in `input` (what LangChain's OpenAIEmbeddings sends by default: tiktoken's ids) are
refused: they are another tokenizer's ids, not this model's.
"""
import base64
import dataclasses
import json

import numpy as np
import orjson

from bert_flow_tf.quantization import hamming_search

CLIENT_CLOSED = 499  # nginx's status for a client that closed its connection before its answer: never sent
TOKEN_IDS_HINT = ("input holds token ids; this server tokenizes text with its own model's vocabulary, so send the "
                  "text itself: a string or a list of strings (LangChain: OpenAIEmbeddings(..., "
                  "check_embedding_ctx_length=False))")
_EMBEDDING_FIELDS = ("input", "model", "encoding_format", "dimensions", "user", "precision")
_SEARCH_FIELDS = ("query", "model", "top_k", "precision", "candidates")
_ERROR_TYPES = {400: "invalid_request_error", 404: "invalid_request_error", 413: "invalid_request_error",
                429: "rate_limit_error", 503: "service_unavailable", 500: "server_error"}


class ApiError(Exception):
  """An answer other than 200: status, a one-line message, the request field it is about, OpenAI's code."""

  def __init__(self, status, message, param=None, code=None, headers=None):
    super().__init__(message)
    self.status, self.message, self.param, self.code, self.headers = status, message, param, code, headers

  def body(self):
    """bytes: OpenAI's error object."""
    return json.dumps({"error": {"message": self.message, "type": _ERROR_TYPES.get(self.status, "error"),
                                 "param": self.param, "code": self.code}}).encode("utf-8")


@dataclasses.dataclass(frozen=True)
class EmbeddingsRequest:
  texts: list
  encoding_format: str
  dimensions: object  # int or None
  precision: str


@dataclasses.dataclass(frozen=True)
class SearchRequest:
  queries: list
  top_k: int
  precision: str
  candidates: int


def _object(body, fields):
  """The JSON object of a request body (bytes), with no field outside `fields`."""
  try:
    value = orjson.loads(body)
  except orjson.JSONDecodeError as e:
    raise ApiError(400, f"the body is not valid JSON: {e}") from None
  if not isinstance(value, dict):
    raise ApiError(400, f"the body must be a JSON object, got {type(value).__name__}")
  unknown = sorted(set(value) - set(fields))
  if unknown:
    raise ApiError(400, f"unknown field {unknown[0]!r}; allowed: {', '.join(fields)}", unknown[0])
  return value


def _int(value, name, low, high):
  if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
    raise ApiError(400, f"{name} must be an integer in {low}..{high}, got {json.dumps(value)}", name)
  return value


def _choice(value, name, allowed):
  if value not in allowed:
    raise ApiError(400, f"{name} {json.dumps(value)} is not supported; use one of {', '.join(allowed)}", name)
  return value


def _texts(value, name, limits):
  """A str or a non-empty list of str, within the limits -> list of str."""
  texts = [value] if isinstance(value, str) else value
  if not isinstance(texts, list) or not texts:
    raise ApiError(400, f"{name} must be a string or a non-empty list of strings, got {json.dumps(value)[:80]}",
                   name)
  if all(isinstance(t, int) and not isinstance(t, bool) for t in texts) or all(
      isinstance(t, list) and all(isinstance(i, int) for i in t) for t in texts):
    raise ApiError(400, TOKEN_IDS_HINT, name)
  if len(texts) > limits.max_inputs:
    raise ApiError(400, f"{name} holds {len(texts)} strings; at most {limits.max_inputs} per request", name)
  for i, text in enumerate(texts):
    if not isinstance(text, str):
      raise ApiError(400, f"{name}[{i}] must be a string, got {type(text).__name__}", name)
    if len(text) > limits.max_chars:
      raise ApiError(400, f"{name}[{i}] has {len(text)} characters; at most {limits.max_chars} per string", name)
  return texts


def check_model(value, served_name):
  """A request's `model`: the served name, else a 404 as OpenAI answers an unknown model."""
  if not isinstance(value, str):
    raise ApiError(400, f"model must be a string, the served model's name ({served_name!r})", "model")
  if value != served_name:
    raise ApiError(404, f"the model {value!r} does not exist; this server serves {served_name!r} (GET /v1/models)",
                   "model", "model_not_found")


def read_embeddings(body, served, limits):
  """bytes -> EmbeddingsRequest, checked against the served model (ServedExport) and the limits.Limits."""
  value = _object(body, _EMBEDDING_FIELDS)
  if "input" not in value:
    raise ApiError(400, "input is required: a string or a list of strings", "input")
  texts = _texts(value["input"], "input", limits)
  check_model(value.get("model"), served.name)
  if "user" in value and not isinstance(value["user"], str):
    raise ApiError(400, "user must be a string", "user")
  dimensions = value.get("dimensions")
  return EmbeddingsRequest(
      texts=texts,
      encoding_format=_choice(value.get("encoding_format", "float"), "encoding_format", ("float", "base64")),
      dimensions=None if dimensions is None else _int(dimensions, "dimensions", 1, served.dim),
      precision=_choice(value.get("precision", "float32"), "precision", served.precisions))


def read_search(body, served, limits):
  """bytes -> SearchRequest, checked against the served model's search models and the limits."""
  value = _object(body, _SEARCH_FIELDS)
  if not served.search_precisions:
    raise ApiError(404, "this export has no corpus to search: export it with SentenceEncoder.export(..., "
                        "corpus=...)", "model")
  if "query" not in value:
    raise ApiError(400, "query is required: a string or a list of strings", "query")
  queries = _texts(value["query"], "query", limits)
  check_model(value.get("model"), served.name)
  precision = _choice(value.get("precision", served.search_precisions[0]), "precision", served.search_precisions)
  top_k = _int(value.get("top_k", 10), "top_k", 1, 10000)
  candidates = _int(value.get("candidates", max(top_k, hamming_search.DEFAULT_CANDIDATES)), "candidates", top_k,
                    1000000)
  return SearchRequest(queries, top_k, precision, candidates)


def embeddings_body(rows, encoding_format, model, prompt_tokens):
  """bytes: OpenAI's embeddings list. rows: np.ndarray [n, W] (float32, int8 or uint8)."""
  if encoding_format == "base64":
    little = rows.astype(rows.dtype.newbyteorder("<"), copy=False)
    items = [base64.b64encode(row.tobytes()).decode("ascii") for row in little]
  else:
    items = list(np.ascontiguousarray(rows))  # [W] arrays: orjson writes them with no Python float per value
  data = [{"object": "embedding", "index": i, "embedding": item} for i, item in enumerate(items)]
  return orjson.dumps({"object": "list", "data": data, "model": model,
                       "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}},
                      option=orjson.OPT_SERIALIZE_NUMPY)


def search_body(results, model):
  """bytes: one {"hits": [...]} per query (ExportedEncoder.search's lists)."""
  data = [{"object": "search_result", "index": i, "hits": hits} for i, hits in enumerate(results)]
  return json.dumps({"object": "list", "data": data, "model": model}).encode("utf-8")


def models_body(name, created):
  """bytes: GET /v1/models's list of the one served model."""
  return json.dumps({"object": "list", "data": [{"id": name, "object": "model", "created": created,
                                                 "owned_by": "bert-flow-tf"}]}).encode("utf-8")


def check_float_rows(rows):
  """float32 rows whose JSON would not be valid (NaN, inf) are a server error, never a reply."""
  if rows.dtype == np.float32 and not np.all(np.isfinite(rows)):
    raise ApiError(500, "the model returned a non-finite value")
