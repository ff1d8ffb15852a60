"""The permutation flow ops: a fixed reversal of the dims, or the LU-parametrised invertible 1x1 (the original's
`"permutation": true / false`).

Legend: B batch, D width.
"""
import numpy as np
import scipy.linalg
import tensorflow as tf
import tf_keras as keras

from glow import flow_layer


class ReversePermutation(flow_layer.FlowLayer):
  """Fixed reversal of the D dims, y[:, i] = x[:, D - 1 - i] (the original's `"permutation": true`).

  The original multiplies by the anti-diagonal matrix (a non-trainable variable); reversing the
  axis is the same map without the matmul. log|det| = 0.
  """

  def call(self, x, training=False):
    return tf.reverse(x, axis=[-1]), tf.zeros(tf.shape(x)[:1], x.dtype)

  def inverse(self, y):
    return tf.reverse(y, axis=[-1]), tf.zeros(tf.shape(y)[:1], y.dtype)


class InvertibleDense1x1(flow_layer.FlowLayer):
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
    return tf.matmul(x, self.weight_matrix()), flow_layer.per_example(tf.reduce_sum(self.log_s), x)

  def inverse(self, y):
    x = tf.matmul(y, tf.linalg.inv(self.weight_matrix()))
    return x, flow_layer.per_example(-tf.reduce_sum(self.log_s), y)

  def get_config(self):
    return dict(super().get_config(), seed=self.seed)
