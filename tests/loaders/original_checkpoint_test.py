"""Checkpoints of the original BERT-flow load: BERT into our encoder, `bert/flow/...` into our Glow, the rest ignored.

The module fixture runs the original's own flow code (vendored in tests/fixtures/bert_flow_original/flow/,
Apache 2.0) under tf.compat.v1 in a subprocess, on a fixed input, for two Glow configs that between them use
every variable name (additive coupling + reversal; affine coupling + LU 1x1). It saves TF1 checkpoints as the
original's run_siamese.py would (a tiny BERT, the Glow with trained-looking weights, `loss/output_weights`, Adam
slots, `global_step`) with the original's z, bits/dim objective and log-det.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests import tiny

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WRITER = os.path.join(REPO, "tests", "fixtures", "bert_flow_original", "write_original_checkpoint.py")
CONFIGS = {
    "additive_reversal": "config_l3_d3_w32",  # the original's default
    "affine_lu": {"coupling": "affine", "coupling_width": 8, "n_levels": 2, "depth": 2, "permutation": False},
}
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "man", "dog", "runs", "plays", "the", "guitar", "."]


@pytest.fixture(scope="module")
def original(tmp_path_factory):
  """{config key: checkpoint prefix}, plus "bert": {TF1 name: array}, "x": the flow input, "dir": the folder."""
  from bert_flow_tf.loaders import names as names_lib
  from bert_flow_tf.loaders import tf1_checkpoint
  from bert_flow_tf.modeling.bert_encoder import BertEncoder
  import glow
  import tf_keras as keras
  root = tmp_path_factory.mktemp("original")
  (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
  config = tiny.bert_config(len(VOCAB))
  (root / "bert_config.json").write_text(json.dumps(tf1_checkpoint.google_config_dict(config)))
  keras.utils.set_random_seed(0)
  encoder = BertEncoder(config).build_variables()
  bert = {n.tf1: n.variable.numpy() for n in names_lib.weight_names(encoder)}
  np.savez(root / "bert.npz", **bert)
  x = np.random.default_rng(0).normal(size=(5, 16)).astype(np.float32)
  specs, out = [], {"bert": bert, "x": x, "dir": root}
  for key, flow_config in CONFIGS.items():
    fields = glow.GlowConfig.load(flow_config) if isinstance(flow_config, str) else glow.GlowConfig(**flow_config)
    out[key] = str(root / key / "model.ckpt-1000")
    spec = {"flow_config": fields.to_dict(), "x": x.tolist(), "bert": str(root / "bert.npz"), "num_labels": 3,
            "seed": 1, "out": out[key]}
    specs.append(root / f"{key}.json")
    specs[-1].write_text(json.dumps(spec))
  result = subprocess.run([sys.executable, WRITER] + [str(s) for s in specs], capture_output=True, text=True,
                          timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  return out


@pytest.mark.slow
@pytest.mark.parametrize("key", list(CONFIGS))
def test_original_glow_loads_with_its_z_and_logdet(original, key):
  import glow
  from bert_flow_tf.loaders import tf1_flow
  reference = np.load(original[key] + ".npz")
  flow = tf1_flow.load_tf1_flow(original[key])
  given = CONFIGS[key]
  expected = glow.GlowConfig.load(given) if isinstance(given, str) else glow.GlowConfig(**given)
  assert flow.config == expected and flow.dim == 16
  z, logdet = flow(original["x"])
  np.testing.assert_allclose(z.numpy(), reference["z"], rtol=0, atol=1e-5)
  np.testing.assert_allclose(logdet.numpy(), reference["logdet"], rtol=0, atol=1e-5)
  # The loss too (bits/dim, hundreds here: the original's glorot-initialised ActNorms scale by up to e^1.8 each).
  np.testing.assert_allclose(flow.latent_nll(z, logdet).numpy(), reference["objective"], rtol=1e-6)
  if key == "affine_lu":
    assert np.ptp(reference["logdet"]) > 1e-3  # the affine coupling's log-det depends on x: it was exercised
  # A config given by name must agree with the stored one.
  assert tf1_flow.load_tf1_flow(original[key], expected).config == expected
  with pytest.raises(ValueError, match="disagrees with the Glow stored"):
    tf1_flow.load_tf1_flow(original[key], "config_l2_d2_w32")


@pytest.mark.slow
def test_encoder_loads_and_the_rest_is_ignored_in_one_line(original, caplog):
  from bert_flow_tf import loaders
  root = original["dir"]
  with caplog.at_level("INFO", logger="absl"):
    loaded = loaders.load_model(None, bert_config_file=str(root / "bert_config.json"),
                                vocab_file=str(root / "vocab.txt"), init_checkpoint=original["additive_reversal"])
  from bert_flow_tf.loaders import names as names_lib
  for name in names_lib.weight_names(loaded.encoder):
    np.testing.assert_array_equal(name.variable.numpy(), original["bert"][name.tf1], err_msg=name.tf1)
  lines = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
  assert len(lines) == 1
  for part in ("Adam slots", "global_step (1)", "loss/output_weights (1)", "bert/flow/"):
    assert part in lines[0], lines[0]


@pytest.mark.slow
def test_unknown_tensors_still_fail_naming_them(original, tmp_path):
  import tensorflow as tf
  from bert_flow_tf.loaders import tf1_checkpoint
  from bert_flow_tf.loaders import tf1_flow
  reader = tf.train.load_checkpoint(original["additive_reversal"])
  tensors = {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
  tensors["bert/flow/revnet_0/revnet_step_0/mystery"] = np.zeros([2], np.float32)
  tensors["loss/other_weights"] = np.zeros([2], np.float32)
  prefix = str(tmp_path / "model.ckpt")
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=list(tensors), shape_and_slices=[""] * len(tensors),
                    tensors=[tf.constant(v) for v in tensors.values()])
  with pytest.raises(ValueError, match=r"1 unused tensor\(s\): loss/other_weights$"):
    tf1_checkpoint.load_tf1_encoder(str(original["dir"] / "bert_config.json"), prefix)
  with pytest.raises(ValueError, match=r"1 unused tensor\(s\): bert/flow/revnet_0/revnet_step_0/mystery$"):
    tf1_flow.load_tf1_flow(prefix)
  del tensors["bert/flow/revnet_0/revnet_step_0/mystery"]
  tensors["bert/flow/revnet_1/revnet_step_2/invertible/w"] = np.eye(8, dtype=np.float32)
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=list(tensors), shape_and_slices=[""] * len(tensors),
                    tensors=[tf.constant(v) for v in tensors.values()])
  with pytest.raises(ValueError, match="revnet_1/revnet_step_2/invertible/w: not the reversal"):
    tf1_flow.load_tf1_flow(prefix)


@pytest.mark.slow
def test_run_flow_exports_the_original_model_unchanged(original, tmp_path, data_dir):
  """run_flow.py --init_checkpoint=<original> --nofit_flow --export_flow=init_checkpoint: BERT + avg + the
  original's Glow in the ids SavedModel, checked against the loaded encoder and Glow in this process."""
  import tensorflow as tf
  from bert_flow_tf import loaders
  from bert_flow_tf.loaders import tf1_flow
  from bert_flow_tf.modeling import pooling
  from bert_flow_tf.modeling import pooling_ops
  small = tmp_path / "data" / "stsbenchmark"
  small.mkdir(parents=True)
  for split in ("train", "dev", "test"):
    lines = (data_dir / "stsbenchmark" / f"sts-{split}.csv").read_bytes().split(b"\n")[:8]
    (small / f"sts-{split}.csv").write_bytes(b"\n".join(lines) + b"\n")
  root = original["dir"]
  checkpoint = original["additive_reversal"]
  export_dir = tmp_path / "export"
  cmd = [sys.executable, os.path.join(REPO, "run_flow.py"), f"--bert_config_file={root / 'bert_config.json'}",
         f"--vocab_file={root / 'vocab.txt'}", f"--init_checkpoint={checkpoint}", "--sentence_embedding_type=avg",
         f"--data_dir={tmp_path / 'data'}", "--nofit_flow", "--export_flow=init_checkpoint",
         f"--export_dir={export_dir}", f"--output_parent_dir={tmp_path / 'exp'}", "--cached_dir="]
  result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  info = json.loads((export_dir / "export_info.json").read_text())
  assert info["flow"]["config"]["n_levels"] == 3 and info["flow"]["dim"] == 16
  served = tf.saved_model.load(str(export_dir / "ids" / "1")).signatures["serving_default"]
  ids = tf.constant([[2, 5, 6, 9, 10, 11, 12, 3], [2, 10, 7, 8, 12, 3, 0, 0]], tf.int32)
  mask = tf.cast(ids > 0, tf.int32)
  got = list(served(input_word_ids=ids, input_mask=mask, input_type_ids=tf.zeros_like(ids)).values())[0]
  loaded = loaders.load_model(None, bert_config_file=str(root / "bert_config.json"),
                              vocab_file=str(root / "vocab.txt"), init_checkpoint=checkpoint)
  pooled = pooling_ops.pool(pooling.resolve("avg", loaded.num_layers), loaded.encoder(
      {"input_word_ids": ids, "input_mask": mask, "input_type_ids": tf.zeros_like(ids)}), mask)
  expected, _ = tf1_flow.load_tf1_flow(checkpoint)(pooled)
  np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
