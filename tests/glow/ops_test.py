"""Tests of the flow ops: exact inverses, log-dets against autodiff Jacobians, DDI, zero init."""
import inspect

import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from glow import actnorm
from glow import couplings
from glow import flow_layer
from glow import permutations
from glow import split

D = 8


def _randomize(layer, scale=0.3, seed=0):
  """Gives every weight random values so that zero-initialised parts are exercised too."""
  rng = np.random.default_rng(seed)
  for w in layer.trainable_weights:
    w.assign(w + scale * rng.standard_normal(w.shape).astype(np.float32))


def _make(kind):
  keras.utils.set_random_seed(0)  # the unseeded initializers draw from these: the same layer whatever ran before
  layers = {
      "actnorm_original": lambda: actnorm.ActNorm(init="original"),
      "actnorm_ddi": lambda: actnorm.ActNorm(init="ddi"),
      "reverse": permutations.ReversePermutation,
      "lu": lambda: permutations.InvertibleDense1x1(seed=3),
      "additive": lambda: couplings.AdditiveCoupling(width=16),
      "affine": lambda: couplings.AffineCoupling(width=16),
  }
  layer = layers[kind]()
  flow_layer.build_child(layer, [None, D])
  _randomize(layer)
  return layer


KINDS = ["actnorm_original", "actnorm_ddi", "reverse", "lu", "additive", "affine"]


@pytest.mark.parametrize("kind", KINDS)
def test_inverse_undoes_forward(kind):
  layer = _make(kind)
  x = tf.random.stateless_normal([5, D], seed=[1, 2])
  y, logdet = layer(x)
  x_back, inv_logdet = layer.inverse(y)
  assert y.shape == x.shape and logdet.shape == [5]
  np.testing.assert_allclose(x_back, x, atol=1e-5)
  np.testing.assert_allclose(inv_logdet, -logdet, atol=1e-5)
  assert np.abs(y - x).max() > 1e-2  # The op is not the identity.


@pytest.mark.parametrize("kind", KINDS)
def test_logdet_matches_autodiff_jacobian(kind):
  layer = _make(kind)
  x = tf.random.stateless_normal([3, D], seed=[3, 4])
  with tf.GradientTape() as tape:
    tape.watch(x)
    y, logdet = layer(x)
  jac = tape.batch_jacobian(y, x)  # [B, D, D]
  expected = np.linalg.slogdet(jac.numpy().astype(np.float64))[1]
  np.testing.assert_allclose(logdet, expected, atol=1e-4)


def test_actnorm_original_init_is_tf1_glorot_uniform():
  layer = actnorm.ActNorm(init="original")
  flow_layer.build_child(layer, [None, 768])
  limit = np.sqrt(6.0 / 769.0)
  for w in (layer.b, layer.logs):
    assert np.abs(w.numpy()).max() <= limit
    assert np.abs(w.numpy()).max() > 0.9 * limit
  assert not np.allclose(layer.b.numpy(), layer.logs.numpy())


def test_actnorm_ddi_standardizes_first_batch():
  x = 3.0 + 5.0 * tf.random.stateless_normal([64, D], seed=[5, 6])
  layer = actnorm.ActNorm(init="ddi")
  y, logdet = layer.data_init(x)
  np.testing.assert_allclose(tf.reduce_mean(y, 0), np.zeros(D), atol=1e-5)
  np.testing.assert_allclose(tf.math.reduce_std(y, 0), np.ones(D), atol=1e-4)
  np.testing.assert_allclose(logdet, -np.sum(np.log(np.std(x.numpy(), 0) + 1e-6)), rtol=1e-5)
  assert layer.degenerate_dims.size == 0


def test_actnorm_ddi_leaves_constant_dims_unscaled():
  x = tf.random.stateless_normal([64, D], seed=[7, 8]).numpy()
  x[:, 2] = 1e-33  # As all-MiniLM-L6-v2's final LayerNorm makes dims 127 and 223.
  x[:, 5] = 0.25 + 1e-9 * x[:, 4]
  layer = actnorm.ActNorm(init="ddi")
  y, logdet = layer.data_init(tf.constant(x))
  assert layer.degenerate_dims.tolist() == [2, 5]
  assert layer.logs.numpy()[[2, 5]].tolist() == [0.0, 0.0]
  assert np.isfinite(logdet).all() and np.abs(y.numpy()).max() < 10


@pytest.mark.parametrize("cls", [couplings.AdditiveCoupling, couplings.AffineCoupling])
def test_coupling_starts_as_identity_on_x2_shift(cls):
  layer = cls(width=16)
  flow_layer.build_child(layer, [None, D])
  x = tf.random.stateless_normal([4, D], seed=[9, 10])
  y, logdet = layer(x)
  if cls is couplings.AdditiveCoupling:
    np.testing.assert_allclose(y, x)
    np.testing.assert_allclose(logdet, np.zeros(4))
  else:  # Zero net output: shift 0, scale sigmoid(2).
    s = 1.0 / (1.0 + np.exp(-2.0))
    np.testing.assert_allclose(y[:, D // 2:], x[:, D // 2:] * s, rtol=1e-6)
    np.testing.assert_allclose(logdet, np.full(4, D // 2 * np.log(s)), rtol=1e-5)


def test_coupling_dropout_only_in_training():
  layer = couplings.AdditiveCoupling(width=16, dropout=0.5)
  flow_layer.build_child(layer, [None, D])
  _randomize(layer)
  x = tf.random.stateless_normal([4, D], seed=[11, 12])
  np.testing.assert_allclose(layer(x)[0], layer(x)[0])
  assert np.abs(layer(x, training=True)[0] - layer(x)[0]).max() > 1e-3


def test_split_and_odd_width():
  x = tf.reshape(tf.range(12, dtype=tf.float32), [2, 6])
  x1, z = split.Split()(x)
  np.testing.assert_allclose(x1, [[0, 1, 2], [6, 7, 8]])
  np.testing.assert_allclose(z, [[3, 4, 5], [9, 10, 11]])
  np.testing.assert_allclose(split.Split().inverse(x1, z), x)
  with pytest.raises(ValueError, match="D=7"):
    split.Split()(tf.zeros([2, 7]))


# Every constructor argument of each flow layer, each set to a value other than its default.
NON_DEFAULT_ARGS = {
    actnorm.ActNorm: dict(logscale_factor=2.0, init="ddi"),
    permutations.ReversePermutation: {},
    permutations.InvertibleDense1x1: dict(seed=3),
    couplings.CouplingNN: dict(width=16, out_dim=6, dropout=0.25, init="ddi"),
    couplings.AdditiveCoupling: dict(width=16, dropout=0.25, init="ddi"),
    couplings.AffineCoupling: dict(width=16, dropout=0.25, init="ddi"),
}


@pytest.mark.parametrize("cls", list(NON_DEFAULT_ARGS), ids=lambda c: c.__name__)
def test_get_config_holds_every_constructor_argument(cls):
  args = NON_DEFAULT_ARGS[cls]
  own_inits = [c.__init__ for c in cls.__mro__ if c.__module__.startswith("glow.") and "__init__" in vars(c)]
  params = {p for init in own_inits for p in inspect.signature(init).parameters} - {"self", "kwargs"}
  assert sorted(params) == sorted(args)  # the table above covers the whole signature
  config = cls(**args).get_config()
  assert {k: config.get(k) for k in params} == args  # a dropped argument would come back as its default
  assert cls.from_config(config).get_config() == config
