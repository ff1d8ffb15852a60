"""A fitted Glow applied to vectors: the latent z of float32 [N, D], on one trace per kind of Glow.

Legend: N vectors, D vector width.
"""
import collections
import threading

import numpy as np
import tensorflow as tf
import tf_keras as keras

from glow import training
from glow.model import Glow

MAX_KEPT = 4  # kinds of Glow (config, width, init, dtype policy) whose traced inference is kept


class _Twin:
  """One Glow of a kind and its traced inference function `fn` (z only, no dropout); `transform` runs any Glow of that
  kind on it with that Glow's variables copied in, under `lock` (one flow at a time)."""

  def __init__(self, glow_model):
    self.glow = Glow(glow_model.config, glow_model.dim, init=glow_model.init)
    self.lock = threading.Lock()
    self.fn = tf.function(lambda x: self.glow(x, training=False)[0],
                          input_signature=[tf.TensorSpec([None, glow_model.dim], tf.float32)], autograph=False)


_TWINS = collections.OrderedDict()  # kind -> _Twin, the most recently used last
_TWINS_LOCK = threading.Lock()


def _twin(glow_model):
  key = repr((training.glow_settings(glow_model), keras.mixed_precision.global_policy().name))
  with _TWINS_LOCK:
    if key not in _TWINS:
      _TWINS[key] = _Twin(glow_model)
      while len(_TWINS) > MAX_KEPT:
        _TWINS.popitem(last=False)
    _TWINS.move_to_end(key)
    return _TWINS[key]


def transform(glow_model, vectors, batch_size=1024):
  """The flow's latent z for float32 [N, D] vectors, in batches, without dropout. Returns np.float32 [N, D].

  Runs a traced function, one per kind of Glow (`glow.training.glow_settings`), into which each call copies the
  flow's variables: the same graph and values as a trace of the flow itself, so the same numbers, without a
  trace per fitted flow (seconds each). A call on a few vectors costs about a millisecond or two, not the ~85 ms
  of the Keras model's eager ops."""
  twin = _twin(glow_model)
  with twin.lock:
    training.copy_variables(glow_model, twin.glow)
    out = [twin.fn(tf.constant(vectors[i:i + batch_size], tf.float32)).numpy()
           for i in range(0, len(vectors), batch_size)]
  return np.concatenate(out) if out else np.zeros_like(vectors, np.float32)
