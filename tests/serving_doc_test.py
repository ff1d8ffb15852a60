"""Runs every ```python block of docs/serving.md as written.

Only the placeholder assignments at the top of a block change (EXPORT_DIR, FLOW_DIR, HOST/REST_PORT,
HOST/GRPC_PORT). TF Serving cannot run here, so the REST and gRPC clients talk to stand-ins for its front ends on
127.0.0.1: an HTTP server with TF Serving's `GET /v1/models/<name>` and `POST /v1/models/<name>:predict` (row and
column formats), and a grpc server with `PredictionService.Predict`. Both call the exported SavedModels' signatures,
loaded in this process, so the clients' requests make a real round trip to the real models. The served export is
the tiny random BERT (tests/embedding/tiny_model.py) with a DDI Glow; the export block itself runs on MiniLM (slow).
"""
import concurrent.futures
import http.server
import json
import pathlib
import re
import threading

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_service_pb2_grpc

import glow
from bert_flow_tf import exported_encoder
from bert_flow_tf.serving import export
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from glow.model import Glow
from tests.embedding import tiny_model
from tests.embedding.engine_vectors import engine_vectors

REPO = pathlib.Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "serving.md"
SENTENCES = ["A man is playing a guitar.", "A woman slices an onion."]  # the ones the client blocks send
OTHERS = ["A man plays a guitar.", "The stock market fell sharply."]
PLACEHOLDERS = ("EXPORT_DIR", "FLOW_DIR", "HOST, REST_PORT", "HOST, GRPC_PORT", "BASE_URL, MODEL, DIMENSIONS")  # `NAME = value` lines


def python_blocks():
  return re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)


def kind_of(block):
  """Which test runs a block: by what it does."""
  if "loaders.load_model(" in block:
    return "export"
  if "REST_PORT" in block:
    return "rest"
  if "GRPC_PORT" in block:
    return "grpc"
  if "openai.OpenAI(" in block:
    return "http_server"  # run by tests/server/server_test.py against bert-flow-serve
  if "hub.KerasLayer" in block:
    return "hub"
  return None


def block(kind):
  found = [b for b in python_blocks() if kind_of(b) == kind]
  assert len(found) == 1, f"docs/serving.md has {len(found)} python blocks of kind {kind}"
  return found[0]


def run_block(code, values):
  """exec()s a doc block with its placeholder lines `NAME = ...` set to values[NAME] (Python source).

  Returns:
    dict, the block's namespace.
  """
  for name, value in values.items():
    assert name in PLACEHOLDERS, name
    code, n = re.subn(rf"^{re.escape(name)} = .*$", f"{name} = {value}", code, flags=re.M)
    assert n == 1, f"placeholder {name} not found exactly once in the block:\n{code}"
  namespace = {"__name__": "serving_doc_block"}
  exec(compile(code, f"<python block of {DOC}>", "exec"), namespace)  # pylint: disable=exec-used
  return namespace


