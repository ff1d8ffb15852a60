"""Binary search with int8 rescoring over a corpus held as codes: the numpy side of the binary search SavedModel.

A corpus vector x (calibrated, optionally truncated to its first k dimensions: width D') is held as
  words  int64 [W]   its sign bits (x > 0), W = ceil(D' / 64): sentence-transformers' packed bytes
                     (`quantize_embeddings(x, "ubinary")`, the first dimension the high bit) read 8 at a time
                     as big-endian 64-bit words, zero-padded
  codes  int8 [D']   `quantize_embeddings(x, "int8", ranges)` with the calibration's int8 ranges
(8 W + D' bytes; fp32 would be 4 D'). `CorpusCodes` fills both a block of vectors at a time, so the fp32 corpus is
never held whole.

`search` ranks a query q against the corpus in two passes:
  1. Hamming distance between q's sign bits and each corpus's words; the `candidates` nearest (equal distances:
     the lower index first).
  2. Rescoring (rescore=True): cosine of q (float32) and each candidate's codes read back to the middle of their
     buckets (`dequantize`); the top_k of those, best first (equal scores: the Hamming-nearer first).
     Without rescoring, the top_k of pass 1 with score 1 - 2 hamming / D' (the cosine of the +-1 sign vectors).

The SavedModel (`serving.binary_search`) computes the same in its graph; `code_search.semantic_search` calls
this unless an inverted-file index (`ivf_index`) is asked for.

Legend: n = queries, M = corpus vectors, D' = width, W = 64-bit words per vector, C = candidates.
"""
import numpy as np

from bert_flow_tf import quantization
from bert_flow_tf import search

WORD_BITS = 64
DEFAULT_CANDIDATES = 100  # the Hamming-nearest rescored when a search names none (at least top_k: `candidates_for`)
SEARCH_PRECISIONS = ("float32", "binary")


