"""Exported SavedModels, loaded in a fresh process, reproduce the in-process MiniLM + Glow embeddings."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bert_flow_tf import export
from bert_flow_tf.calibration import fit_flow
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.evaluation import cosine
from glow.model import Glow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SENTENCES = ["A man is playing a guitar.", "A woman slices an onion.", "",
             "Three dogs run across a snowy field near the river.", "Café owners in Zürich protest the new tax.",
             "word " * 80, "Hi.", "The stock market fell sharply on Monday after the report.",
             "A child is riding a horse.", "Two men are playing chess in the park."]
PAIRS_B = SENTENCES[1:] + SENTENCES[:1]

# Runs in a fresh interpreter: loads both SavedModels by path only and writes their outputs to an .npz.
_LOAD_AND_RUN = """
import sys, json, numpy as np, tensorflow as tf
from bert_flow_tf import export
from bert_flow_tf.calibration import fit_flow
text_dir, ids_dir, in_json, out_npz = sys.argv[1:]
data = json.load(open(in_json))
text = export.load_text_model(text_dir)
emb = text.signatures["serving_default"](sentences=tf.constant(data["a"]))["embeddings"].numpy()
cos = text.signatures["similarity"](sentences_a=tf.constant(data["a"]),
                                    sentences_b=tf.constant(data["b"]))["cosine"].numpy()
