"""Glow flow ops over [B, D] vectors, each with forward and inverse side by side.

Ported from BERT-flow's `flow/glow_ops_1x1.py` (itself tensor2tensor's `glow_ops.py`). The original
reshapes [B, D] to [B, 1, 1, D]; a 1x1 conv on that is a dense layer, which is what we use.

Every bijective op is a Keras layer with
  call(x, training=False) -> (y, logdet)   and   inverse(y) -> (x, logdet),
where logdet [B] is log|det dy/dx| per example (the inverse returns its negation), and
  data_init(x) -> (y, logdet)
which runs the forward pass while setting every ActNorm from the data it sees (the original's
`init=True` tower). `Split` factors out half of the vector instead (see its docstring).

Legend: B batch, D input width of the op, W coupling width.
"""
import math

import numpy as np
import scipy.linalg
import tensorflow as tf
import tf_keras as keras

ACTNORM_INITS = ("original", "ddi")
_DDI_EPS = 1e-6  # The original's guard in log(1 / (std + eps)).
_DEGENERATE_REL_STD = 1e-3  # A dim whose std is below this times the median std is "constant".


def _glorot_limit(dim):
  """TF1's default glorot-uniform limit for the original's [1, 1, 1, dim] actnorm variables.

  fan_in = 1 * 1 * 1 = 1 and fan_out = dim, so the limit is sqrt(6 / (1 + dim)).
  """
  return math.sqrt(6.0 / (1.0 + dim))


def _per_example(scalar, x):
  """Broadcasts a scalar log-det to shape [B] of x."""
  return tf.fill(tf.shape(x)[:1], scalar)


def build_child(layer, input_shape):
  """Builds a sublayer's weights now, under its own name scope (e.g. "glow/level_0_step_0/actnorm/b")."""
  with tf.name_scope(layer.name):
    layer.build(tf.TensorShape(input_shape))


def _check_even(layer, dim):
  if dim % 2:
    raise ValueError(f"{layer} needs an even width to halve, got D={dim}")


class FlowLayer(keras.layers.Layer):
  """Base of the bijective ops: data_init defaults to a plain forward pass."""

  def data_init(self, x):
    """Forward pass [B, D] -> ([B, D], [B]) that also sets any ActNorm inside from x."""
    return self(x, training=False)

  def inverse(self, y):
    raise NotImplementedError


class ActNorm(FlowLayer):
  """Per-dimension affine map y = (x + b) * exp(logscale_factor * logs).

  The original centers then scales (`actnorm_center`, `actnorm_scale`); logs is stored divided
  by `logscale_factor` (3), so Adam's steps on logs move the log-scale 3x faster.
  log|det| = logscale_factor * sum(logs), the same for every example.

  Initialisation (`init`):
    "original": what the original effectively ran. Its data-dependent-init hook is never
      registered, so b and logs keep TF1's default glorot-uniform init for their [1, 1, 1, D]
      shapes: U(-sqrt(6 / (1 + D)), +sqrt(6 / (1 + D))).
    "ddi": zeros (identity) until `data_init(x)` sets b = -mean(x) and
      logs = log(1 / (std(x) + 1e-6)) / logscale_factor per dim (the original's DDI formula),
      so the first batch comes out with zero mean and unit variance. Dims whose std is below
      1e-3 x the median std (near-constant inputs, e.g. all-MiniLM-L6-v2's dims 127 and 223) get
      logs = 0 instead: the formula's 1e6 scale there makes the first optimizer step overflow.
      Their indices are kept in `degenerate_dims` after `data_init`.

  Args:
    logscale_factor: float. Multiplier of the stored log-scale.
    init: str. "original" or "ddi" (see above).
  """

  def __init__(self, logscale_factor=3.0, init="original", **kwargs):
    super().__init__(**kwargs)
    if init not in ACTNORM_INITS:
      raise ValueError(f"init={init!r} is not supported; allowed: {list(ACTNORM_INITS)}")
    self.logscale_factor = logscale_factor
    self.init = init
    self.degenerate_dims = np.zeros([0], np.int64)

  def build(self, input_shape):
    dim = int(input_shape[-1])
    limit = _glorot_limit(dim)
    def initializer():
      # One instance per weight: an unseeded Keras initializer repeats its values when reused.
      return keras.initializers.RandomUniform(-limit, limit) if self.init == "original" else "zeros"
    self.b = self.add_weight("b", shape=[dim], initializer=initializer())  # [D]
    self.logs = self.add_weight("logs", shape=[dim], initializer=initializer())  # [D]
    super().build(input_shape)

  def call(self, x, training=False):
    logs = self.logs * self.logscale_factor  # [D]
    y = (x + self.b) * tf.exp(logs)
    return y, _per_example(tf.reduce_sum(logs), x)

  def inverse(self, y):
    logs = self.logs * self.logscale_factor  # [D]
    x = y * tf.exp(-logs) - self.b
    return x, _per_example(-tf.reduce_sum(logs), y)

  def data_init(self, x):
    if not self.built:
      build_child(self, x.shape)
    mean = tf.reduce_mean(x, axis=0)  # [D]
    std = tf.sqrt(tf.reduce_mean(tf.square(x - mean), axis=0))  # [D]
    median_std = np.median(std.numpy())
    degenerate = std <= _DEGENERATE_REL_STD * median_std  # [D] bool
    logs = tf.math.log(1.0 / (std + _DDI_EPS)) / self.logscale_factor
    self.b.assign(-mean)
    self.logs.assign(tf.where(degenerate, tf.zeros_like(logs), logs))
    self.degenerate_dims = np.flatnonzero(degenerate.numpy())
    return self(x, training=False)

  def get_config(self):
    return dict(super().get_config(), logscale_factor=self.logscale_factor, init=self.init)


