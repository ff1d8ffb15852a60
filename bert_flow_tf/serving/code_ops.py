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


def summed_counts(counts):
  """int32 [N]: the sum of uint8 popcounts [N, W] of 64-bit words, added in uint8 when W * 64 <= 255 (no overflow:
  one cast of [N] instead of [N, W]), else in int32."""
  if counts.shape[-1] * 64 <= 255:
    return tf.cast(tf.reduce_sum(counts, axis=-1), tf.int32)
  return tf.reduce_sum(tf.cast(counts, tf.int32), axis=-1)


def rescore(q, codes, norms, lo, step, k):
  """The cosine of float32 queries [B, D] and their candidates' int8 codes [B, C, D] read back to their bucket
  middles v = lo + (c + 128.5) step (float32 [D] each), as `quantized_search.rescore_codes`: the top k, best first
  (equal scores: the earlier candidate). norms float32 [B, C] are the |v| (`quantized_search.dequantized_norms`),
  so q.v = q.(lo + 128.5 step) + (q * step).c is one cast and one matrix-vector product per query.
  Returns tf.math.top_k's (values float32 [B, k], indices int32 [B, k])."""
  q = q / tf.maximum(tf.norm(q, axis=-1, keepdims=True), 1e-12)                     # [B, D]
  dot = tf.linalg.matvec(tf.cast(codes, tf.float32), q * step) + tf.linalg.matvec(q, lo + 128.5 * step)[:, None]
  return tf.math.top_k(dot / tf.maximum(norms, 1e-12), k=k)                         # [B, C] -> [B, k]
