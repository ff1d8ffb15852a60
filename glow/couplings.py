"""The coupling flow ops (additive, affine) and their net (the original's `affine_coupling` and `conv_stack`).

Legend: B batch, D input width of the op, W coupling width.
"""
import tensorflow as tf
import tf_keras as keras

from glow import flow_layer
from glow.actnorm import ActNorm


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
    flow_layer.build_child(self.actnorm1, [None, self.width])
    self.w2 = self.add_weight("W_2", shape=[self.width, self.width], initializer=normal())
    self.actnorm2 = ActNorm(init=self.init, name="actnorm_2")
    flow_layer.build_child(self.actnorm2, [None, self.width])
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


class _Coupling(flow_layer.FlowLayer):
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
    flow_layer.check_even(type(self).__name__, dim)
    self.nn = CouplingNN(self.width, self._nn_out_dim(dim), self.dropout, self.init, name="nn")
    flow_layer.build_child(self.nn, [None, dim // 2])
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