class ReversePermutation(FlowLayer):
  """Fixed reversal of the D dims, y[:, i] = x[:, D - 1 - i] (the original's `"permutation": true`).

  The original multiplies by the anti-diagonal matrix (a non-trainable variable); reversing the
  axis is the same map without the matmul. log|det| = 0.
  """

  def call(self, x, training=False):
    return tf.reverse(x, axis=[-1]), tf.zeros(tf.shape(x)[:1], x.dtype)

  def inverse(self, y):
    return tf.reverse(y, axis=[-1]), tf.zeros(tf.shape(y)[:1], y.dtype)


class InvertibleDense1x1(FlowLayer):
  """LU-parametrised invertible 1x1 conv, y = x W (the original's `"permutation": false`).

  W = P L (U + diag(sign_s * exp(log_s))) with P a fixed permutation, L unit lower triangular,
  U strictly upper triangular; L, U and log_s train, P and sign_s are fixed. All start from the
  PLU decomposition of a random rotation (QR of a uniform [0, 1) matrix). log|det| = sum(log_s).

  Args:
    seed: int or None. Seed of the numpy generator that draws the rotation.
  """

  def __init__(self, seed=None, **kwargs):
    super().__init__(**kwargs)
    self.seed = seed

  def build(self, input_shape):
    dim = int(input_shape[-1])
    rng = np.random.default_rng(self.seed)
    rotation = scipy.linalg.qr(rng.random((dim, dim)))[0]
    p, lower, upper = scipy.linalg.lu(rotation)
    s = np.diag(upper)
    const = lambda v: keras.initializers.Constant(v.astype(np.float32))
    self.p = self.add_weight("P", shape=[dim, dim], initializer=const(p), trainable=False)
    self.l = self.add_weight("L", shape=[dim, dim], initializer=const(lower))
    self.sign_s = self.add_weight("sign_S", shape=[dim], initializer=const(np.sign(s)),
                                  trainable=False)
    self.log_s = self.add_weight("log_S", shape=[dim], initializer=const(np.log(np.abs(s))))
    self.u = self.add_weight("U", shape=[dim, dim], initializer=const(np.triu(upper, k=1)))
    self._lower_mask = tf.constant(np.tril(np.ones([dim, dim], np.float32), -1))  # [D, D]
    super().build(input_shape)

  def weight_matrix(self):
    """Returns W [D, D] = P L (U + diag(sign_s * exp(log_s)))."""
    dim = tf.shape(self.l)[0]
    lower = self.l * self._lower_mask + tf.eye(dim)
    upper = self.u * tf.transpose(self._lower_mask) + tf.linalg.diag(
        self.sign_s * tf.exp(self.log_s))
    return tf.matmul(self.p, tf.matmul(lower, upper))

  def call(self, x, training=False):
    return tf.matmul(x, self.weight_matrix()), _per_example(tf.reduce_sum(self.log_s), x)

  def inverse(self, y):
    x = tf.matmul(y, tf.linalg.inv(self.weight_matrix()))
    return x, _per_example(-tf.reduce_sum(self.log_s), y)

  def get_config(self):
    return dict(super().get_config(), seed=self.seed)


