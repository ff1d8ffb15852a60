"""The faithful flow fit (BERT with dropout every step) under a tf.distribute strategy: same fit as one device."""
import dataclasses
import itertools

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from bert_flow_tf import loaders
import glow
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from tests import tiny
from tests.embedding.tiny_model import SENTENCES, VOCAB

pytestmark = pytest.mark.distributed

# 23 pairs; batches of 7 leave a padding row on 2 replicas; max_seq_length 32 gives two static lengths (16, 32).
PAIRS_A, PAIRS_B = SENTENCES, SENTENCES[5:] + SENTENCES[:5]
MAX_SEQ_LENGTH = 32


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
  path = tmp_path_factory.mktemp("faithful")
  (path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
  return path


@pytest.fixture
def fit_config(tmp_path):
  path = tiny.write_glow_config(tmp_path / "tiny_glow.json")
  return flow_fitting.FlowFitConfig(flow_model_config=path, learning_rate=1e-2, num_train_epochs=2.0,
                                batch_size=7, save_checkpoints_steps=2, log_every_steps=2)


def _embedder(folder, strategy=None, dropout=0.0, max_seq_length=MAX_SEQ_LENGTH, **kwargs):
  """A seeded tiny random BERT (H=16, L=2) with the given dropout, its variables made under `strategy`."""
  config = tiny.bert_config(len(VOCAB), hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
  keras.utils.set_random_seed(0)
  reference = BertEncoder(config).build_variables().get_weights()
  with (strategy or tf.distribute.get_strategy()).scope():
    encoder = BertEncoder(config).build_variables()
    encoder.set_weights(reference)
  model = loaders.LoadedModel(encoder, 2, 16, str(folder / "vocab.txt"), True, str(folder), "hf", config)
  return SentenceEmbedder(model, "last-avg", max_seq_length, strategy=strategy, **kwargs)


def _pairs(embedder):
  return pair_sources.FaithfulPairs(embedder, PAIRS_A, PAIRS_B)


class _Crash(Exception):
  pass


class _CrashingPairs(pair_sources.FaithfulPairs):
  """Raises before the `crash_at`-th step, like a process killed mid-fit."""

  def __init__(self, embedder, crash_at):
    super().__init__(embedder, PAIRS_A, PAIRS_B)
    self.crash_at = crash_at

  def make_train_step(self, flow, optimizer, batch_size):
    train_step, calls = super().make_train_step(flow, optimizer, batch_size), itertools.count(1)

    def crashing(idx):
      if next(calls) == self.crash_at:
        raise _Crash()
      return train_step(idx)

    return crashing


def _assert_same_fit(got, want, flow_got, flow_want, keys=("first_loss", "last_loss", "mean_loss_last_10pct")):
  assert got["num_steps"] == want["num_steps"]
  for key in keys:
    np.testing.assert_allclose(got[key], want[key], rtol=1e-5, err_msg=key)
  assert [v.name for v in flow_got.variables] == [v.name for v in flow_want.variables]
  for a, b in zip(flow_got.variables, flow_want.variables):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5, err_msg=a.name)


def _one_device_fit(embedder, fit_config, flow_dir):
  pairs = _pairs(embedder)
  assert pairs.on_host
  return flow_fitting.fit_flow(pairs, fit_config, flow_dir)


@pytest.mark.slow  # each fit traces BERT and the Glow into a mirrored train step
def test_mirrored_fit_resumes_and_equals_one_device_fit_and_loads_without_the_strategy(folder, fit_config,
                                                                                        tmp_path, cpu_strategy):
  flow_want, want = _one_device_fit(_embedder(folder), fit_config, str(tmp_path / "one_device"))
  embedder = _embedder(folder, cpu_strategy)
  with pytest.raises(_Crash):
    flow_fitting.fit_flow(_CrashingPairs(embedder, crash_at=4), fit_config, str(tmp_path / "mirrored"))
  assert tf.train.latest_checkpoint(str(tmp_path / "mirrored")).endswith("ckpt-2")
  pairs = _pairs(embedder)
  assert not pairs.on_host and pairs.strategy.num_replicas_in_sync == 2
  flow, summary = flow_fitting.fit_flow(pairs, fit_config, str(tmp_path / "mirrored"))
  assert summary["num_steps"] == 6 and summary["steps_done"] == 6
  _assert_same_fit(summary, want, flow, flow_want, keys=("last_loss",))
  loaded = fitted_flow.load_glow(str(tmp_path / "mirrored"))
  x = np.random.default_rng(0).normal(size=(5, 16)).astype(np.float32)
  np.testing.assert_allclose(glow.transform(loaded, x), glow.transform(flow_want, x), atol=1e-4)


@pytest.mark.slow  # each fit traces BERT and the Glow into a mirrored train step
def test_static_shapes_and_xla_under_mirrored_equal_one_device(folder, fit_config, tmp_path, cpu_strategy):
  # max_seq_length 16: one static length, so XLA compiles once.
  fit_config = dataclasses.replace(fit_config, num_train_epochs=1.0)
  flow_want, want = _one_device_fit(_embedder(folder, max_seq_length=16), fit_config, str(tmp_path / "one_device"))
  pairs = _pairs(_embedder(folder, cpu_strategy, max_seq_length=16, use_xla=True))
  assert pairs.embedder.static_shapes and not pairs.on_host
  flow, summary = flow_fitting.fit_flow(pairs, fit_config, str(tmp_path / "xla"))
  assert summary["num_steps"] == 3
  _assert_same_fit(summary, want, flow, flow_want)


@pytest.mark.slow  # each fit traces BERT and the Glow into a mirrored train step
def test_mirrored_fit_with_dropout_runs_and_its_loss_falls(folder, fit_config, tmp_path, cpu_strategy):
  fit_config = dataclasses.replace(fit_config, num_train_epochs=4.0, batch_size=8, save_checkpoints_steps=100)
  # max_seq_length 16: one padded length, so one trace (the first test covers two lengths under the strategy).
  pairs = _pairs(_embedder(folder, cpu_strategy, dropout=0.1, max_seq_length=16))
  flow, summary = flow_fitting.fit_flow(pairs, fit_config, str(tmp_path / "dropout"))
  assert summary["num_steps"] == 11 and summary["complete"]
  assert np.isfinite(summary["last_loss"]) and summary["mean_loss_last_10pct"] < 0.5 * summary["first_loss"]
  assert all(np.isfinite(v.numpy()).all() for v in flow.trainable_variables)