def num_words(dim):
  """W: 64-bit words holding `dim` sign bits."""
  return -(-dim // WORD_BITS)


def pack_words(vectors):
  """Sign bits packed in 64-bit words. float [n, D'] -> int64 [n, W] (see the module notes for the layout)."""
  vectors = np.asarray(vectors)
  packed = quantization.quantize_embeddings(vectors, "ubinary")                        # uint8 [n, ceil(D'/8)]
  padded = np.zeros([len(packed), num_words(vectors.shape[1]) * 8], np.uint8)
  padded[:, :packed.shape[1]] = packed
  return padded.view(">u8").astype(np.uint64).view(np.int64)


def bucket_starts_and_widths(ranges):
  """(lo float32 [D'], step float32 [D']): the buckets' start and width (see `dequantize`)."""
  ranges = np.asarray(ranges, np.float32)
  return ranges[0], (ranges[1] - ranges[0]) / np.float32(255)


def dequantize(codes, ranges):
  """int8 [n, D'] codes -> float32 [n, D'], each at the middle of its bucket: lo + (c + 128.5) step (code c holds
  [c + 128, c + 129) steps from lo: `quantization`'s int8 is the floor bucket - 128)."""
  lo, step = bucket_starts_and_widths(ranges)
  return lo + (np.asarray(codes, np.float32) + np.float32(128.5)) * step


def dequantized_norms(codes, ranges, block_rows=65536):
  """float32 [M]: the length of each int8 code vector [M, D'] read back (`dequantize`), a block of rows at a time
  (the rescoring's denominators, stored beside the codes by the search models)."""
  return np.concatenate([np.linalg.norm(dequantize(codes[s:s + block_rows], ranges), axis=1)
                         for s in range(0, len(codes), block_rows)] or [np.zeros([0], np.float32)])


def check_search_precision(precision):
  """Returns precision if it is one of SEARCH_PRECISIONS, else raises ValueError naming them (every search's check)."""
  if precision not in SEARCH_PRECISIONS:
    raise ValueError(f"search precision {precision!r} is not supported; use one of {', '.join(SEARCH_PRECISIONS)}")
  return precision


def candidates_for(top_k, candidates):
  """The candidates every binary search rescores: None -> max(DEFAULT_CANDIDATES, top_k); an int is checked
  (`check_search_args`: one below top_k is an error, on every search path). Returns int."""
  if candidates is None and not isinstance(top_k, bool) and isinstance(top_k, (int, np.integer)):
    candidates = max(DEFAULT_CANDIDATES, int(top_k))
  check_search_args(top_k, candidates)
  return int(candidates)


def check_search_args(top_k, candidates):
  """Raises ValueError unless top_k and candidates are ints with 1 <= top_k <= candidates."""
  for name, value in (("top_k", top_k), ("candidates", candidates)):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
      raise ValueError(f"{name} must be an int >= 1, got {value!r}")
  if candidates < top_k:
    raise ValueError(f"candidates ({candidates}) must be at least top_k ({top_k}): the rescored set holds the "
                     "results")


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
    self.codes[self.filled:end] = quantization.quantize_embeddings(vectors, "int8", ranges=self.ranges)
    self.filled = end
    return self

  @classmethod
  def of(cls, vectors, ranges):
    """CorpusCodes of float [M, D'] vectors held in memory."""
    return cls(len(vectors), ranges).add(vectors)


def hamming(query_words, corpus_words):
  """int32 [n, M]: differing bits between int64 [n, W] and int64 [M, W] words."""
  distance = np.zeros([len(query_words), len(corpus_words)], np.int32)
  query_words, corpus_words = query_words.view(np.uint64), corpus_words.view(np.uint64)  # signed: |x|'s bits
  for w in range(corpus_words.shape[1]):
    distance += np.bitwise_count(query_words[:, w:w + 1] ^ corpus_words[None, :, w])
  return distance


def nearest(distance, k):
  """int64 [n, min(k, M)]: per row the indices of the k smallest int distances [n, M], nearest first, the lower
  index first on ties (as tf.math.top_k of -distance)."""
  k = min(k, distance.shape[1])
  key = distance.astype(np.int64) * distance.shape[1] + np.arange(distance.shape[1])  # unique per row
  if k < distance.shape[1]:
    key = np.take_along_axis(key, np.argpartition(key, k - 1, axis=1)[:, :k], axis=1)
  return np.sort(key, axis=1)[:, :k] % distance.shape[1]


def search_codes(query_vectors, corpus, top_k=10, candidates=DEFAULT_CANDIDATES, rescore=True):
  """Binary search with int8 rescoring (see the module notes).

  Args:
    query_vectors: float [n, D'] (or [D]), calibrated and truncated as the corpus.
    corpus: CorpusCodes.
    top_k: int >= 1.
    candidates: int >= top_k, the Hamming-nearest vectors rescored.
    rescore: bool.

  Returns:
    list of n lists of {"corpus_id": int, "score": float}, best first (min(top_k, M) each).
  """
  check_search_args(top_k, candidates)
  q = np.atleast_2d(np.asarray(query_vectors, np.float32))
  if q.shape[1] != corpus.dim:
    raise ValueError(f"query vectors of width {q.shape[1]} against a corpus of width {corpus.dim}")
  distance = hamming(pack_words(q), corpus.words[:corpus.filled])                   # [n, M]
  if not rescore:
    ids = nearest(distance, top_k)
    scores = 1 - 2 * np.take_along_axis(distance, ids, axis=1) / corpus.dim
  else:
    cand = nearest(distance, candidates)                                              # [n, C]
    order, scores = rescore_codes(q, corpus.codes[cand], corpus.ranges, top_k)
    ids = np.take_along_axis(cand, order, axis=1)
  return [[{"corpus_id": int(i), "score": float(s)} for i, s in zip(row_ids, row_scores)]
          for row_ids, row_scores in zip(ids, scores)]


def rescore_codes(q, codes, ranges, top_k):
  """The rescoring pass: float [n, D'] queries and their candidates' int8 codes [n, C, D'] (Hamming-nearest first)
  -> (order int64 [n, k], scores float32 [n, k]): the candidates of the top_k cosines of q and the codes read back
  to their bucket middles, best first (equal scores: the earlier candidate), k = min(top_k, C)."""
  vectors = search.normalize(dequantize(codes, ranges))                             # [n, C, D']
  cosine = np.einsum("nd,ncd->nc", search.normalize(q), vectors)                   # [n, C]
  order = np.argsort(-cosine, axis=1, kind="stable")[:, :top_k]
  return order, np.take_along_axis(cosine, order, axis=1)
