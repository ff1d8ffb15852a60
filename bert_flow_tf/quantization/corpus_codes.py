"""A corpus held as codes: its sign bits in 64-bit words and its int8 codes, and the codes read back.

A corpus vector x (calibrated, optionally truncated: width D') is held as
  words  int64 [W]   its sign bits (x > 0), W = ceil(D' / 64): sentence-transformers' packed bytes
                     (`st_layouts.quantize_embeddings(x, "ubinary")`, the first dimension the high bit) read 8 at a
                     time as big-endian 64-bit words, zero-padded
  codes  int8 [D']   `st_layouts.quantize_embeddings(x, "int8", ranges)` with the calibration's int8 ranges
(8 W + D' bytes; fp32 would be 4 D'). `CorpusCodes` fills both a block of vectors at a time, so the fp32 corpus is
never held whole; `dequantize` reads int8 codes back to the middle of their buckets (the rescoring's vectors).
`hamming_search` searches them, `ivf_index` indexes them, the binary search SavedModel holds them.

Legend: n = vectors, M = corpus vectors, D' = width, W = 64-bit words per vector.
"""
import numpy as np

from bert_flow_tf.quantization import st_layouts

WORD_BITS = 64


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


def bucket_starts_and_widths(ranges):
  """(lo float32 [D'], step float32 [D']): the buckets' start and width (see `dequantize`)."""
  ranges = np.asarray(ranges, np.float32)
  return ranges[0], (ranges[1] - ranges[0]) / np.float32(255)


def dequantize(codes, ranges):
  """int8 [n, D'] codes -> float32 [n, D'], each at the middle of its bucket: lo + (c + 128.5) step (code c holds
  [c + 128, c + 129) steps from lo: `st_layouts`' int8 is the floor bucket - 128)."""
  lo, step = bucket_starts_and_widths(ranges)
  return lo + (np.asarray(codes, np.float32) + np.float32(128.5)) * step


def dequantized_norms(codes, ranges, block_rows=65536):
  """float32 [M]: the length of each int8 code vector [M, D'] read back (`dequantize`), a block of rows at a time
  (the rescoring's denominators, stored beside the codes by the search models)."""
  return np.concatenate([np.linalg.norm(dequantize(codes[s:s + block_rows], ranges), axis=1)
                         for s in range(0, len(codes), block_rows)] or [np.zeros([0], np.float32)])


class CorpusCodes:
  """A corpus's sign words and int8 codes, filled a block at a time.

  Args:
    rows: int M, the corpus size.
    ranges: float [2, D'], the int8 ranges (the calibration's `int8_ranges`, truncated with the vectors).

  Attributes:
    words: int64 [M, W]; codes: int8 [M, D']; filled: rows added so far.
  """

  def __init__(self, rows, ranges):
    self.ranges = np.asarray(ranges, np.float32)
    self.dim = self.ranges.shape[1]
    self.words = np.zeros([rows, num_words(self.dim)], np.int64)
    self.codes = np.zeros([rows, self.dim], np.int8)
    self.filled = 0

  def add(self, vectors):
    """Appends float [R, D'] vectors (calibrated and truncated as the ranges are)."""
    vectors = np.asarray(vectors, np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != self.dim:
      raise ValueError(f"corpus vectors must be [R, {self.dim}] (the int8 ranges' width), got {vectors.shape}")
    end = self.filled + len(vectors)
    if end > len(self.words):
      raise ValueError(f"{end} corpus vectors added to a corpus of {len(self.words)}")
    self.words[self.filled:end] = pack_words(vectors)
    self.codes[self.filled:end] = st_layouts.quantize_embeddings(vectors, "int8", ranges=self.ranges)
    self.filled = end
    return self

  @classmethod
  def of(cls, vectors, ranges):
    """CorpusCodes of float [M, D'] vectors held in memory."""
    return cls(len(vectors), ranges).add(vectors)
