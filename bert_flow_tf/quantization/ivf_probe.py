"""The inverted-file binary index in the binary search SavedModel's graph: `ivf_index.search_index` in plain ops.

The index's arrays (`ivf_index.IvfCodes`) are variables: centroids float32 [L, D'], offsets int64 [L + 1], ids
int32 [M], words int64 [W, M] (a row per word), codes int8 [M, D'] and the codes' lengths read back float32 [M]
stored list by list, the words' centre float32 [D'] and sign rotation float32 [D', D'], the int8 buckets' lo and
step float32 [D'], and the default nprobe int32 []. Each query, one
after another (tf.map_fn, as `binary_search_model.BinaryIndex`):
  1. its cosine to the L centroids, the lists by decreasing cosine (tf.math.top_k over all L: ties the lower list),
     the first max(nprobe, lists its first `candidates` vectors need);
  2. their positions (tf.ragged.range of the lists' offsets), each word row gathered at them, the Hamming distance
     as the popcount of the xor summed over the W words (`graph_ops.hamming`);
  3. the `candidates` nearest by (distance, corpus id): a histogram of the distances gives the smallest threshold
     with enough under it, and a top_k of the negated key distance * M + id runs over those alone (their ids
     alone looked up).
Then the candidates' int8 codes rescore the float query (`graph_ops.rescore`) and their corpus ids are returned.
Every op is core TensorFlow (RaggedRange, BitwiseXor, PopulationCount, Bincount, TopKV2, ...): stock TF Serving
runs it (`op_audit`).

Legend: B = queries, M = corpus vectors, D' = width, W = 64-bit words a vector, L = lists, N = probed vectors,
C = candidates.
"""
import numpy as np
import tensorflow as tf

from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import graph_ops
from bert_flow_tf.quantization import ivf_index

_QUERY_PARALLELISM = 4   # queries searched at once inside a batch (tf.map_fn's parallel_iterations)


def nearest_by_key(distance, positions, ids, c, max_distance, rows):
  """The c positions (of int64 [N], c <= N) of the smallest (distance, corpus id) among int32 distances [N] in
  0..max_distance, nearest first: int64 [c]. ids int32 [M] are the corpus ids (distinct, in 0..rows - 1) by
  position, looked up only for the positions under the threshold."""
  histogram = tf.math.bincount(distance, minlength=max_distance + 1, maxlength=max_distance + 1)
  threshold = tf.cast(tf.argmax(tf.cumsum(histogram) >= c), tf.int32)          # first t with count(<= t) >= c
  near = tf.where(distance <= threshold)[:, 0]                                   # [>= c]
  near_ids = tf.gather(ids, tf.gather(positions, near))
  key = tf.cast(tf.gather(distance, near), tf.int64) * rows + tf.cast(near_ids, tf.int64)
  return tf.gather(positions, tf.gather(near, tf.math.top_k(-key, k=c).indices))


class IvfBinaryIndex(tf.Module):
  """An ivf_index.IvfCodes searched by vectors (see the module notes).

  Args:
    index: ivf_index.IvfCodes.
    nprobe: int >= 1, the lists probed when a request names none; None: `ivf_index.default_nprobe(L)`.
  """

  def __init__(self, index, nprobe=None):
    super().__init__(name="ivf_binary_index")
    nprobe = ivf_index.default_nprobe(index.num_lists) if nprobe is None else ivf_index.check_nprobe(nprobe)
    self.rows, self.num_lists, self.num_words = len(index.ids), index.num_lists, index.words.shape[1]
    self.centroids = tf.Variable(index.centroids, trainable=False, name="centroids")        # [L, D']
    self.offsets = tf.Variable(index.offsets, trainable=False, name="offsets")              # [L + 1]
    self.ids = tf.Variable(index.ids, trainable=False, name="ids")                          # [M]
    self.words = tf.Variable(np.ascontiguousarray(index.words.T), trainable=False, name="words")  # [W, M]
    self.codes = tf.Variable(index.codes, trainable=False, name="codes")                    # [M, D']
    self.rotation = tf.Variable(index.rotation, trainable=False, name="sign_rotation")      # [D', D']
    self.centre = tf.Variable(index.centre, trainable=False, name="sign_centre")            # [D']
    lo, step = corpus_codes.bucket_starts_and_widths(index.ranges)
    self.lo = tf.Variable(lo, trainable=False, name="lo")
    self.step = tf.Variable(step, trainable=False, name="step")
    self.norms = tf.Variable(corpus_codes.dequantized_norms(index.codes, index.ranges), trainable=False,
                             name="norms")                                                # [M]
    self.nprobe = tf.Variable(min(nprobe, index.num_lists), trainable=False, name="default_nprobe")

  def search_vectors(self, q, k, candidates, nprobe=None):
    """float32 [B, D'] queries, int32 k, candidates and nprobe (None: the default) -> (corpus ids int32 [B, k'],
    scores float32 [B, k']), k' = min(k, candidates, M)."""
    c = tf.minimum(candidates, self.rows)
    nprobe = tf.minimum(self.nprobe if nprobe is None else nprobe, self.num_lists)
    sizes = self.offsets[1:] - self.offsets[:-1]                                          # [L]
    q_unit = q / tf.maximum(tf.norm(q, axis=-1, keepdims=True), 1e-12)
    scores = tf.matmul(q_unit, self.centroids, transpose_b=True)                          # [B, L]
    query_words = graph_ops.sign_words(q, self.centre, self.rotation, corpus_codes.WORD_BITS)    # [B, W]

    def nearest(args):                                          # (float32 [L], int64 [W]) -> int64 positions [C]
      row_scores, words = args
      order = tf.math.top_k(row_scores, k=self.num_lists).indices                        # [L]
      need = tf.cast(tf.argmax(tf.cumsum(tf.gather(sizes, order)) >= tf.cast(c, tf.int64)), tf.int32) + 1
      lists = order[:tf.maximum(nprobe, need)]                                            # [P]
      positions = tf.ragged.range(tf.gather(self.offsets, lists),
                                  tf.gather(self.offsets, lists + 1)).flat_values         # [N]
      distance = graph_ops.hamming([tf.gather(self.words[w], positions) for w in range(self.num_words)], words)  # [N]
      return nearest_by_key(distance, positions, self.ids, c, self.num_words * corpus_codes.WORD_BITS,
                            self.rows)

    cand = tf.map_fn(nearest, (scores, query_words), fn_output_signature=tf.TensorSpec([None], tf.int64),
                     parallel_iterations=_QUERY_PARALLELISM)                              # [B, C]
    top = graph_ops.rescore(q, tf.gather(self.codes, cand), tf.gather(self.norms, cand), self.lo, self.step,
                            tf.minimum(k, c))
    return tf.gather(self.ids, tf.gather(cand, top.indices, batch_dims=1)), top.values
