"""Exports and serving without the server: the export's layout, info and refusals, op audit, the TF1 session loader
in a fresh process, warm-up records, TF-Hub.

All on a fresh export of the tiny random BERT (H=16) with a Glow whose ActNorms were data-initialized on the same
embeddings (so the calibrated vectors are O(1) and the flow is far from the identity).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras as keras
from tensorflow.core.protobuf import saved_model_pb2

from bert_flow_tf import exported_encoder
from bert_flow_tf.serving import export
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.serving import op_audit
from bert_flow_tf.serving import warmup
from bert_flow_tf.utils import errors
from glow.model import Glow
from tests.embedding import tiny_model
from tests.embedding.engine_vectors import engine_vectors

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES = tiny_model.SENTENCES
TOKENIZER_OPS = ["FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "NormalizeUTF8"]


def _run(args):
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  return subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True, cwd=REPO, check=False)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
  """Tiny BERT, first-last-avg, max_seq_length 16, + a DDI Glow, exported; the in-process embeddings."""
  tmp = tmp_path_factory.mktemp("serving")
  embedder = SentenceEmbedder(tiny_model.tiny_model(tmp / "tiny"), "first-last-avg", max_seq_length=16)
  raw = engine_vectors(embedder, SENTENCES + list(warmup.WARMUP_SENTENCES))
  flow = Glow.from_config("config_l2_d2_w32", dim=embedder.dim, init="ddi", seed=0)
  flow.data_init(tf.constant(raw))
  want = flow(tf.constant(raw), training=False)[0].numpy()
  assert np.abs(want - raw).max() > 1.0 and np.abs(want).max() < 10  # a real change, at a scale where 1e-5 means something
  paths = export.export_models(embedder, flow, str(tmp / "export"), version=1)
  return {"embedder": embedder, "flow": flow, "paths": paths, "want": want[:len(SENTENCES)],
          "want_warmup": want[len(SENTENCES):], "tmp": tmp, "dir": str(tmp / "export")}


def test_export_layout_and_info(exported):
  export_dir, paths = exported["dir"], exported["paths"]
  assert sorted(os.listdir(export_dir)) == ["export_info.json", "ids", "text"]
  assert os.listdir(os.path.join(export_dir, "text")) == ["1"]  # no temporary directory left behind
  assert os.path.isfile(os.path.join(paths["text"], "assets", "vocab.txt"))
  info = json.loads(open(paths["info"], encoding="utf-8").read())
  assert info["dim"] == 16 and info["max_seq_length"] == 16 and info["pooling"] == "first-last-avg"
  assert info["flow"]["config"]["n_levels"] == 2 and info["flow"]["dim"] == 16


def test_export_refusals(exported):
  embedder, flow, export_dir = exported["embedder"], exported["flow"], exported["dir"]
  with pytest.raises(errors.UserError, match=r"export: not replaced: it holds export_info.json, ids, text; pass "
                                             r"overwrite=True to replace an export, or give another folder$"):
    export.export_models(embedder, flow, export_dir, version=2)  # another version too: an export is one unit
  with pytest.raises(ValueError, match="version must be an int >= 1"):
    export.export_models(embedder, flow, export_dir, version=0)
  with pytest.raises(ValueError, match="flow width 32 != embedding width D=16"):
    export.export_models(embedder, Glow.from_config("config_l2_d2_w32", dim=32), export_dir, version=2)
  assert sorted(os.listdir(os.path.join(export_dir, "text"))) == ["1"]


def test_op_audit_of_a_fresh_export(exported):
  audits = op_audit.audit_export(exported["dir"])
  assert sorted(audits) == ["ids/1", "text/1"]
  text, ids = audits["text/1"], audits["ids/1"]
  assert text.servable() and ids.servable(), text.problems + ids.problems
  assert text.ops[op_audit.TEXT] == TOKENIZER_OPS
  assert text.oldest_serving == (2, 12)  # FastBertNormalize
  assert ids.ops[op_audit.TEXT] == [] and ids.oldest_serving == (0, 0)
  assert {"BatchMatMulV2", "StatefulPartitionedCall"} <= set(ids.ops[op_audit.CORE])
  lines = op_audit.report_lines("text/1", text)
  assert "  tensorflow-text: FastBertNormalize (TF Serving >= 2.12), FastWordpieceTokenizeWithOffsets " \
         "(TF Serving >= 2.10), NormalizeUTF8 (TF Serving >= 2.2)" in lines
  # The text model's ops are refused where only core ops are allowed (what the ids model must pass).
  strict = op_audit.audit_saved_model(exported["paths"]["text"], core_only=True)
  assert [p.split(" in a model")[0] for p in strict.problems] == [f"tensorflow-text op {op}" for op in TOKENIZER_OPS]


def test_op_audit_refuses_python_and_unregistered_ops(exported, tmp_path):
  module = tf.Module()
  module.f = tf.function(lambda x: tf.py_function(lambda v: v * 2, [x], tf.float32),
                         input_signature=[tf.TensorSpec([None], tf.float32)])
  tf.saved_model.save(module, str(tmp_path / "py"))
  audit = op_audit.audit_saved_model(str(tmp_path / "py"))
  assert audit.ops[op_audit.PYTHON] == ["EagerPyFunc"] and audit.oldest_serving is None
  assert audit.problems == ["Python op EagerPyFunc: the model server has no Python interpreter"]
  # An op no library registers: the ids model with one function node renamed.
  copy = tmp_path / "unknown"
  shutil.copytree(exported["paths"]["ids"], copy)
  pb = copy / "saved_model.pb"
  proto = saved_model_pb2.SavedModel.FromString(pb.read_bytes())
  proto.meta_graphs[0].graph_def.library.function[0].node_def[0].op = "NoSuchOp"
  pb.write_bytes(proto.SerializeToString())
  audit = op_audit.audit_saved_model(str(copy))
  assert audit.problems == ["op NoSuchOp is registered by neither TensorFlow nor tensorflow-text"]


@pytest.mark.slow
def test_check_servable_script(exported, tmp_path):
  result = _run([os.path.join("scripts", "check_servable.py"), exported["dir"]])
  assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
  out = result.stdout
  assert "oldest TF Serving release with all its tensorflow-text ops: 2.12" in out
  assert "oldest TF Serving release with all its tensorflow-text ops: any" in out  # the ids model
  assert out.rstrip().endswith("servable: yes")
  shutil.copytree(exported["paths"]["text"], tmp_path / "ids" / "1")  # text ops where the ids model belongs
  result = _run([os.path.join("scripts", "check_servable.py"), str(tmp_path)])
  assert result.returncode == 1 and "servable: NO" in result.stdout
  assert "NOT SERVABLE: tensorflow-text op FastBertNormalize in a model that must use core TensorFlow ops only" \
      in result.stdout
  result = _run([os.path.join("scripts", "check_servable.py"), str(tmp_path / "nothing")])
  assert result.returncode == 2
  assert result.stderr.splitlines()[-1] == f"error: no <kind>/<version>/saved_model.pb under {tmp_path / 'nothing'} " \
                                           "(EXPORT_DIR)"


@pytest.mark.slow
def test_session_loader_in_a_fresh_process(exported):
  """Each model loaded by the TF1 loader on `serve` and fed through signature tensor names, in its own process;
  the ids model in a process that never imports tensorflow_text."""
  tmp, paths = exported["tmp"], exported["paths"]
  want = exported["want"]
  pairs_b = SENTENCES[1:] + SENTENCES[:1]
  ids = {k: v.numpy().tolist() for k, v in exported["embedder"].tokenizer(tf.constant(SENTENCES)).items()}
  runs = {"text": [{"saved_model": paths["text"], "signature": "serving_default", "inputs": {"sentences": SENTENCES}},
                   {"saved_model": paths["text"], "signature": "similarity",
                    "inputs": {"sentences_a": SENTENCES, "sentences_b": pairs_b}}],
          "ids": [{"saved_model": paths["ids"], "signature": "serving_default", "inputs": ids}]}
  got = {}
  for kind, requests in runs.items():
    (tmp / f"{kind}.json").write_text(json.dumps(requests))
    args = ["-m", "bert_flow_tf.serving.session_loader"] + (["--tensorflow_text"] if kind == "text" else [])
    result = _run(args + [str(tmp / f"{kind}.json"), str(tmp / f"{kind}.npz")])
    assert result.returncode == 0, result.stderr[-3000:]
    got[kind] = np.load(tmp / f"{kind}.npz")
    assert bool(got[kind]["tensorflow_text_loaded"]) == (kind == "text")
  np.testing.assert_allclose(got["text"]["0/embeddings"], want, atol=1e-5)
  want_b = want[list(range(1, len(SENTENCES))) + [0]]
  cosine = np.sum(want * want_b, 1) / np.linalg.norm(want, axis=1) / np.linalg.norm(want_b, axis=1)
  np.testing.assert_allclose(got["text"]["1/cosine"], cosine, atol=1e-5)
  np.testing.assert_allclose(got["ids"]["0/embeddings"], want, atol=1e-5)


def test_warmup_records_run_against_the_saved_models(exported):
  paths, want = exported["paths"], exported["want_warmup"]
  n = len(warmup.WARMUP_SENTENCES)
  text = exported_encoder.load_text_model(paths["text"])
  logs = warmup.read(paths["text"])
  assert [warmup.request_inputs(log)[0] for log in logs] == ["serving_default", "serving_default", "similarity"]
  outputs = []
  for log in logs:
    signature, inputs = warmup.request_inputs(log)
    outputs.append(text.signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()}))
  np.testing.assert_allclose(outputs[0]["embeddings"].numpy(), want[:1], atol=1e-5)
  np.testing.assert_allclose(outputs[1]["embeddings"].numpy(), want, atol=1e-5)
  rotated = want[list(range(1, n)) + [0]]
  cosine = np.sum(want * rotated, 1) / np.linalg.norm(want, axis=1) / np.linalg.norm(rotated, axis=1)
  np.testing.assert_allclose(outputs[2]["cosine"].numpy(), cosine, atol=1e-5)
  ids = tf.saved_model.load(paths["ids"])
  logs = warmup.read(paths["ids"])
  assert len(logs) == 2
  for log, expected in zip(logs, (want[:1], want)):
    signature, inputs = warmup.request_inputs(log)
    assert signature == "serving_default" and inputs["input_word_ids"].dtype == np.int32
    got = ids.signatures[signature](**{k: tf.constant(v) for k, v in inputs.items()})["embeddings"].numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)
  # The long sentence was cut at max_seq_length: the batch is 16 wide, not its word-piece count.
  assert inputs["input_word_ids"].shape == (n, 16)


def test_hub_keras_layer_frozen_in_a_keras_model(exported):
  path = exported["paths"]["text"]
  layer = hub.KerasLayer(path, trainable=False)
  sentences = keras.Input(shape=(), dtype=tf.string)
  model = keras.Model(sentences, layer(sentences))
  np.testing.assert_allclose(model.predict(tf.constant(SENTENCES), batch_size=8, verbose=0), exported["want"],
                             atol=1e-5)
  # Frozen: every saved variable (encoder, flow, do_lower_case, max_seq_length) is a non-trainable weight.
  saved = len(exported["embedder"].encoder.variables) + len(exported["flow"].variables) + 2
  assert model.trainable_weights == [] and len(model.non_trainable_weights) == saved


def test_hub_keras_layer_on_the_serving_signature(exported):
  layer = hub.KerasLayer(exported["paths"]["text"], signature="serving_default", output_key="embeddings")
  np.testing.assert_allclose(layer(tf.constant(SENTENCES)).numpy(), exported["want"], atol=1e-5)
  np.testing.assert_allclose(layer({"sentences": tf.constant(SENTENCES[:3])}).numpy(), exported["want"][:3],
                             atol=1e-5)
