"""Graph ops the binary search models share: sign bits packed into words (a query's centred and rotated, as its
corpus's), and the int8 rescoring of candidates.

Legend: B = queries, D = width, N = corpus vectors scanned, W = 64-bit words a vector, C = candidates, k = results.
"""
import numpy as np
import tensorflow as tf

_WORDS_PER_SUM = 3       # popcounts of 64-bit words added in uint8 before int32: 3 x 64 = 192 <= 255


def pack_bits(x, bits_per_word):
  """Sign bits of float32 [B, D] packed big-endian into words of `bits_per_word` bits, the first dimension the high
  bit, zero-padded: int64 [B, ceil(D / bits_per_word)]."""
  dim = x.shape[-1]
  words = -(-dim // bits_per_word)
  bits = tf.cast(x > 0, tf.int64)
  bits = tf.pad(bits, [[0, 0], [0, words * bits_per_word - dim]])
  bits = tf.reshape(bits, [-1, words, bits_per_word])
  shifts = tf.constant(np.arange(bits_per_word - 1, -1, -1), tf.int64)
  # Distinct powers of two: their sum is their bitwise or (the top bit of a 64-bit word wraps to the sign).
  return tf.reduce_sum(tf.bitwise.left_shift(bits, shifts), axis=-1)


def sign_words(q, centre, rotation, bits_per_word):
  """The words float32 queries [B, D] are compared with by a corpus whose sign bits were taken after centring on
  float32 [D] and turning by float32 [D, D] (`corpus_codes.sign_words` in numpy): `pack_bits` of (q - centre) R,
  int64 [B, ceil(D / bits_per_word)]."""
  return pack_bits(tf.matmul(q - centre, rotation), bits_per_word)


def hamming(columns, words):
  """int32 [N]: the differing bits of N corpus vectors, given as W word columns (int64 [N] each: one contiguous
  array per word), and a query's words int64 [W]: the popcounts of the xors (uint8 [N] each) summed in uint8
  _WORDS_PER_SUM words at a time (at most 192 bits: no overflow), then in int32."""
  counts = [tf.raw_ops.PopulationCount(x=tf.bitwise.bitwise_xor(column, words[w])) for w, column in enumerate(columns)]
  return tf.add_n([tf.cast(tf.add_n(counts[g:g + _WORDS_PER_SUM]), tf.int32)
                   for g in range(0, len(counts), _WORDS_PER_SUM)])


def rescore(q, codes, norms, lo, step, k):
  """The cosine of float32 queries [B, D] and their candidates' int8 codes [B, C, D] read back to their bucket
  middles v = lo + (c + 128.5) step (float32 [D] each), as `hamming_search.rescore_codes`: the top k, best first
  (equal scores: the earlier candidate). norms float32 [B, C] are the |v| (`corpus_codes.dequantized_norms`),
  so q.v = q.(lo + 128.5 step) + (q * step).c is one cast and one matrix-vector product per query.
  Returns tf.math.top_k's (values float32 [B, k], indices int32 [B, k])."""
  q = q / tf.maximum(tf.norm(q, axis=-1, keepdims=True), 1e-12)                     # [B, D]
  dot = tf.linalg.matvec(tf.cast(codes, tf.float32), q * step) + tf.linalg.matvec(q, lo + 128.5 * step)[:, None]
  return tf.math.top_k(dot / tf.maximum(norms, 1e-12), k=k)                         # [B, C] -> [B, k]
