"""The binary search SavedModel, in plain TensorFlow ops.

  <export_dir>/binary_search/<version>/   the text model's embedding + a corpus held as sign words and int8 codes
      serving_default: queries string [B], k int32 [], candidates int32 [] -> indices int32 [B, k'],
                       scores float32 [B, k'], sentences string [B, k']  (k' = min(k, candidates, M), best first)
      search_probe:    the same inputs and nprobe int32 [] (only an export with an inverted-file index)

The corpus is scanned whole (the exact scan below, `BinaryIndex`: num_lists 0, the default) or, when num_lists
L >= 1 is asked, through an inverted-file index (`ivf_probe.IvfBinaryIndex`: its `nprobe` nearest lists alone, the
model's default nprobe for serving_default).

A query batch is embedded as by the text model and cut to the corpus's D' dimensions (`truncate_dim`: the model's
`dims`, int32 [D'], the first D' or those a saved truncation order puts first: `quantization.truncation`). Each
query's sign bits, centred and turned by the corpus's sign rotation as its words are (`corpus_codes`,
`quantization.sign_rotation`), are packed into 64-bit words in the graph; its Hamming distance to every corpus
vector is the popcount (tf.raw_ops.PopulationCount) of their tf.bitwise.bitwise_xor, summed over the W words; the
`candidates` nearest (`nearest_by_count`: as tf.math.top_k of the negated distance, equal distances the lower index
first) are rescored by the cosine of the query and their int8 codes read back to the middle of their buckets
(`corpus_codes.dequantize`), and the k best returned (equal scores: the Hamming-nearer first). This is
`hamming_search.search_codes`, which the tests hold it to (and the index, with every list probed).
The queries are searched one after another (tf.map_fn) so the memory of a batch stays that of a few queries
(a query's xor is W x M int64: 48 MB at D' = 384, M = 1M).

The corpus is written in the model as variables: words int64 [W, M] (a row per word: each xor reads one contiguous
row), their centre float32 [D'] and sign rotation float32 [D', D'], codes int8 [M, D'], their lengths read back
float32 [M] (the rescoring's denominators: `graph_ops.rescore`), the buckets' lo and step float32 [D'], sentences
string [M]. `export_binary_search` fills them a block of vectors at a time (`corpus_codes.CorpusCodes`), so the
fp32 corpus is never held whole; `export_sentences` gives it the blocks of a corpus of sentences through an
encoder's `embed` (SentenceEncoder.export's, `encoder_export`).

Legend: B = queries, M = corpus vectors, D = embedding width, D' = the corpus's width, W = ceil(D' / 64).
"""
import os
import types

import numpy as np
import tensorflow as tf

from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import graph_ops
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import ivf_index
from bert_flow_tf.quantization import ivf_probe
from bert_flow_tf.serving import export as export_lib

KIND = "binary_search"
BLOCK_ROWS = 16384  # corpus sentences encoded at a time by export_sentences
_QUERY_PARALLELISM = 4   # queries searched at once inside a batch (tf.map_fn's parallel_iterations)
_SEARCH_SIGNATURE = [tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.int32), tf.TensorSpec([], tf.int32)]


def nearest_by_count(distance, c, max_distance):
  """The c smallest of int32 distances [M] in 0..max_distance, nearest first, the lower index first on ties: what
  tf.math.top_k(-distance, c).indices gives, without a top_k over all M.

  A histogram of the distances gives the smallest t with at least c of them <= t; top_k runs over those alone
  (tf.where lists them in index order, and top_k puts the lower index first on ties). At M = 1M, 2 words, the scan
  took about half the time it takes with a top_k over all M, at 1,000 and at 4,000 candidates (bench/README.md).
  """
  histogram = tf.math.bincount(distance, minlength=max_distance + 1, maxlength=max_distance + 1)
  threshold = tf.cast(tf.argmax(tf.cumsum(histogram) >= c), tf.int32)       # first t with count(<= t) >= c
  near = tf.cast(tf.where(distance <= threshold)[:, 0], tf.int32)           # [>= c], ascending
  return tf.gather(near, tf.math.top_k(-tf.gather(distance, near), k=c).indices)