ids_model = tf.saved_model.load(ids_dir)
ids = {k: tf.constant(np.array(v, np.int32)) for k, v in data["ids"].items()}
ids_emb = ids_model.signatures["serving_default"](**ids)["embeddings"].numpy()
np.savez(out_npz, emb=emb, cos=cos, ids_emb=ids_emb, max_seq_length=ids_model.max_seq_length.numpy())
"""


def _run(args, **kwargs):
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  return subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True, cwd=REPO, **kwargs)


@pytest.fixture(scope="module")
def exported(minilm_dir, tmp_path_factory):
  """MiniLM from a temporary copy + a random-init Glow (dim 384), exported; then the copied vocab is deleted."""
  tmp = tmp_path_factory.mktemp("export")
  model_copy = tmp / "minilm"
  shutil.copytree(minilm_dir, model_copy)
  encoder = SentenceEmbedder(loaders.load_model(str(model_copy)), "first-last-avg", max_seq_length=64)
  flow = Glow.from_config("config_l3_d3_w32", dim=encoder.dim, seed=3)
  paths = export.export_models(encoder, flow, str(tmp / "export"), version=1)
  raw = encoder.encode(SENTENCES, show_progress=False)
  want = flow(tf.constant(raw), training=False)[0].numpy()
  ids = {k: v.numpy().tolist() for k, v in encoder.tokenizer(tf.constant(SENTENCES), 64).items()}
  (model_copy / "vocab.txt").unlink()
  return {"encoder": encoder, "flow": flow, "paths": paths, "raw": raw, "want": want, "ids": ids, "tmp": tmp}


@pytest.mark.slow
def test_saved_models_in_a_fresh_process_match_in_process(exported):
  tmp = exported["tmp"]
  (tmp / "in.json").write_text(json.dumps({"a": SENTENCES, "b": PAIRS_B, "ids": exported["ids"]}))
  paths = exported["paths"]
  result = _run(["-c", _LOAD_AND_RUN, paths["text"], paths["ids"], str(tmp / "in.json"), str(tmp / "out.npz")])
  assert result.returncode == 0, result.stderr[-3000:]
  got = np.load(tmp / "out.npz")
  want = exported["want"]
  assert got["emb"].shape == (len(SENTENCES), 384) and got["emb"].dtype == np.float32
  # The flow is not the identity: calibrated and raw vectors differ by far more than the tolerance.
  assert np.abs(want - exported["raw"]).max() > 1e-2
  np.testing.assert_allclose(got["emb"], want, atol=1e-5)
  want_b = want[list(range(1, len(SENTENCES))) + [0]]
  np.testing.assert_allclose(got["cos"], cosine(want, want_b), atol=1e-5)
  np.testing.assert_allclose(got["ids_emb"], want, atol=1e-5)
  assert int(got["max_seq_length"]) == 64


@pytest.mark.slow
def test_export_layout_info_and_refusals(exported):
  paths = exported["paths"]
  export_dir = os.path.dirname(os.path.dirname(paths["text"]))
  assert sorted(os.listdir(export_dir)) == ["export_info.json", "ids", "text"]
  assert os.listdir(os.path.join(export_dir, "text")) == ["1"]  # no temporary directory left behind
  assert os.path.isfile(os.path.join(paths["text"], "assets", "vocab.txt"))
  info = json.loads(open(paths["info"], encoding="utf-8").read())
  assert info["dim"] == 384 and info["max_seq_length"] == 64 and info["pooling"] == "first-last-avg"
  assert info["flow"]["config"]["n_levels"] == 3 and info["flow"]["dim"] == 384
  encoder, flow = exported["encoder"], exported["flow"]
  with pytest.raises(FileExistsError, match="text/1 exists"):
    export.export_models(encoder, flow, export_dir, version=1)
  with pytest.raises(ValueError, match="version must be an int >= 1"):
    export.export_models(encoder, flow, export_dir, version=0)
  with pytest.raises(ValueError, match="flow width 768 != embedding width D=384"):
    export.export_models(encoder, Glow.from_config("config_l3_d3_w32", dim=768), export_dir, version=2)


@pytest.mark.slow
def test_encode_command_through_the_exported_model(exported):
  tmp = exported["tmp"]
  src = tmp / "sentences.txt"
  src.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
  out = tmp / "exported.npy"
  result = _run(["-m", "bert_flow_tf.encode", "--exported_model", exported["paths"]["text"],
                 "--input_file", str(src), "--output_file", str(out), "--batch_size=4"])
  assert result.returncode == 0, result.stderr[-3000:]
  np.testing.assert_allclose(np.load(out), exported["want"], atol=1e-5)
  clash = _run(["-m", "bert_flow_tf.encode", "--exported_model", exported["paths"]["text"],
                "--flow_checkpoint", str(tmp), "--sentence_embedding_type=cls", "--input_file", str(src),
                "--output_file", str(tmp / "never.npy")])
  assert clash.returncode != 0
  assert ("--exported_model cannot be combined with --sentence_embedding_type, --flow_checkpoint"
          in clash.stderr), clash.stderr[-2000:]
  assert not (tmp / "never.npy").exists()


@pytest.mark.slow
def test_encode_command_with_a_fitted_flow(exported, minilm_dir):
  tmp = exported["tmp"]
  raw = exported["raw"]
  flow_dir = str(tmp / "fitted_flow")
  config = fit_flow.FlowFitConfig(batch_size=5, num_train_epochs=2.0, seed=7)
  fitted, summary = fit_flow.fit_flow(fit_flow.CachedPairs(raw, raw[::-1].copy()), config, flow_dir,
                                      provenance={"sentence_embedding_type": "first-last-avg", "max_seq_length": 64})
  assert summary["complete"] and summary["steps_done"] == 4
  src = tmp / "sentences_flow.txt"
  src.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
  out = tmp / "flow.npy"
  result = _run(["-m", "bert_flow_tf.encode", f"--model_dir={minilm_dir}", "--sentence_embedding_type",
                 "first-last-avg", "--flow_checkpoint", flow_dir, "--input_file", str(src), "--output_file",
                 str(out)])
  assert result.returncode == 0, result.stderr[-3000:]
  want = fitted(tf.constant(raw), training=False)[0].numpy()
  assert np.abs(want - raw).max() > 1e-2
  np.testing.assert_allclose(np.load(out), want, atol=1e-5)
  # A flow fitted on other vectors than the flags produce is refused, naming the flag.
  result = _run(["-m", "bert_flow_tf.encode", f"--model_dir={minilm_dir}", "--sentence_embedding_type",
                 "last-avg", "--flow_checkpoint", flow_dir, "--input_file", str(src), "--output_file",
                 str(tmp / "wrong.npy")])
  assert result.returncode != 0
  assert f"--flow_checkpoint={flow_dir} does not fit" in result.stderr
  assert "sentence_embedding_type=last-avg (the flow was fitted with first-last-avg)" in result.stderr
  assert not (tmp / "wrong.npy").exists()
