"""Two computations of the same float32 values compared in float32 steps (ULPs), and their codes.

Two runs of one formula round differently when the ops run in another order: a SavedModel's graph fuses and
reorders what eager Keras runs op by op, the kernels block their sums by the batch's shape, and the CPU's vector
width (AVX2, AVX-512) and thread count change the order again. Their results then differ by a few float32 steps of
the largest value in the sums, and a small element (a difference of large ones) by as many of those steps. So the
tolerance is a count of steps at the array's largest magnitude, not a fixed number: the flow's z reaches ~40 (one
step 3.8e-6), a unit vector's elements stay below 1 (one step <= 6e-8, so STEPS is ~1e-6 there).

Codes (int8, uint8, binary, ubinary) of such a vector are the same, except for a value within that tolerance of a
bucket's edge (0 for a sign bit): either neighbouring code is then right.

  assert_close(graph_vectors, eager_vectors)                       # float32 [n, D]
  assert_codes(graph_codes, eager_vectors, "int8", ranges)         # codes of another run of eager_vectors
"""
import numpy as np

from bert_flow_tf.quantization import st_layouts

# Observed on an AMD EPYC (Zen 5): 1 step between the graph and eager flow, up to 4 between BERT batch shapes.
STEPS = 16


def tolerance(desired, steps=STEPS):
  """float: `steps` float32 steps at max|desired|."""
  return steps * float(np.spacing(np.float32(np.max(np.abs(desired), initial=0.))))


def assert_close(actual, desired, steps=STEPS, err_msg=""):
  """Every |actual - desired| <= `steps` float32 steps at max|desired| (arrays of one shape)."""
  np.testing.assert_allclose(actual, desired, rtol=0, atol=tolerance(desired, steps), err_msg=err_msg)


def _bits(codes, precision):
  """The sign bits uint8 [n, 8 * bytes] of binary (int8, byte - 128) or ubinary (uint8) codes."""
  packed = (np.asarray(codes).astype(np.int16) + 128).astype(np.uint8) if precision == "binary" else codes
  return np.unpackbits(packed, axis=-1)


def assert_codes(codes, floats, precision, ranges=None, steps=STEPS, err_msg=""):
  """`codes` [n, k] (binary: [n, ceil(k / 8)]) are st_layouts.quantize_embeddings(floats', precision, ranges) for a
  floats' within `steps` steps of `floats` (float32 [n, k]; ranges float [2, k] for int8 and uint8): equal to the
  codes of `floats` except next to a bucket's edge, where the neighbouring code passes too."""
  tol = np.float32(tolerance(floats, steps))
  floats = np.asarray(floats, np.float32)
  want = st_layouts.quantize_embeddings(floats, precision, ranges=ranges)
  low, high = (st_layouts.quantize_embeddings(floats + sign * tol, precision, ranges=ranges) for sign in (-1, 1))
  got = np.asarray(codes)
  if precision in ("binary", "ubinary"):  # each sign bit moves alone; a byte does not order them
    got, want, low, high = (_bits(c, precision) for c in (got, want, low, high))
  np.testing.assert_array_equal(got, np.where((low <= got) & (got <= high), got, want), err_msg=err_msg)