def test_every_python_block_is_run_by_a_test():
  kinds = [kind_of(b) for b in python_blocks()]
  assert None not in kinds, "a python block of docs/serving.md that no test runs"
  assert sorted(kinds) == ["export", "grpc", "http_server", "hub", "rest"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """Tiny BERT + a DDI Glow, exported; the loaded models; the in-process vectors for SENTENCES and OTHERS."""
  tmp = tmp_path_factory.mktemp("serving_doc")
  embedder = SentenceEmbedder(tiny_model.tiny_model(tmp / "tiny"), "first-last-avg", max_seq_length=16)
  raw = engine_vectors(embedder, tiny_model.SENTENCES + SENTENCES + OTHERS)
  flow = Glow.from_config("config_l2_d2_w32", dim=embedder.dim, init="ddi", seed=0)
  flow.data_init(tf.constant(raw))
  z = flow(tf.constant(raw), training=False)[0].numpy()[-4:]
  export.export_models(embedder, flow, str(tmp / "export"), version=1)
  models = {"sts_text": exported_encoder.load_text_model(str(tmp / "export" / "text" / "1")),
            "sts_ids": tf.saved_model.load(str(tmp / "export" / "ids" / "1"))}
  return {"dir": tmp / "export", "models": models, "want": z[:2], "want_others": z[2:]}


def _cosine(a, b):
  return np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def _call(model, signature, columns):
  """Calls a loaded SavedModel's signature on columns (name -> list), cast to the signature's dtypes."""
  fn = model.signatures[signature]
  specs = fn.structured_input_signature[1]
  if sorted(columns) != sorted(specs):
    raise ValueError(f"signature {signature} takes {sorted(specs)}, got {sorted(columns)}")
  return {k: v.numpy() for k, v in fn(**{k: tf.constant(v, specs[k].dtype) for k, v in columns.items()}).items()}


def _rest_predict(model, body):
  """TF Serving's REST predict on one model: row ("instances") or column ("inputs") format."""
  signature = body.get("signature_name", "serving_default")
  names = sorted(model.signatures[signature].structured_input_signature[1])
  if "instances" in body:
    rows = body["instances"]
    columns = {names[0]: rows} if len(names) == 1 else {n: [row[n] for row in rows] for n in names}
  else:
    given = body["inputs"]
    columns = given if isinstance(given, dict) and set(given) == set(names) else {names[0]: given}
  outputs = _call(model, signature, columns)
  if "instances" in body:
    if len(outputs) == 1:
      return {"predictions": next(iter(outputs.values())).tolist()}
    batch = len(next(iter(outputs.values())))
    return {"predictions": [{k: v[i].tolist() for k, v in outputs.items()} for i in range(batch)]}
  return {"outputs": next(iter(outputs.values())).tolist() if len(outputs) == 1 else
                     {k: v.tolist() for k, v in outputs.items()}}


class _RestFront:
  """TF Serving's REST routes on 127.0.0.1, in a thread. A model answers LOADING to its first status query."""

  def __init__(self, models):
    self.requests, status_seen = [], set()
    front = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def _reply(self, code, payload):
        data = json.dumps(payload).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def _model(self, method, route):
        """The model name that `route` matches in this request's path, or None after a 404 reply."""
        front.requests.append((method, self.path))
        match = re.fullmatch(route, self.path)
        if not match or match[1] not in models:
          self._reply(404, {"error": f"Servable not found for request: {self.path}"})
          return None
        return match[1]

      def do_GET(self):  # pylint: disable=invalid-name
        name = self._model("GET", r"/v1/models/([^/:]+)")
        if name is None:
          return
        state = "AVAILABLE" if name in status_seen else "LOADING"
        status_seen.add(name)
        self._reply(200, {"model_version_status": [{"version": "1", "state": state,
                                                    "status": {"error_code": "OK", "error_message": ""}}]})

      def do_POST(self):  # pylint: disable=invalid-name
        name = self._model("POST", r"/v1/models/([^/:]+)(?:/versions/1)?:predict")
        if name is None:
          return
        try:
          body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
          self._reply(200, _rest_predict(models[name], body))
        except (ValueError, KeyError, TypeError, tf.errors.OpError) as e:
          self._reply(400, {"error": str(e)})

      def log_message(self, *args):
        pass

    self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.port = self.httpd.server_address[1]
    # A short poll: close()'s shutdown() waits for the serving loop's next one (0.5 s by default).
    threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

  def close(self):
    self.httpd.shutdown()
    self.httpd.server_close()


class _PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
  """PredictionService.Predict on the loaded SavedModels, as TF Serving's gRPC front answers it."""

  def __init__(self, models):
    self.models, self.requests = models, []

  def Predict(self, request, context):  # pylint: disable=invalid-name
    self.requests.append(request.model_spec.name)
    model = self.models.get(request.model_spec.name)
    if model is None:
      context.abort(grpc.StatusCode.NOT_FOUND, f"Servable not found: {request.model_spec.name}")
    signature = request.model_spec.signature_name or "serving_default"
    try:
      outputs = _call(model, signature, {k: tf.make_ndarray(v) for k, v in request.inputs.items()})
    except (ValueError, KeyError, tf.errors.OpError) as e:
      context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
    response = predict_pb2.PredictResponse()
    response.model_spec.name = request.model_spec.name
    response.model_spec.version.value = 1
    response.model_spec.signature_name = signature
    for name, value in outputs.items():
      response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
    return response


@pytest.mark.slow  # the module's export fixture takes about 20 s on the 2-core CPU
def test_rest_client_block(exported):
  front = _RestFront(exported["models"])
  try:
    ns = run_block(block("rest"), {"EXPORT_DIR": repr(str(exported["dir"])),
                                   "HOST, REST_PORT": f'"127.0.0.1", {front.port}'})
  finally:
    front.close()
  want = exported["want"]
  np.testing.assert_allclose(np.array(ns["embeddings"]), want, atol=1e-5)
  np.testing.assert_allclose(np.array(ns["ids_embeddings"]), want, atol=1e-5)
  np.testing.assert_allclose(ns["cosine"], _cosine(want, exported["want_others"]), atol=1e-5)
  posts = [path for method, path in front.requests if method == "POST"]
  assert posts == ["/v1/models/sts_text:predict"] * 2 + ["/v1/models/sts_ids:predict"]
  gets = [path for method, path in front.requests if method == "GET"]
  assert gets == ["/v1/models/sts_text"] * 2 + ["/v1/models/sts_ids"] * 2  # LOADING, then AVAILABLE


@pytest.mark.slow  # the module's export fixture takes about 20 s on the 2-core CPU
def test_grpc_client_block(exported):
  service = _PredictionService(exported["models"])
  server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=2))
  prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(service, server)
  port = server.add_insecure_port("127.0.0.1:0")
  server.start()
  try:
    ns = run_block(block("grpc"), {"EXPORT_DIR": repr(str(exported["dir"])),
                                   "HOST, GRPC_PORT": f'"127.0.0.1", {port}'})
  finally:
    server.stop(0)
  want = exported["want"]
  assert ns["grpc_embeddings"].dtype == np.float32 and ns["grpc_embeddings"].shape == want.shape
  np.testing.assert_allclose(ns["grpc_embeddings"], want, atol=1e-5)
  np.testing.assert_allclose(ns["grpc_ids_embeddings"], want, atol=1e-5)
  np.testing.assert_allclose(ns["grpc_cosine"], _cosine(want, exported["want_others"]), atol=1e-5)
  assert service.requests == ["sts_text", "sts_text", "sts_ids"]


