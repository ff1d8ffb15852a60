"""Embedding quantization in sentence-transformers' layouts (`sentence_transformers.quantization.quantize_embeddings`).

  "float32"  np.float32 [n, D], unchanged.
  "uint8"    np.uint8 [n, D]: per dimension, 256 buckets between that dimension's min and max, floor((x - min) /
             step) with step = (max - min) / 255, clipped to 0..255.
  "int8"     np.int8 [n, D]: the uint8 bucket - 128.
  "ubinary"  np.uint8 [n, ceil(D / 8)]: np.packbits(x > 0) of each row (the first dimension is the high bit).
  "binary"   np.int8 [n, ceil(D / 8)]: the ubinary byte minus 128.

The min and max come from `ranges` ([2, D]: row 0 the minima, row 1 the maxima), else from
`calibration_embeddings`, else from the embeddings themselves (unstable under 100 rows: a warning says so).

Where a value falls outside the ranges (vectors quantized with ranges fitted on others) it is clipped to the end
bucket, as sentence-transformers 6 clips; a dimension whose min equals its max maps to bucket 0 (sentence-transformers
takes a step of 1 there, the same bucket for values inside the range). The bits of a row are packed per row, so D need not be a
multiple of 8 (sentence-transformers packs the flattened matrix: the same bytes when 8 divides D).

Legend: n = vectors, D = width.
"""
import numpy as np
from absl import logging

PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")
_BUCKETS = 255  # steps between min and max: 256 buckets


def check_precision(precision):
  """Returns `precision` if it is one of PRECISIONS, else raises ValueError naming the allowed ones."""
  if precision not in PRECISIONS:
    raise ValueError(f"precision {precision!r} is not supported; use one of {', '.join(PRECISIONS)}")
  return precision


def quantize_embeddings(embeddings, precision, ranges=None, calibration_embeddings=None):
  """Quantizes float embeddings to `precision` (see the module notes for each layout).

  Args:
    embeddings: float [n, D] (an array, a list of [D] vectors, or a tf.Tensor).
    precision: str, one of PRECISIONS.
    ranges: float [2, D] or None, the per-dimension minima (row 0) and maxima (row 1) for int8/uint8.
    calibration_embeddings: float [m, D] or None, vectors the ranges are taken from when `ranges` is None.

  Returns:
    np.ndarray [n, D] (float32, int8, uint8) or [n, ceil(D / 8)] (binary: int8, ubinary: uint8).

  Raises:
    ValueError: an unknown precision, integer embeddings, or ranges of another width.
  """
  check_precision(precision)
  embeddings = np.asarray(embeddings)
  if not np.issubdtype(embeddings.dtype, np.floating):
    raise ValueError(f"embeddings to quantize must be float, got {embeddings.dtype}")
  if embeddings.ndim != 2:
    raise ValueError(f"embeddings to quantize must be [n, D], got shape {embeddings.shape}")
  if precision == "float32":
    return embeddings.astype(np.float32)
  if precision in ("binary", "ubinary"):
    packed = np.packbits(embeddings > 0, axis=-1)                                 # uint8 [n, ceil(D / 8)]
    return (packed.astype(np.int16) - 128).astype(np.int8) if precision == "binary" else packed
  ranges = _ranges(embeddings, precision, ranges, calibration_embeddings)
  starts = ranges[0]
  steps = (ranges[1] - ranges[0]) / _BUCKETS
  with np.errstate(divide="ignore", invalid="ignore"):                          # in the inputs' dtype, as ST
    buckets = np.where(steps > 0, (embeddings - starts) / steps, 0)              # [n, D], 0..255 inside the ranges
  buckets = np.clip(np.floor(buckets), 0, _BUCKETS)
  return buckets.astype(np.uint8) if precision == "uint8" else (buckets - 128).astype(np.int8)


def _ranges(embeddings, precision, ranges, calibration_embeddings):
  """float [2, D]: the given ranges, or the min and max of the calibration embeddings, or of the embeddings."""
  if ranges is None:
    source = embeddings if calibration_embeddings is None else np.asarray(calibration_embeddings)
    if calibration_embeddings is None and len(embeddings) < 100:
      logging.warning("computing %s quantization buckets from %d embeddings; pass ranges or "
                      "calibration_embeddings computed from more for stable buckets", precision, len(embeddings))
    ranges = min_max(source)
  ranges = np.asarray(ranges)
  if ranges.shape != (2, embeddings.shape[1]):
    raise ValueError(f"ranges must be [2, {embeddings.shape[1]}] (min and max per dimension), got "
                     f"{list(ranges.shape)}")
  return ranges


def min_max(vectors):
  """sentence-transformers' ranges of float vectors [m, D]: [2, D], each dimension's min (row 0) and max (row 1)."""
  vectors = np.asarray(vectors)
  return np.stack([vectors.min(axis=0), vectors.max(axis=0)])
