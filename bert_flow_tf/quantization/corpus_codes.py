"""A corpus held as codes: its int8 codes, its rotated sign bits in 64-bit words, and the codes read back.

A corpus vector x (calibrated, optionally truncated: width D') is held as
  codes  int8 [D']   `st_layouts.quantize_embeddings(x, "int8", ranges)` with the calibration's int8 ranges
  words  int64 [W]   the sign bits of its codes read back, centred and rotated, (v - m) R > 0 (v = `dequantize`d
                     codes, m the int8 ranges' middle: each dimension's mean under the gaussian rule, R the corpus's
                     `sign_rotation`), packed as sentence-transformers' ubinary bytes (the first dimension the high
                     bit) read 8 at a time as big-endian 64-bit words, zero-padded: W = ceil(D' / 64)
(8 W + D' bytes; fp32 would be 4 D'). A query q's words are the same packing of (q - m) R (`sign_words`).
`CorpusCodes` fills the codes a block of vectors at a time, so the fp32 corpus is never held whole, then `finish`
fits R on the codes and packs the words. `hamming_search` searches them, `ivf_index` indexes them, the binary search
SavedModel holds them.

Legend: n = vectors, M = corpus vectors, D' = width, W = 64-bit words per vector.
"""
import numpy as np

from bert_flow_tf.quantization import sign_rotation
from bert_flow_tf.quantization import st_layouts

WORD_BITS = 64
BLOCK_ROWS = 65536  # codes read back at a time by `finish` and `dequantized_norms`: 32 MB of float32 at D' = 128


def num_words(dim):
  """W: 64-bit words holding `dim` sign bits."""
  return -(-dim // WORD_BITS)


def pack_words(vectors):
  """Sign bits packed in 64-bit words. float [n, D'] -> int64 [n, W] (see the module notes for the layout)."""
  vectors = np.asarray(vectors)
  packed = st_layouts.quantize_embeddings(vectors, "ubinary")                        # uint8 [n, ceil(D'/8)]
  padded = np.zeros([len(packed), num_words(vectors.shape[1]) * 8], np.uint8)
  padded[:, :packed.shape[1]] = packed
  return padded.view(">u8").astype(np.uint64).view(np.int64)


def sign_words(vectors, centre, rotation):
  """The words of float [n, D'] vectors centred on float32 [D'] and turned by a sign rotation float32 [D', D']:
  int64 [n, W], the packed sign bits of (v - centre) R (`pack_words`)."""
  return pack_words((np.asarray(vectors, np.float32) - centre) @ rotation)


def bucket_starts_and_widths(ranges):
  """(lo float32 [D'], step float32 [D']): the buckets' start and width (see `dequantize`)."""
  ranges = np.asarray(ranges, np.float32)
  return ranges[0], (ranges[1] - ranges[0]) / np.float32(255)


def dequantize(codes, ranges):
  """int8 [n, D'] codes -> float32 [n, D'], each at the middle of its bucket: lo + (c + 128.5) step (code c holds
  [c + 128, c + 129) steps from lo: `st_layouts`' int8 is the floor bucket - 128)."""
  lo, step = bucket_starts_and_widths(ranges)
  return lo + (np.asarray(codes, np.float32) + np.float32(128.5)) * step


def dequantized_norms(codes, ranges, block_rows=BLOCK_ROWS):
  """float32 [M]: the length of each int8 code vector [M, D'] read back (`dequantize`), a block of rows at a time
  (the rescoring's denominators, stored beside the codes by the search models)."""
  return np.concatenate([np.linalg.norm(dequantize(codes[s:s + block_rows], ranges), axis=1)
                         for s in range(0, len(codes), block_rows)] or [np.zeros([0], np.float32)])


class CorpusCodes:
  """A corpus's int8 codes, filled a block at a time, and once `finish`ed its sign rotation and words.

  Args:
    rows: int M, the corpus size.
    ranges: float [2, D'], the int8 ranges (the calibration's `int8_ranges`, truncated with the vectors).

  Attributes:
    codes: int8 [M, D']; filled: rows added so far; centre: float32 [D'], the ranges' middle; rotation: float32
    [D', D'] and words: int64 [M, W], set by `finish` (None before).
  """

  def __init__(self, rows, ranges):
    self.ranges = np.asarray(ranges, np.float32)
    self.centre = self.ranges.mean(axis=0)
    self.dim = self.ranges.shape[1]
    self.codes = np.zeros([rows, self.dim], np.int8)
    self.filled = 0
    self.rotation = self.words = None

  def add(self, vectors):
    """Appends float [R, D'] vectors (calibrated and truncated as the ranges are)."""
    vectors = np.asarray(vectors, np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != self.dim:
      raise ValueError(f"corpus vectors must be [R, {self.dim}] (the int8 ranges' width), got {vectors.shape}")
    end = self.filled + len(vectors)
    if end > len(self.codes):
      raise ValueError(f"{end} corpus vectors added to a corpus of {len(self.codes)}")
    self.codes[self.filled:end] = st_layouts.quantize_embeddings(vectors, "int8", ranges=self.ranges)
    self.filled = end
    return self

  def finish(self, rotation=None, seed=0):
    """Sets the sign rotation, then packs every vector's rotated sign bits, BLOCK_ROWS at a time. Needs every row
    filled; returns self.

    Args:
      rotation: orthogonal float [D', D'] (the identity: the centred codes' own sign bits); None: `sign_rotation.fit`
        on a uniform sample of SAMPLE_ROWS codes read back and centred (drawn with `seed`).
    """
    if self.filled != len(self.codes) or not self.filled:
      raise ValueError(f"a corpus of {len(self.codes)} vectors (at least one) has {self.filled} filled")
    if rotation is None:
      sample = np.random.default_rng(seed).choice(self.filled, size=min(self.filled, sign_rotation.SAMPLE_ROWS),
                                                  replace=False)
      rotation = sign_rotation.fit(dequantize(self.codes[np.sort(sample)], self.ranges) - self.centre, seed=seed)
    self.rotation = np.asarray(rotation, np.float32)
    self.words = np.concatenate([sign_words(dequantize(self.codes[s:s + BLOCK_ROWS], self.ranges), self.centre,
                                            self.rotation) for s in range(0, self.filled, BLOCK_ROWS)])
    return self

  @classmethod
  def of(cls, vectors, ranges):
    """A finished CorpusCodes of float [M, D'] vectors held in memory."""
    return cls(len(vectors), ranges).add(vectors).finish()
