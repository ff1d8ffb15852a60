"""The contract of a Glow flow op over [B, D] vectors, and the helpers the ops share.

Ported from BERT-flow's `flow/glow_ops_1x1.py` (itself tensor2tensor's `glow_ops.py`). The original
reshapes [B, D] to [B, 1, 1, D]; a 1x1 conv on that is a dense layer, which is what we use. The ops:
`actnorm` (ActNorm), `permutations` (the reversal and the LU 1x1), `couplings` (additive, affine, their net)
and `split` (Split, the standard-normal prior).

Every bijective op is a Keras layer with
  call(x, training=False) -> (y, logdet)   and   inverse(y) -> (x, logdet),
where logdet [B] is log|det dy/dx| per example (the inverse returns its negation), and
  data_init(x) -> (y, logdet)
which runs the forward pass while setting every ActNorm from the data it sees (the original's
`init=True` tower). `Split` factors out half of the vector instead (see its docstring).

Legend: B batch, D input width of the op.
"""
import tensorflow as tf
import tf_keras as keras


def per_example(scalar, x):
  """Broadcasts a scalar log-det to shape [B] of x."""
  return tf.fill(tf.shape(x)[:1], scalar)


def build_child(layer, input_shape):
  """Builds a sublayer's weights now, under its own name scope (e.g. "glow/level_0_step_0/actnorm/b")."""
  with tf.name_scope(layer.name):
    layer.build(tf.TensorShape(input_shape))


def check_even(layer, dim):
  """Raises ValueError naming `layer` when the width `dim` is odd."""
  if dim % 2:
    raise ValueError(f"{layer} needs an even width to halve, got D={dim}")


class FlowLayer(keras.layers.Layer):
  """Base of the bijective ops: data_init defaults to a plain forward pass."""

  def data_init(self, x):
    """Forward pass [B, D] -> ([B, D], [B]) that also sets any ActNorm inside from x."""
    return self(x, training=False)

  def inverse(self, y):
    raise NotImplementedError


