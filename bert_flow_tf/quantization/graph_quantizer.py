"""The text model's quantized outputs in its graph: `GraphQuantizer`, given to `export.export_models(...,
quantizer=)`, adds one output per precision asked, "embeddings_<precision>", in `st_layouts.quantize_embeddings`'
layouts and with the same values (the same float32 subtraction and division, then floor and clip).

Legend: B = sentences, D = embedding width.
"""
import numpy as np
import tensorflow as tf

from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import graph_ops
from bert_flow_tf.quantization import st_layouts


def _check_int8_ranges(ranges, dim):
  ranges = None if ranges is None else np.asarray(ranges, np.float32)
  if ranges is None or ranges.shape != (2, dim):
    raise ValueError(f"int8 outputs need int8 ranges [2, {dim}] (a calibration's int8_ranges), got "
                     f"{None if ranges is None else list(ranges.shape)}")
  return ranges


class GraphQuantizer(tf.Module):
  """float32 [B, D] embeddings -> {"embeddings_<precision>": codes} for the precisions asked.

  Args:
    precisions: iterable of `st_layouts.PRECISIONS` other than "float32".
    ranges: float [2, D], needed for int8 and uint8.
    dim: int D.
  """

  def __init__(self, precisions, ranges, dim):
    super().__init__(name="quantizer")
    self.precisions = tuple(st_layouts.check_precision(p) for p in precisions)
    if "float32" in self.precisions or len(set(self.precisions)) != len(self.precisions):
      raise ValueError(f"export precisions are extra outputs beside the float32 embeddings, each once; got "
                       f"{list(precisions)}")
    self.lo = self.step = None
    if {"int8", "uint8"} & set(self.precisions):
      lo, step = corpus_codes.bucket_starts_and_widths(_check_int8_ranges(ranges, dim))
      self.lo = tf.Variable(lo, trainable=False, name="int8_lo")
      self.step = tf.Variable(step, trainable=False, name="int8_step")

  def __call__(self, x):
    out = {}
    for precision in self.precisions:
      if precision in ("int8", "uint8"):
        buckets = tf.where(self.step > 0, (x - self.lo) / self.step, tf.zeros_like(x))  # [B, D]
        # The floor bucket clipped to 0..255, minus 128 for int8, as st_layouts.quantize_embeddings.
        floor = tf.cast(tf.clip_by_value(tf.floor(buckets), 0., 255.), tf.int32)
        out[f"embeddings_{precision}"] = tf.cast(floor - 128, tf.int8) if precision == "int8" else tf.cast(
            floor, tf.uint8)
        continue
      buckets = tf.cast(graph_ops.pack_bits(x, 8), tf.int32)                                    # [B, ceil(D / 8)]
      signed = precision == "binary"
      out[f"embeddings_{precision}"] = tf.cast(buckets - 128, tf.int8) if signed else tf.cast(buckets, tf.uint8)
    return out
