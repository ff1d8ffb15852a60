"""Graph ops the binary search models share: sign bits packed into words, and the int8 rescoring of candidates.

Legend: B = queries, D = width, C = candidates, k = results.
"""
import numpy as np
import tensorflow as tf


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


def rescore(q, codes, lo, step, k):
  """The cosine of float32 queries [B, D] and their candidates' int8 codes [B, C, D] read back to their bucket
  middles (lo + (c + 128.5) step, float32 [D] each), as `quantized_search.rescore_codes`: the top k, best first
  (equal scores: the earlier candidate). Returns tf.math.top_k's (values float32 [B, k], indices int32 [B, k])."""
  vectors = lo + (tf.cast(codes, tf.float32) + 128.5) * step                        # [B, C, D]
  vectors = vectors / tf.maximum(tf.norm(vectors, axis=-1, keepdims=True), 1e-12)
  q = q / tf.maximum(tf.norm(q, axis=-1, keepdims=True), 1e-12)
  return tf.math.top_k(tf.einsum("bd,bcd->bc", q, vectors), k=k)                     # [B, C] -> [B, k]
