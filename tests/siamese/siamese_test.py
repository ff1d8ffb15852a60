"""Siamese fine-tuning: objectives, the joint-flow optimizer split, resume, and MirroredStrategy equivalence.

Everything runs on a tiny BERT (H=32, one block, dropout 0) written as a TF1 checkpoint with a 20-token vocab, and
a tiny Glow (two levels of one step, width 8), on tiny SNLI-format files in a temp dir: a train step's trace is
most of each test's time, and it grows with the blocks and flow steps. The distribution check uses the two logical
CPU devices of conftest.py.
"""
import dataclasses
import json
import os
import pathlib

import numpy as np
import pytest
import scipy.special
import tensorflow as tf

from tests.tiny import SPECIALS, make_tiny_setup, siamese_flow_config

def tiny_config(model_dir, data_dir, output_dir, **overrides):
  from bert_flow_tf import siamese
  values = dict(task_name="snli", data_dir=data_dir, output_dir=output_dir, model=model_dir,
                train_splits=("dev", "test"), max_seq_length=16, train_batch_size=4, eval_batch_size=8,
                learning_rate=1e-3, num_train_epochs=0.5, warmup_proportion=0.25, save_checkpoints_steps=2,
                log_every_step=100, flow=True, flow_loss=True, flow_model_config=siamese_flow_config(model_dir))
  values.update(overrides)
  return siamese.SiameseConfig(**values)


