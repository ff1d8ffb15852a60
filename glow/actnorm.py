"""ActNorm: the per-dimension affine flow op (the original's `actnorm`), with its two initialisations.

Legend: B batch, D width.
"""
import math

import numpy as np
import tensorflow as tf
import tf_keras as keras

from glow import flow_layer
from glow.config import ACTNORM_INITS
_DDI_EPS = 1e-6  # The original's guard in log(1 / (std + eps)).
_DEGENERATE_REL_STD = 1e-3  # A dim whose std is below this times the median std is "constant".


def _glorot_limit(dim):
  """TF1's default glorot-uniform limit for the original's [1, 1, 1, dim] actnorm variables.

  fan_in = 1 * 1 * 1 = 1 and fan_out = dim, so the limit is sqrt(6 / (1 + dim)).
  """
  return math.sqrt(6.0 / (1.0 + dim))


class ActNorm(flow_layer.FlowLayer):
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
    return y, flow_layer.per_example(tf.reduce_sum(logs), x)

  def inverse(self, y):
    logs = self.logs * self.logscale_factor  # [D]
    x = y * tf.exp(-logs) - self.b
    return x, flow_layer.per_example(-tf.reduce_sum(logs), y)

  def data_init(self, x):
    if not self.built:
      flow_layer.build_child(self, x.shape)
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