class CouplingNN(keras.layers.Layer):
  """The coupling net (the original's `conv_stack`), [B, D_in] -> [B, out_dim].

  dense(W, no bias, N(0, 0.05) init) -> ActNorm -> relu -> dropout
  -> dense(W, no bias, N(0, 0.05)) -> ActNorm -> relu -> dropout
  -> zero-initialised dense with bias b, times exp(3 * logs) (logs zero-initialised),
  so every coupling starts as the identity. Dropout is active only with training=True.

  Args:
    width: int. Hidden width W.
    out_dim: int. Output width.
    dropout: float. Dropout rate after each hidden layer.
    init: str. ActNorm init, "original" or "ddi".
  """

  def __init__(self, width, out_dim, dropout=0.0, init="original", **kwargs):
    super().__init__(**kwargs)
    self.width = width
    self.out_dim = out_dim
    self.dropout = dropout
    self.init = init

  def build(self, input_shape):
    in_dim = int(input_shape[-1])
    normal = lambda: keras.initializers.RandomNormal(stddev=0.05)  # One instance per weight.
    self.w1 = self.add_weight("W_1", shape=[in_dim, self.width], initializer=normal())
    self.actnorm1 = ActNorm(init=self.init, name="actnorm_1")
    build_child(self.actnorm1, [None, self.width])
    self.w2 = self.add_weight("W_2", shape=[self.width, self.width], initializer=normal())
    self.actnorm2 = ActNorm(init=self.init, name="actnorm_2")
    build_child(self.actnorm2, [None, self.width])
    self.w_out = self.add_weight("W_zeros", shape=[self.width, self.out_dim], initializer="zeros")
    self.b_out = self.add_weight("b_zeros", shape=[self.out_dim], initializer="zeros")
    self.logs_out = self.add_weight("logs_zeros", shape=[self.out_dim], initializer="zeros")
    self.drop = keras.layers.Dropout(self.dropout)
    super().build(input_shape)

  def _forward(self, x, training, ddi):
    norm1 = self.actnorm1.data_init if ddi else self.actnorm1
    norm2 = self.actnorm2.data_init if ddi else self.actnorm2
    h, _ = norm1(tf.matmul(x, self.w1))  # [B, W]
    h = self.drop(tf.nn.relu(h), training=training)
    h, _ = norm2(tf.matmul(h, self.w2))  # [B, W]
    h = self.drop(tf.nn.relu(h), training=training)
    return (tf.matmul(h, self.w_out) + self.b_out) * tf.exp(3.0 * self.logs_out)  # [B, out]

  def call(self, x, training=False):
    return self._forward(x, training, ddi=False)

  def data_init(self, x):
    """Forward pass that sets both ActNorms from the data; returns [B, out_dim]."""
    return self._forward(x, training=False, ddi=True)

  def get_config(self):
    return dict(super().get_config(), width=self.width, out_dim=self.out_dim,
                dropout=self.dropout, init=self.init)


