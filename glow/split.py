"""Split (the original's `split`) and the standard-normal prior of every latent.

Legend: B batch, D input width.
"""
import math

import tensorflow as tf
import tf_keras as keras

from glow import flow_layer


class Split(keras.layers.Layer):
  """Factors out the second half of x under a standard-normal prior (the original's `split`).

  Forward: x [B, D] -> x1 [B, D/2] (goes on to the next level), z [B, D/2] (the split-off latent,
  x2 itself: the original's prior on it has mean 0 and scale 1, so eps = (x2 - 0) / 1 = x2). Inverse:
  (x1, z) -> x = [x1, z]. Every prior is N(0, I), so the model scores all latents at once
  (`Glow.latent_nll`: log N(z; 0, I) of the concatenated z is the sum of the per-split terms).
  """

  def build(self, input_shape):
    flow_layer.check_even("Split", int(input_shape[-1]))
    super().build(input_shape)

  def call(self, x):
    return tuple(tf.split(x, 2, axis=-1))

  def inverse(self, x1, z):
    return tf.concat([x1, z], -1)


def standard_normal_logp(z):
  """log N(z; 0, I) in nats, summed over the last axis: [B, D] -> [B]."""
  return -0.5 * tf.reduce_sum(tf.square(z) + math.log(2.0 * math.pi), axis=-1)
