"""Tests of the Glow model: every config inverts exactly, log-det, sampling, nll, DDI, checkpoints."""
import dataclasses
import math

import numpy as np
import pytest
import tensorflow as tf

from glow import AdamWeightDecay, Glow, GlowConfig
from glow.config import config_names
from glow.training import make_train_step

D = 64


def _x(batch=16, dim=D, seed=0):
  return tf.random.stateless_normal([batch, dim], seed=[seed, 1]) * 0.5 + 0.1


def _randomize(flow, scale=0.03):
  rng = np.random.default_rng(0)
  for w in flow.trainable_weights:
    w.assign(w + scale * rng.standard_normal(w.shape).astype(np.float32))


@pytest.mark.parametrize("init", ["original", "ddi"])
@pytest.mark.parametrize("name", config_names())
def test_every_config_inverts(name, init):
  flow = Glow.from_config(name, dim=D, init=init)
  x = _x()
  flow.data_init(x)
  z, logdet = flow(x)
  assert z.shape == [16, D] and logdet.shape == [16]
  np.testing.assert_allclose(flow.inverse(z), x, atol=1e-4)


@pytest.mark.parametrize("variant", [{}, {"coupling": "affine", "permutation": False}])
def test_logdet_matches_autodiff_jacobian(variant):
  config = dataclasses.replace(GlowConfig.load("config_l2_d2_w32"), **variant)
  flow = Glow(config, dim=8, init="ddi", seed=1)
  flow.data_init(_x(batch=256, dim=8, seed=3))
  _randomize(flow)
  x = _x(batch=4, dim=8)
  with tf.GradientTape() as tape:
    tape.watch(x)
    z, logdet = flow(x)
  jac = tape.batch_jacobian(z, x).numpy().astype(np.float64)  # [B, D, D]
  np.testing.assert_allclose(logdet, np.linalg.slogdet(jac)[1], atol=1e-4)
  np.testing.assert_allclose(flow.inverse(z), x, atol=1e-5)


def test_latent_is_split_halves_then_top():
  config = GlowConfig.load("config_l3_d2_w32")
  flow = Glow(config, dim=16)
  x = _x(dim=16)
  h = x
  for step in flow.levels[0]:
    h, _ = step(h)
  z, _ = flow(x)
  np.testing.assert_allclose(z[:, :8], h[:, 8:], atol=1e-6)  # The first split-off half leads.


def test_sampling_from_the_prior():
  flow = Glow.from_config("config_l2_d3_w32", dim=D, init="ddi")
  flow.data_init(_x(batch=64))
  z = tf.random.stateless_normal([32, D], seed=[2, 3])
  x = flow.inverse(z)
  assert x.shape == [32, D] and np.isfinite(x.numpy()).all()
  np.testing.assert_allclose(flow(x)[0], z, atol=1e-4)


def test_nll_is_bits_per_dim_of_the_original_objective():
  flow = Glow.from_config("config_l2_d3_w32", dim=D)
  x = _x()
  z, logdet = flow(x)
  logp = -0.5 * np.sum(z.numpy() ** 2 + math.log(2 * math.pi), -1)
  expected = -(logdet.numpy() + logp) / (D * math.log(2.0))
  np.testing.assert_allclose(flow.nll(x), expected, rtol=1e-5)
  np.testing.assert_allclose(flow.nll(x, unit="nats"), expected * math.log(2.0), rtol=1e-5)
  with pytest.raises(ValueError, match="'bits/dim'"):
    flow.nll(x, unit="bits/dim")


def test_dim_that_cannot_be_halved_fails_clearly():
  with pytest.raises(ValueError, match="dim=772 .*2\\*\\*n_levels=8"):
    Glow.from_config("config_l3_d3_w32", dim=772)
  Glow.from_config("config_l2_d3_w32", dim=772)  # 772 = 4 * 193 is fine for two levels.


def test_ddi_runs_once_and_not_again_after_restore(tmp_path):
  flow = Glow.from_config("config_l2_d2_w32", dim=D, init="ddi")
  assert not flow.initialized.numpy()
  with pytest.raises(ValueError, match="data_init"):
    make_train_step(flow, AdamWeightDecay())
  x = _x(batch=128)
  assert flow.data_init(x)
  z = flow(x)[0].numpy()
  np.testing.assert_allclose(z[:, :D // 2].std(0), np.ones(D // 2), rtol=0.35)
  assert not flow.data_init(_x(batch=128, seed=5) * 10.0)  # A second call changes nothing.
  np.testing.assert_allclose(flow(x)[0], z)
  path = tf.train.Checkpoint(flow=flow).save(str(tmp_path / "ckpt"))

  restored = Glow.from_config("config_l2_d2_w32", dim=D, init="ddi")
  tf.train.Checkpoint(flow=restored).restore(path).assert_consumed()
  assert restored.initialized.numpy()
  assert not restored.data_init(_x(batch=128, seed=7) * 10.0)
  np.testing.assert_allclose(restored(x)[0], z, atol=1e-6)


def test_ddi_on_constant_dims_stays_finite_through_training():
  x = _x(batch=256).numpy()
  x[:, 5] = 1e-33
  x[:, 40] = -0.3
  flow = Glow.from_config("config_l2_d3_w32", dim=D, init="ddi")
  flow.data_init(x)
  step = make_train_step(flow, AdamWeightDecay(learning_rate=1e-3))
  losses = [float(step(x)) for _ in range(20)]
  assert np.isfinite(losses).all() and losses[-1] < losses[0]
  assert np.isfinite(flow(x)[0].numpy()).all()


def test_config_round_trip():
  flow = Glow.from_config("config_l3_d3_w16", dim=32, init="ddi", seed=4)
  clone = Glow.from_config(flow.get_config())
  assert clone.get_config() == flow.get_config()
  assert clone.config.coupling_width == 16 and clone.dim == 32 and clone.init == "ddi"
  assert len(clone.trainable_variables) == len(flow.trainable_variables) == 9 * 11