class _Coupling(FlowLayer):
  """Shared parts of the couplings: x = [x1, x2] halves, x1 passes, x2 is changed by NN(x1)."""

  def __init__(self, width, dropout=0.0, init="original", **kwargs):
    super().__init__(**kwargs)
    self.width = width
    self.dropout = dropout
    self.init = init

  def _nn_out_dim(self, dim):
    raise NotImplementedError

  def build(self, input_shape):
    dim = int(input_shape[-1])
    _check_even(type(self).__name__, dim)
    self.nn = CouplingNN(self.width, self._nn_out_dim(dim), self.dropout, self.init, name="nn")
    build_child(self.nn, [None, dim // 2])
    super().build(input_shape)

  def get_config(self):
    return dict(super().get_config(), width=self.width, dropout=self.dropout, init=self.init)

  def call(self, x, training=False):
    return self._forward(x, training, ddi=False)

  def data_init(self, x):
    """The forward pass with data-dependent init of the coupling net's ActNorms."""
    return self._forward(x, training=False, ddi=True)


class AdditiveCoupling(_Coupling):
  """y = [x1, x2 + NN(x1)]; log|det| = 0 (the paper's choice).

  Args:
    width: int. Coupling-net hidden width W.
    dropout: float. Coupling-net dropout (training only).
    init: str. ActNorm init inside the net, "original" or "ddi".
  """

  def _nn_out_dim(self, dim):
    return dim // 2

  def _forward(self, x, training, ddi):
    x1, x2 = tf.split(x, 2, axis=-1)  # [B, D/2] each
    shift = self.nn.data_init(x1) if ddi else self.nn(x1, training=training)
    return tf.concat([x1, x2 + shift], -1), tf.zeros(tf.shape(x)[:1], x.dtype)

  def inverse(self, y):
    y1, y2 = tf.split(y, 2, axis=-1)
    return tf.concat([y1, y2 - self.nn(y1)], -1), tf.zeros(tf.shape(y)[:1], y.dtype)


class AffineCoupling(_Coupling):
  """y = [x1, (x2 + shift) * scale] with h = NN(x1), shift = h[:, 0::2], scale = sigmoid(h[:, 1::2] + 2).

  log|det| = sum(log scale) per example. The +2 makes the scale start near sigmoid(2) = 0.88.

  Args:
    width: int. Coupling-net hidden width W.
    dropout: float. Coupling-net dropout (training only).
    init: str. ActNorm init inside the net, "original" or "ddi".
  """

  def _nn_out_dim(self, dim):
    return dim

  def _shift_scale(self, h):
    return h[:, 0::2], tf.nn.sigmoid(h[:, 1::2] + 2.0)  # [B, D/2] each

  def _forward(self, x, training, ddi):
    x1, x2 = tf.split(x, 2, axis=-1)  # [B, D/2] each
    h = self.nn.data_init(x1) if ddi else self.nn(x1, training=training)  # [B, D]
    shift, scale = self._shift_scale(h)
    y2 = (x2 + shift) * scale
    return tf.concat([x1, y2], -1), tf.reduce_sum(tf.math.log(scale), axis=-1)

  def inverse(self, y):
    y1, y2 = tf.split(y, 2, axis=-1)
    shift, scale = self._shift_scale(self.nn(y1))
    x2 = y2 / scale - shift
    return tf.concat([y1, x2], -1), -tf.reduce_sum(tf.math.log(scale), axis=-1)


class Split(keras.layers.Layer):
  """Factors out the second half of x under a standard-normal prior (the original's `split`).

  Forward: x [B, D] -> x1 [B, D/2] (goes on to the next level), z [B, D/2] (the split-off latent,
  x2 itself: the original's prior on it has mean 0 and scale 1, so eps = (x2 - 0) / 1 = x2). Inverse:
  (x1, z) -> x = [x1, z]. Every prior is N(0, I), so the model scores all latents at once
  (`Glow.latent_nll`: log N(z; 0, I) of the concatenated z is the sum of the per-split terms).
  """

  def build(self, input_shape):
    _check_even("Split", int(input_shape[-1]))
    super().build(input_shape)

  def call(self, x):
    return tuple(tf.split(x, 2, axis=-1))

  def inverse(self, x1, z):
    return tf.concat([x1, z], -1)


def standard_normal_logp(z):
  """log N(z; 0, I) in nats, summed over the last axis: [B, D] -> [B]."""
  return -0.5 * tf.reduce_sum(tf.square(z) + math.log(2.0 * math.pi), axis=-1)
