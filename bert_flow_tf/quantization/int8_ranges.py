"""Int8 ranges fitted once on a calibration's own output and saved with it (`encode(precision="int8")` quantizes
the calibrated vectors with them: `sentence_codes`).

sentence-transformers' int8 layout (`st_layouts.quantize_embeddings`) cuts each dimension's range [lo, hi] into
256 buckets. Its default range is the min and max of the vectors at hand; on the calibrated vectors here it is
fitted once, by the "gaussian" rule:

  lo, hi = mean -+ CLIP_SIGMAS * std     per dimension, over the calibration's fit vectors after the calibration

A flow and whitening map vectors to (roughly) N(0, I). For a normal dimension, 256 equal buckets over
mean +- 3.9 std give the least mean squared error (per unit variance, with each bucket read back at its middle:
8.94e-5 at 3.8, 8.78e-5 at 3.9, 8.82e-5 at 4.0, 1.28e-4 at 5). The rule is fixed by that alone, not tuned on any
score. The min and max instead follow the most extreme sentence: a range wider than needed in heavy-tailed
dimensions (coarse buckets), and off-centre (so 0 lands off bucket 0 and every code carries an offset, which moves
the cosine of the codes).

A flow's output is its latent turned to its principal axes (`truncation`), whose variances fall from the first axis
to the last by design. Codes read as integers weigh every dimension by 1 / its bucket width, so per-dimension widths
would weigh the low-variance axes up and move the cosine of the codes away from the vectors'. Its ranges are the
gaussian rule with one width for every axis (`one_width_ranges`):

  lo, hi = mean -+ CLIP_SIGMAS * the largest std     each axis centred on its mean, all as wide

so its codes are the centred vectors scaled alike in every dimension, and the first axis is clipped as the gaussian
rule clips it. (Whitening's output has unit variance in every dimension on its fit vectors: both rules agree there.)

In a calibration folder: RANGES_FILE, float32 [2, D'] (row 0 the lows, row 1 the highs); a folder without it (a
calibration saved before ranges were fitted) loads with no ranges.

Legend: N = fit vectors, D' = the calibrated width.
"""
import os

import numpy as np

from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

CLIP_SIGMAS = 3.9
RANGES_FILE = "int8_ranges.npy"
BLOCK_ROWS = 8192  # vectors calibrated at a time while the ranges are fitted


class _Moments:
  """Per-dimension count, mean and sum of squared deviations, merged block by block (Chan et al.), in float64."""

  def __init__(self):
    self.n, self.mean, self.m2 = 0, None, None

  def add(self, x):
    x = np.asarray(x, np.float64)
    n, mean = len(x), x.mean(axis=0)
    m2 = ((x - mean) ** 2).sum(axis=0)
    if self.mean is None:
      self.n, self.mean, self.m2 = n, mean, m2
      return
    total = self.n + n
    delta = mean - self.mean
    self.m2 = self.m2 + m2 + delta ** 2 * self.n * n / total
    self.mean = self.mean + delta * n / total
    self.n = total


def fit_ranges(blocks):
  """The gaussian rule's ranges (see the module notes).

  Args:
    blocks: float [N, D'], or an iterable of float [R, D'] blocks (calibrated vectors, read a block at a time).

  Returns:
    np.float32 [2, D']: row 0 mean - CLIP_SIGMAS std, row 1 mean + CLIP_SIGMAS std (population std).
  """
  if isinstance(blocks, np.ndarray):
    blocks = [blocks]
  moments = _Moments()
  for block in blocks:
    if len(block):
      moments.add(block)
  if moments.n < 2:
    raise ValueError(f"int8 ranges are fitted on N >= 2 calibrated vectors, got {moments.n}")
  return gaussian_ranges(moments.mean, moments.m2 / moments.n)


def gaussian_ranges(mean, variances):
  """The gaussian rule: np.float32 [2, D'], row 0 mean - CLIP_SIGMAS std, row 1 mean + CLIP_SIGMAS std, from each
  dimension's mean float [D'] and population variance float [D']."""
  half = CLIP_SIGMAS * np.sqrt(np.asarray(variances, np.float64))
  mean = np.asarray(mean, np.float64)
  return np.stack([mean - half, mean + half]).astype(np.float32)


def one_width_ranges(mean, variances):
  """The gaussian rule with one width for every dimension (a flow's principal axes: see the module notes):
  np.float32 [2, D'], row 0 mean - CLIP_SIGMAS s, row 1 mean + CLIP_SIGMAS s, s the largest standard deviation,
  from each dimension's mean float [D'] and population variance float [D']."""
  variances = np.asarray(variances, np.float64)
  return gaussian_ranges(mean, np.full_like(variances, variances.max()))


def calibrated_blocks(transform, x):
  """Yields transform(block) for blocks of BLOCK_ROWS rows of x: float [N, D] -> float [R, D']; x may also be a
  `store_stream.StoreShards` (read a block at a time from the store)."""
  if hasattr(x, "blocks"):
    for index in range(len(x)):
      for _, block in x.blocks(index, BLOCK_ROWS):
        yield transform(block)
    return
  for start in range(0, len(x), BLOCK_ROWS):
    yield transform(x[start:start + BLOCK_ROWS])


def save(folder, ranges):
  """Writes ranges float [2, D'] to folder/RANGES_FILE (atomically)."""
  io_utils.write_npy(os.path.join(folder, RANGES_FILE), np.asarray(ranges, np.float32))


def load_ranges(folder):
  """np.float32 [2, D'] saved in `folder`, or None when it holds none; errors.UserError naming the file when it is
  not int8 ranges."""
  path = os.path.join(folder, RANGES_FILE)
  ranges = io_utils.read_npy(path, "int8 ranges")
  if ranges is None:
    return None
  if ranges.dtype != np.float32:
    raise errors.UserError(f"not int8 ranges (want float32), got {ranges.dtype}", path)
  return checked(ranges, path)


def checked(ranges, where, dim=None):
  """np.float32 [2, D'] of `ranges` (an array or nested lists, e.g. export_info.json's) when they are int8 ranges:
  finite, highs >= lows, and D' == dim when dim is given; else errors.UserError naming `where`."""
  try:
    array = np.asarray(ranges, np.float32)
  except (TypeError, ValueError):
    array = None
  if (array is None or array.ndim != 2 or len(array) != 2 or (dim is not None and array.shape[1] != dim) or
      not np.all(np.isfinite(array)) or not np.all(array[1] >= array[0])):
    want = "D" if dim is None else dim
    got = "not an array" if array is None else list(array.shape)
    raise errors.UserError(f"not int8 ranges (want finite float32 [2, {want}] with highs >= lows), got {got}", where)
  return array