@pytest.mark.slow  # the module's export fixture takes about 20 s on the 2-core CPU
def test_tf_hub_block(exported):
  ns = run_block(block("hub"), {"EXPORT_DIR": repr(str(exported["dir"]))})
  want = exported["want"][:1]
  np.testing.assert_allclose(ns["keras_embeddings"], want, atol=1e-5)
  np.testing.assert_allclose(ns["hub_embeddings"].numpy(), want, atol=1e-5)


@pytest.mark.slow
def test_export_block_on_minilm(tmp_path):
  """The export block as written (MiniLM, last-avg, 64), with a flow fitted here in 2 steps on random vectors."""
  rng = np.random.default_rng(0)
  vectors = rng.normal(size=[128, 384]).astype(np.float32)
  flow_dir = tmp_path / "flow"
  flow_fitting.fit_flow(pair_sources.CachedPairs(vectors[:64], vectors[64:]),
                    flow_fitting.FlowFitConfig(flow_model_config="config_l2_d2_w32"), str(flow_dir))
  ns = run_block(block("export"), {"EXPORT_DIR": repr(str(tmp_path / "export")), "FLOW_DIR": repr(str(flow_dir))})
  assert (tmp_path / "export" / "ids" / "1" / "saved_model.pb").is_file()
  want = glow.transform(ns["flow"], engine_vectors(ns["embedder"], ["A man is playing a guitar."]))
  assert ns["embeddings"].shape == (1, 384)
  np.testing.assert_allclose(ns["embeddings"].numpy(), want, atol=1e-4)