def model_weights(trainer):
  """Every trainable variable by position (Keras uniquifies layer names between two models in one process)."""
  return {i: v.numpy() for i, v in enumerate(trainer.model.trainable_variables)}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
  return make_tiny_setup(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def straight(tiny, tmp_path_factory):
  """(result, output_dir) of one uninterrupted float32 run (6 steps, dupe_factor 2), shared by the resume and the
  mixed-precision tests, which each compare a run of their own with it."""
  model_dir, data_dir = tiny
  out = str(tmp_path_factory.mktemp("straight"))
  from bert_flow_tf import siamese  # pylint: disable=g-import-not-at-top
  return siamese.run(tiny_config(model_dir, data_dir, out, dupe_factor=2)), out


def test_warmup_linear_decay():
  from glow import WarmupLinearDecay
  schedule = WarmupLinearDecay(2e-5, num_train_steps=100, num_warmup_steps=10)
  got = [float(schedule(s)) for s in (0, 5, 10, 55, 100, 120)]
  np.testing.assert_allclose(got, [0.0, 1e-5, 1.8e-5, 0.9e-5, 0.0, 0.0], atol=1e-12)


def test_features_labels_dupes_and_num_examples(tiny):
  from bert_flow_tf import data as data_lib
  from bert_flow_tf.siamese.data import make_features
  from bert_flow_tf.modeling.tokenizer import BertTokenizer
  model_dir, data_dir = tiny
  task = data_lib.load_task("snli", data_dir)
  tokenizer = BertTokenizer(os.path.join(model_dir, "vocab.txt"), True, 8)
  f = make_features(task.dev, task, tokenizer, 8, dupe_factor=3, num_examples=5, seed=3)
  n = len(task.dev[0])
  assert f["ids_a"].shape == (3 * n, 8)
  np.testing.assert_array_equal(f["label"][:n], task.dev[0].labels)
  assert f["labeled"][:n].sum() == 5
  np.testing.assert_array_equal(f["labeled"][n:2 * n], f["labeled"][:n])
  mask_id = SPECIALS.index("[MASK]")
  for copy in (1, 2):
    rows = slice(copy * n, (copy + 1) * n)
    # Exactly one piece per non-empty sentence differs from the first copy, and it is [MASK] (or already was).
    diff = f["ids_a"][rows] != f["ids_a"][:n]
    assert diff.sum(axis=1).max() <= 1
    assert np.all(f["ids_a"][rows][diff] == mask_id)
    assert diff.sum() >= n - 2  # a masked position rarely already holds [MASK]; none does in this vocab
  np.testing.assert_array_equal(f["mask_a"][n:2 * n], f["mask_a"][:n])
  assert f["ids_a"][0, 0] == SPECIALS.index("[CLS]")


def test_objectives_match_hand_computation(tiny, tmp_path):
  from bert_flow_tf import data as data_lib
  from bert_flow_tf import siamese
  model_dir, data_dir = tiny
  config = tiny_config(model_dir, data_dir, str(tmp_path), flow=False, flow_loss=False)
  task = data_lib.load_task("snli", data_dir)
  trainer = siamese.Trainer(config, task, tf.distribute.get_strategy(), num_train_steps=1)
  feats = trainer.features(task.dev[:1])
  batch = {k: tf.constant(v[:6]) for k, v in feats.items()}
  out = trainer.model(batch)
  a, b = out["embedding_a"].numpy(), out["embedding_b"].numpy()
  w = trainer.model.output_weights.numpy()
  assert w.shape == (3, 96) and abs(w.std() - 0.02) < 0.01 and np.abs(w).max() <= 0.04 + 1e-6
  logits = np.concatenate([a, b, np.abs(a - b)], -1) @ w.T
  log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
  expected = -log_probs[np.arange(6), feats["label"][:6]]
  np.testing.assert_allclose(out["per_example_loss"].numpy(), expected, rtol=1e-5)
  cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
  np.testing.assert_allclose(out["cos"].numpy(), cos, rtol=1e-5)
  penalised = siamese.supervised_loss(out, 0.5).numpy()
  np.testing.assert_allclose(penalised, expected + 0.5 * (np.linalg.norm(a, axis=-1) + np.linalg.norm(b, axis=-1)),
                             rtol=1e-5)
  # Regression: (cos - y')^2 with y' scaled to [0, 1].
  regression = dataclasses.replace(task, is_regression=True, num_labels=1, label_max=2.0)
  trainer_r = siamese.Trainer(config, regression, tf.distribute.get_strategy(), num_train_steps=1)
  feats_r = trainer_r.features(task.dev[:1])
  np.testing.assert_allclose(feats_r["label"], task.dev[0].labels / 2.0)
  out_r = trainer_r.model({k: tf.constant(v[:6]) for k, v in feats_r.items()})
  np.testing.assert_allclose(out_r["per_example_loss"].numpy(), (out_r["cos"].numpy() - feats_r["label"][:6]) ** 2,
                             rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("frozen", ["bert", "flow"])
def test_joint_flow_optimizers_touch_only_their_module(tiny, tmp_path, frozen):
  from bert_flow_tf import data as data_lib
  from bert_flow_tf import siamese
  model_dir, data_dir = tiny
  rates = {"learning_rate": 0.0} if frozen == "bert" else {"flow_learning_rate": 0.0}
  config = tiny_config(model_dir, data_dir, str(tmp_path), warmup_proportion=0.0, **rates)
  task = data_lib.load_task("snli", data_dir)
  trainer = siamese.Trainer(config, task, tf.distribute.get_strategy(), num_train_steps=2)
  encoder_before = [v.numpy() for v in trainer.model.encoder.trainable_variables]
  flow_before = [v.numpy() for v in trainer.model.flow.trainable_variables]
  trainer.train(task.dev, stop_at_step=1)
  encoder_moved = any(not np.array_equal(b, v.numpy())
                      for b, v in zip(encoder_before, trainer.model.encoder.trainable_variables))
  flow_moved = any(not np.array_equal(b, v.numpy())
                   for b, v in zip(flow_before, trainer.model.flow.trainable_variables))
  assert (encoder_moved, flow_moved) == ((False, True) if frozen == "bert" else (True, False))
  assert trainer.model.output_weights.trainable and trainer.model.output_weights.ref() in {
      v.ref() for v in trainer.bert_vars}
  assert not {v.ref() for v in trainer.bert_vars} & {v.ref() for v in trainer.model.flow.trainable_variables}


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_weights(tiny, straight, tmp_path):
  from bert_flow_tf import loaders
  from bert_flow_tf import siamese
  from bert_flow_tf.data import order as order_lib
  model_dir, data_dir = tiny
  straight, straight_dir = straight
  resumed_dir = str(tmp_path / "resumed")
  first = siamese.run(tiny_config(model_dir, data_dir, resumed_dir, dupe_factor=2), stop_at_step=5)
  assert len(first["train"]["losses"]) == 5 and "export_dir" not in first
  second = siamese.run(tiny_config(model_dir, data_dir, resumed_dir, dupe_factor=2))
  config = tiny_config(model_dir, data_dir, resumed_dir)
  steps = order_lib.num_train_steps(48, config.train_batch_size, config.num_train_epochs)  # 6 steps
  # Killed after step 5: the last checkpoint is step 4, so step 5 is replayed.
  assert len(second["train"]["losses"]) == steps - 4
  np.testing.assert_allclose(second["train"]["losses"], straight["train"]["losses"][4:], rtol=1e-5)
  a = loaders.load_model(straight["export_dir"]).encoder
  b = loaders.load_model(second["export_dir"]).encoder
  for va, vb in zip(a.trainable_variables, b.trainable_variables):
    np.testing.assert_allclose(va.numpy(), vb.numpy(), rtol=1e-5, atol=1e-7)
  reader_a = tf.train.load_checkpoint(os.path.join(straight_dir, "checkpoints"))
  reader_b = tf.train.load_checkpoint(os.path.join(resumed_dir, "checkpoints"))
  names = [n for n in reader_a.get_variable_to_shape_map() if "flow" in n or "output_weights" in n]
  assert names
  for name in names:
    np.testing.assert_allclose(reader_a.get_tensor(name), reader_b.get_tensor(name), rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_eval_predict_and_export_roundtrip(tiny, tmp_path):
  from bert_flow_tf import loaders
  from bert_flow_tf import siamese
  from bert_flow_tf.embedding.embedder import SentenceEmbedder
  from bert_flow_tf import data as data_lib
  from tests.embedding.engine_vectors import engine_vectors
  model_dir, data_dir = tiny
  out_dir = tmp_path / "run"
  result = siamese.run(tiny_config(model_dir, data_dir, str(out_dir), flow=False, flow_loss=False,
                                   do_eval=True, do_predict=True))
  assert set(result["eval"]) == {"num_pairs", "accuracy", "eval_loss"}
  assert result["eval"]["num_pairs"] == 24
  assert json.loads((out_dir / "eval_results.json").read_text()) == result["eval"]
  # The dev metrics recomputed here: the exported encoder's vectors u, v and the checkpoint's classifier W give
  # logits [u, v, |u - v|] W^T; accuracy of their argmax and mean softmax cross-entropy against the gold labels.
  dev = data_lib.load_task("snli", data_dir).dev[0]
  embedder = SentenceEmbedder(loaders.load_model(result["export_dir"]), "avg", max_seq_length=16)
  u, v = engine_vectors(embedder, dev.sentences_a), engine_vectors(embedder, dev.sentences_b)
  reader = tf.train.load_checkpoint(str(out_dir / "checkpoints"))
  [name] = [n for n in reader.get_variable_to_shape_map()
            if "output_weights" in n and "OPTIMIZER_SLOT" not in n and n.endswith("VARIABLE_VALUE")]
  logits = np.concatenate([u, v, np.abs(u - v)], -1) @ reader.get_tensor(name).T   # [24, 3]
  log_probs = logits - scipy.special.logsumexp(logits, axis=-1, keepdims=True)
  assert result["eval"]["accuracy"] == pytest.approx(np.mean(logits.argmax(-1) == dev.labels), abs=1e-9)
  assert result["eval"]["eval_loss"] == pytest.approx(-np.mean(log_probs[np.arange(24), dev.labels]), rel=1e-4)
  cosines = np.array([float(x) for x in (out_dir / "test_results.tsv").read_text().split()])
  # The exported encoder reproduces the trained model's test cosines through the generic loader and encoder.
  test = data_lib.load_task("snli", data_dir).test[0]
  a, b = engine_vectors(embedder, test.sentences_a), engine_vectors(embedder, test.sentences_b)
  np.testing.assert_allclose(cosines, (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1),
                             atol=2e-6)
  pooled = siamese.run(tiny_config(model_dir, data_dir, str(out_dir), flow=False, flow_loss=False, do_train=False,
                                   do_predict=True, predict_pool=True))
  rows = [json.loads(line) for line in pathlib.Path(pooled["predictions"]).read_text().splitlines()]
  np.testing.assert_allclose(np.array([r["embedding_a"] for r in rows]), a, atol=2e-6)


@pytest.mark.slow
@pytest.mark.distributed
def test_distribution_matches_single_device(tiny, tmp_path, cpu_strategy):
  """Two logical CPUs under MirroredStrategy vs the default strategy: same losses and weights."""
  from bert_flow_tf import data as data_lib
  from bert_flow_tf import siamese
  model_dir, data_dir = tiny
  task = data_lib.load_task("snli", data_dir)
  runs = []
  for name, strategy in (("mirrored", cpu_strategy), ("default", tf.distribute.get_strategy())):
    config = tiny_config(model_dir, data_dir, str(tmp_path / name), dupe_factor=2, l2_penalty=0.01)
    trainer = siamese.Trainer(config, task, strategy, num_train_steps=6)
    initial = model_weights(trainer)
    history = trainer.train(task.dev + task.test)
    runs.append((strategy.num_replicas_in_sync, history, initial, model_weights(trainer)))
  (n_m, hist_m, init_m, final_m), (n_d, hist_d, _, final_d) = runs
  assert (n_m, n_d) == (2, 1)
  losses_m = np.array(hist_m["losses"]) + np.array(hist_m["flow_losses"])
  losses_d = np.array(hist_d["losses"]) + np.array(hist_d["flow_losses"])
  assert len(losses_m) == 6
  np.testing.assert_allclose(losses_m, losses_d, rtol=0, atol=1e-5)
  for k in final_m:
    np.testing.assert_allclose(final_m[k], final_d[k], rtol=0, atol=1e-5, err_msg=f"variable {k}")
  assert max(np.abs(final_m[k] - init_m[k]).max() for k in final_m) > 1e-3  # the weights did move


@pytest.mark.slow
def test_mixed_precision_trains_like_float32(tiny, straight, tmp_path):
  from bert_flow_tf import siamese
  model_dir, data_dir = tiny
  mixed = siamese.run(tiny_config(model_dir, data_dir, str(tmp_path / "mixed"), dupe_factor=2,
                                  use_mixed_precision=True))
  full, mixed = np.array(straight[0]["train"]["losses"]), np.array(mixed["train"]["losses"])
  assert len(full) == len(mixed) == 6
  # Measured (one-block tiny BERT, dupe_factor 2): max |mixed - float32| = 2.1e-4 over the 6 steps; float16 did
  # run (the losses are not identical).
  np.testing.assert_allclose(mixed, full, rtol=0, atol=5e-3)
  assert np.abs(mixed - full).max() > 0


@pytest.mark.slow
@pytest.mark.parametrize("l2_penalty", [0.0, 0.05])
def test_no_labels_leaves_what_no_loss_reaches_bit_identical(tiny, tmp_path, l2_penalty):
  """num_examples=0: the label loss is a constant, so the classifier gets no gradient and no weight decay; BERT
  is untouched too unless the L2 penalty (added after the zeroed loss, as the original) reaches it."""
  from bert_flow_tf import data as data_lib
  from bert_flow_tf import siamese
  model_dir, data_dir = tiny
  config = tiny_config(model_dir, data_dir, str(tmp_path), num_examples=0, l2_penalty=l2_penalty,
                       warmup_proportion=0.0, save_checkpoints_steps=100)
  task = data_lib.load_task("snli", data_dir)
  trainer = siamese.Trainer(config, task, tf.distribute.get_strategy(), num_train_steps=2)
  encoder_before = [v.numpy() for v in trainer.model.encoder.trainable_variables]
  classifier_before = trainer.model.output_weights.numpy()
  flow_before = [v.numpy() for v in trainer.model.flow.trainable_variables]
  history = trainer.train(task.dev)
  assert history["losses"][0] == 0.0 if l2_penalty == 0 else history["losses"][0] > 0
  np.testing.assert_array_equal(trainer.model.output_weights.numpy(), classifier_before)
  same = {v.name: np.array_equal(b, v.numpy())
          for b, v in zip(encoder_before, trainer.model.encoder.trainable_variables)}
  pooler = [name for name in same if "pooler" in name]
  assert len(pooler) == 2 and all(same[name] for name in pooler)  # avg pooling never reads the pooler
  assert all(same.values()) if l2_penalty == 0 else not any(same[n] for n in same if n not in pooler)
  assert not any(np.array_equal(b, v.numpy()) for b, v in zip(flow_before, trainer.model.flow.trainable_variables))