class BinaryIndex(tf.Module):
  """A corpus held as sign words and int8 codes, searched by vectors (see the module notes).

  Args:
    corpus: corpus_codes.CorpusCodes, finished.
  """

  def __init__(self, corpus):
    super().__init__(name="binary_index")
    self.dim = corpus.dim
    self.num_words = corpus.words.shape[1]
    self.words = tf.Variable(np.ascontiguousarray(corpus.words.T), trainable=False, name="words")   # [W, M]
    self.codes = tf.Variable(corpus.codes, trainable=False, name="codes")                         # [M, D']
    self.rotation = tf.Variable(corpus.rotation, trainable=False, name="sign_rotation")           # [D', D']
    self.centre = tf.Variable(corpus.centre, trainable=False, name="sign_centre")                 # [D']
    lo, step = corpus_codes.bucket_starts_and_widths(corpus.ranges)
    self.lo = tf.Variable(lo, trainable=False, name="lo")
    self.step = tf.Variable(step, trainable=False, name="step")
    self.norms = tf.Variable(corpus_codes.dequantized_norms(corpus.codes, corpus.ranges), trainable=False,
                             name="norms")                                                      # [M]

  def search_vectors(self, q, k, candidates):
    """float32 [B, D'] queries, int32 k and candidates -> (indices int32 [B, k'], scores float32 [B, k'])."""
    c = tf.minimum(candidates, tf.shape(self.codes)[0])
    query_words = graph_ops.sign_words(q, self.centre, self.rotation, corpus_codes.WORD_BITS)     # [B, W]

    def nearest(words):                                                               # int64 [W] -> int32 [C]
      distance = graph_ops.hamming([self.words[w] for w in range(self.num_words)], words)                # [M]
      return nearest_by_count(distance, c, self.num_words * corpus_codes.WORD_BITS)

    cand = tf.map_fn(nearest, query_words, fn_output_signature=tf.TensorSpec([None], tf.int32),
                     parallel_iterations=_QUERY_PARALLELISM)                          # [B, C]
    top = graph_ops.rescore(q, tf.gather(self.codes, cand), tf.gather(self.norms, cand), self.lo, self.step,
                            tf.minimum(k, c))
    return tf.gather(cand, top.indices, batch_dims=1), top.values


class _BinarySearchModel(tf.Module):
  """The text embedder and a BinaryIndex or an ivf_probe.IvfBinaryIndex; the binary search SavedModel's root.
  With the inverted-file index, `serve_probe` also takes nprobe (the "search_probe" signature)."""

  def __init__(self, embedder, calibration, index, sentences, dims):
    super().__init__(name="binary_search_model")
    self.dims = tf.constant(dims, tf.int32)                                           # [D']
    text = export_lib.TextEmbedder(embedder, calibration)  # pylint: disable=protected-access
    self._text = types.SimpleNamespace(embedder=text)  # untracked, as in search_model.SearchModel
    self.text_variables = list(text.variables)
    self.tokenizer = text.tokenizer
    self.index = index
    self.sentences = tf.Variable(tf.constant(list(sentences), tf.string), trainable=False, name="sentences")
    if isinstance(index, ivf_probe.IvfBinaryIndex):
      self.serve_probe = tf.function(self._search, input_signature=_SEARCH_SIGNATURE + [tf.TensorSpec([], tf.int32)],
                                     autograph=False)

  def _search(self, queries, k, candidates, nprobe=None):
    """nprobe: None for the index's default, or int32 [] (an IvfBinaryIndex's lists probed)."""
    checks = [tf.debugging.assert_positive(k, message="search needs k >= 1"),
              tf.debugging.assert_greater_equal(candidates, k, message="search needs candidates >= k")]
    if nprobe is not None:
      checks.append(tf.debugging.assert_positive(nprobe, message="search needs nprobe >= 1"))
    with tf.control_dependencies(checks):
      q = tf.gather(self._text.embedder.embed_text(queries), self.dims, axis=1)      # [B, D']
    indices, scores = self.index.search_vectors(q, k, candidates, *(() if nprobe is None else (nprobe,)))
    return {"indices": indices, "scores": scores, "sentences": tf.gather(self.sentences, indices)}

  @tf.function(input_signature=_SEARCH_SIGNATURE, autograph=False)
  def serve_search(self, queries, k, candidates):
    return self._search(queries, k, candidates)


