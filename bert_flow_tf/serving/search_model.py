"""The search SavedModel: export_dir/search/<version>, the text model and a corpus, exact cosine top-k in the graph.

  serving_default: queries string [B], k int32 [] -> indices int32 [B, k'], scores float32 [B, k'],
                   sentences string [B, k']  (k' = min(k, M) columns, best first)

The model stores the corpus's calibrated vectors, L2-normalised, as a float32 [D, M] variable and its sentences as a
string [M] variable; a query batch is embedded as by the text model (serving/export.py), normalised, multiplied by
the corpus matrix (cosine [B, M]) and reduced with `tf.math.top_k` (equal scores: the lower index first): core ops
only, besides the tokenizer's. Its answers are those of `search.semantic_search` on the same vectors.
quantization/binary_search_model.py is its binary-code twin for large corpora.

Legend: B = batch size, D = embedding width, M = corpus sentences.
"""
import os
import types

import numpy as np
import tensorflow as tf

from bert_flow_tf import search
from bert_flow_tf.serving import export as export_lib


class SearchModel(tf.Module):
  """The text embedder and a corpus: queries -> top-k corpus sentences by cosine; the search SavedModel's root."""

  def __init__(self, embedder, calibration, corpus_vectors, corpus_sentences):
    super().__init__(name="search_model")
    # The text embedder untracked, its variables and tokenizer (vocab asset) tracked: saving it tracked would
    # also trace and store its own signatures, which this model does not serve.
    text = export_lib.TextEmbedder(embedder, calibration)
    self._text = types.SimpleNamespace(embedder=text)
    self.text_variables = list(text.variables)
    self.tokenizer = text.tokenizer
    # Stored as [D, M]: a matmul with transpose_b on [M, D] was 3.4x slower per query at M = 100,000 here.
    self.corpus = tf.Variable(np.ascontiguousarray(search.normalize(corpus_vectors).T), trainable=False,
                              name="corpus")                                         # [D, M], unit columns
    self.sentences = tf.Variable(tf.constant(list(corpus_sentences), tf.string), trainable=False,
                                 name="sentences")                                   # [M]

  @tf.function(input_signature=[export_lib.TEXT_SPEC, tf.TensorSpec([], tf.int32)], autograph=False)
  def serve_search(self, queries, k):
    with tf.control_dependencies([tf.debugging.assert_positive(k, message="search needs k >= 1")]):
      q = self._text.embedder.embed_text(queries)                                   # [B, D]
    q = q / tf.maximum(tf.norm(q, axis=1, keepdims=True), search.COSINE_EPS)
    scores = tf.matmul(q, self.corpus)                                                # [B, M]
    top = tf.math.top_k(scores, k=tf.minimum(k, tf.shape(self.corpus)[1]))            # [B, k']
    return {"indices": top.indices, "scores": top.values, "sentences": tf.gather(self.sentences, top.indices)}


def export_search_model(embedder, calibration, corpus_vectors, corpus_sentences, export_dir, version=1,
                        overwrite=False):
  """Writes export_dir/search/<version>: the text model's embedding and the corpus, searched in the graph.

  Args:
    embedder: SentenceEmbedder, as `export_lib.export_models`.
    calibration: a glow.Glow, a graph_calibration.RotatedFlow or a graph_calibration.Affine over width D, or None.
    corpus_vectors: float [M, D], the corpus's embeddings as this embedder and calibration give them (normalised
      here).
    corpus_sentences: list of M str.
    export_dir: str. Base directory.
    version: int >= 1.
    overwrite: bool. Replace an existing version (a SavedModel; a folder holding anything else is refused).

  Returns:
    str, the SavedModel directory.
  """
  corpus_vectors = np.asarray(corpus_vectors, np.float32)
  if corpus_vectors.ndim != 2 or len(corpus_vectors) != len(corpus_sentences) or not len(corpus_sentences):
    raise ValueError(f"the corpus needs vectors [M >= 1, D] for its M sentences, got {corpus_vectors.shape} for "
                     f"{len(corpus_sentences)} sentences")
  export_lib.check_version(version)
  path = os.path.join(export_dir, "search", str(version))
  if os.path.exists(path) and not overwrite:
    raise FileExistsError(f"{path} exists; pass overwrite=True or choose another version")
  model = SearchModel(embedder, calibration, corpus_vectors, corpus_sentences)
  warmup = export_lib.warmup_module()
  export_lib.save_atomically(model, path, {"serving_default": model.serve_search}, warmup and warmup.search_model_logs())
  return path
