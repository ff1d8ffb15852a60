"""What the exported graphs chain after the pooling for a fitted calibration (`in_graph`): a flow's glow.Glow, a
`RotatedFlow` (a Glow whose output is turned to its principal axes), or an `Affine` (a baseline), each called as a
Glow is: `(output, logdet or None) = module(x)`.

Legend: B = batch size, D = the pooled width, D' = the calibrated width.
"""
import numpy as np
import tensorflow as tf

from bert_flow_tf.calibration import calibrator


class Affine(tf.Module):
  """y = (x - center) W + offset: a calibration of calibration.baselines (whitening(-k), SN, NATSV are all affine),
  chained by the SavedModels where a Glow would be, and called as a Glow is: `(y, None) = affine(x)`.

  Args:
    method: str, the baseline's name ("whitening", "whitening-256", ...).
    center: float [D].
    kernel: float [D, D'].
    offset: float [D'].
  """

  def __init__(self, method, center, kernel, offset):
    super().__init__(name="affine_calibration")
    self.method = method
    self.dim, self.output_dim = kernel.shape  # D (the input's width, as Glow.dim), D'
    self.center = tf.Variable(np.asarray(center, np.float32), trainable=False, name="center")
    self.kernel = tf.Variable(np.asarray(kernel, np.float32), trainable=False, name="kernel")
    self.offset = tf.Variable(np.asarray(offset, np.float32), trainable=False, name="offset")

  def __call__(self, x, training=False):
    """float32 [B, D] -> (float32 [B, D'], None)."""
    del training  # unused: no dropout
    return tf.matmul(x - self.center, self.kernel) + self.offset, None


class RotatedFlow(tf.Module):
  """A flow's Glow, then the principal axes its output is turned to (calibration.calibrator.FlowCalibration,
  quantization.truncation), called as a Glow is: `(z @ axes, logdet) = flow(x)`.

  Args:
    glow_model: glow.Glow over width D.
    axes: float [D, D], orthogonal.

  Attributes:
    config, dim, init: the Glow's (export_info.json).
  """

  def __init__(self, glow_model, axes):
    super().__init__(name="rotated_flow")
    self.glow = glow_model
    self.axes = tf.Variable(np.asarray(axes, np.float32), trainable=False, name="principal_axes")
    self.config, self.dim, self.init = glow_model.config, glow_model.dim, glow_model.init

  def __call__(self, x, training=False):
    """float32 [B, D] -> (float32 [B, D], the Glow's log-determinant)."""
    z, logdet = self.glow(x, training=training)
    return tf.matmul(z, self.axes), logdet


def in_graph(calibration):
  """What the exported graphs chain for a calibration.calibrator calibration: its glow.Glow (a flow; a RotatedFlow
  when it has principal axes), an Affine (a baseline), or None (no calibration)."""
  if calibration is None:
    return None
  if calibration.method == calibrator.FLOW:
    return calibration.glow if calibration.axes is None else RotatedFlow(calibration.glow, calibration.axes)
  return Affine(calibration.method, *calibration.affine())