def export_binary_search(embedder, calibration, blocks, rows, ranges, export_dir, version=1, overwrite=False,
                         dims=None, num_lists=0, nprobe=None):
  """Writes export_dir/binary_search/<version>, its corpus filled a block at a time, then (num_lists L >= 1) stored
  list by list in an inverted-file index (`ivf_index.build`: from the codes, without the fp32 vectors).

  Args:
    embedder: SentenceEmbedder, as `export.export_models`.
    calibration: a glow.Glow, a graph_calibration.RotatedFlow or a graph_calibration.Affine over width D, or None.
    blocks: iterable of (list of R str, float [R, D']): the corpus's sentences and their calibrated vectors, cut
      to the dimensions `dims` (D' <= the text model's width).
    rows: int M, the corpus size (the sum of the R).
    ranges: float [2, D'], the int8 ranges (the calibration's `int8_ranges`, cut as the vectors).
    export_dir: str. Base directory.
    version: int >= 1.
    overwrite: bool. Replace an existing version.
    dims: int [D'], the text model's output dimensions the vectors hold, in their order; None: the first D'.
    num_lists: int L, 0 for the exact scan of every code (the default); L >= 1: an inverted-file index.
    nprobe: int >= 1, the lists a request probes unless it names nprobe; None: `ivf_index.default_nprobe(L)`.

  Returns:
    str, the SavedModel directory. Its "serving_default" signature takes queries, k and candidates; with lists, a
    "search_probe" signature also takes nprobe int32 [].
  """
  export_lib.check_version(version)  # pylint: disable=protected-access
  path = os.path.join(export_dir, KIND, str(version))
  if os.path.exists(path) and not overwrite:
    raise FileExistsError(f"{path} exists; pass overwrite=True or choose another version")
  corpus = corpus_codes.CorpusCodes(rows, ranges)
  sentences = []
  for block_sentences, vectors in blocks:
    corpus.add(vectors)
    sentences.extend(block_sentences)
  if not rows or corpus.filled != rows or len(sentences) != rows:
    raise ValueError(f"the corpus needs M >= 1 vectors and sentences, M = {rows}; got {corpus.filled} vectors "
                     f"and {len(sentences)} sentences")
  corpus.finish()
  num_lists = ivf_index.check_num_lists(num_lists, rows)
  index = ivf_probe.IvfBinaryIndex(ivf_index.build(corpus, num_lists), nprobe) if num_lists else BinaryIndex(corpus)
  model = _BinarySearchModel(embedder, calibration, index, sentences,
                             np.arange(corpus.dim) if dims is None else np.asarray(dims, np.int32))
  signatures = {"serving_default": model.serve_search}
  if num_lists:
    signatures["search_probe"] = model.serve_probe
  export_lib.save_atomically(model, path, signatures)  # pylint: disable=protected-access
  return path


def export_sentences(embedder, calibration, embed, sentences, ranges, dims, export_dir, version=1, overwrite=False,
                     num_lists=0):
  """`export_binary_search` of a corpus of sentences, embedded BLOCK_ROWS at a time by `embed` (an encoder's read
  from its store when it has a cache_dir), cut to the dimensions `dims`.

  Args:
    embedder, calibration: what the text model chains, as `export_binary_search`.
    embed: function (list of R str, show_progress_bar=False) -> float32 [R, D], the calibrated vectors of width D.
    sentences: list of M >= 1 str.
    ranges: float [2, D] or None, the calibration's int8 ranges; None (no calibration, or one saved before ranges
      were fitted): fitted on the corpus by the same rule (`int8_ranges.fit_ranges`), in a first pass over its blocks.
    dims: int [D'], the calibrated dimensions kept, in order (`SentenceCodes.kept_indices`).
    export_dir, version, overwrite, num_lists: as `export_binary_search`.

  Returns:
    str, the SavedModel directory.
  """
  if not sentences:
    raise ValueError("a binary search export needs a corpus of at least one sentence")

  def blocks():
    for start in range(0, len(sentences), BLOCK_ROWS):
      block = sentences[start:start + BLOCK_ROWS]
      yield block, embed(block, show_progress_bar=False)[:, dims]

  ranges = int8_ranges.fit_ranges(v for _, v in blocks()) if ranges is None else np.asarray(ranges)[:, dims]
  return export_binary_search(embedder, calibration, blocks(), len(sentences), ranges, export_dir, version,
                              overwrite, dims, num_lists)
