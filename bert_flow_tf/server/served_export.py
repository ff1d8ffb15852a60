"""ServedExport: an export's text model (and its search models) as the server runs them, a batch at a time.

One call of `embed_counted` runs the text SavedModel on a batch of sentences from any number of requests and returns
their calibrated vectors (the export's `embeddings`) with each sentence's tokens, from its one tokenization (the
`with_token_counts` signature; an export written without it is tokenized a second time for the counts). `embed` and
`token_counts` run apart, for a batch cut in several calls. `request_output` then makes one request's rows by the one
contract of every door, the ExportedEncoder's `SentenceCodes` (as its `encode` does): the model's Normalize, the
calibration's cut for `dimensions` (`quantization.truncation`), and codes from the calibration's saved int8 ranges
(export_info.json), so a sentence's answer equals `encode(..., truncate_dim=, precision=)` and does not depend on
what else was in its batch. Without saved ranges, int8 and uint8 are not offered: their codes would depend on the
batch.

Legend: n = sentences, D = the export's width, D' = a request's dimensions.
"""
import os

import numpy as np
import tensorflow as tf

from bert_flow_tf.exported_encoder import ExportedEncoder
from bert_flow_tf.modeling.tokenizer import BertTokenizer
from bert_flow_tf.serving import export
from bert_flow_tf.serving import text_bound

RANGED = ("int8", "uint8")  # precisions whose codes need the calibration's int8 ranges


class ServedExport:
  """An export loaded for the server.

  Args:
    export_dir: str, an export (SentenceEncoder.export, run_flow.py --export_dir): checked complete and unchanged
      (ExportedEncoder), then its SavedModels are loaded and run (a trusted folder: docs/security.md).
    name: str or None, the model name clients send (default: the export folder's name).

  Attributes:
    name: str; dim: int D; max_seq_length: int; encoder: the ExportedEncoder.
    precisions: tuple of str, the `precision` values a request may ask ("float32" first).
    search_precisions: tuple of str, the search models the export holds ("float32": search/, "binary").
  """

  def __init__(self, export_dir, name=None):
    self.encoder = ExportedEncoder(export_dir)
    self.name = name or os.path.basename(os.path.normpath(export_dir))
    self.dim = self.encoder.dim
    self.max_seq_length = self.encoder.max_seq_length
    signatures = self.encoder.text_model.signatures
    self._serve = signatures["serving_default"]
    self._serve_counted = signatures.get(export.TOKEN_COUNTS_SIGNATURE)  # None: an export written before it
    ranged = RANGED if self.encoder.int8_ranges is not None else ()
    self.precisions = ("float32",) + ranged + ("binary", "ubinary")
    self.search_precisions = self.encoder.search_precisions
    vocab = os.path.join(export_dir, "text", str(self.encoder.version), "assets", "vocab.txt")
    self._tokenizer = BertTokenizer(vocab, self.encoder.info["do_lower_case"], self.max_seq_length)

  def embed(self, sentences):
    """float32 [n, D]: one run of the text model on a list of n str (the calibrated vectors)."""
    return self._serve(sentences=tf.constant(sentences, tf.string))["embeddings"].numpy()

  def embed_counted(self, sentences):
    """(float32 [n, D], np.int64 [n]): `embed` and `token_counts` of a list of n str in one TensorFlow call."""
    sentences = tf.constant(sentences, tf.string)
    if self._serve_counted is None:
      vectors, tokens = self._embed_tokenized_twice(sentences)
      return vectors.numpy(), tokens.numpy()
    out = self._serve_counted(sentences=sentences)
    return out["embeddings"].numpy(), out["token_counts"].numpy().astype(np.int64)

  def token_counts(self, sentences):
    """np.int64 [n]: the tokens the model reads of each sentence ([CLS] + pieces + [SEP], at most
    max_seq_length), counted by the export's own vocab and settings."""
    return self._count(tf.constant(sentences, tf.string)).numpy()

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def _embed_tokenized_twice(self, sentences):
    return self._serve(sentences=sentences)["embeddings"], self._counted(sentences)

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def _count(self, sentences):
    return self._counted(sentences)

  def _counted(self, sentences):
    """int64 [n], in a graph: see token_counts."""
    bounded = text_bound.bound_text(sentences, self.max_seq_length, self._tokenizer.do_lower_case)
    pieces = self._tokenizer.tokenize(bounded).row_lengths()
    return tf.minimum(pieces, self.max_seq_length - 2) + 2

  def request_output(self, calibrated, precision, dimensions):
    """One request's rows as `encode(..., precision=, truncate_dim=dimensions)` returns them (`SentenceCodes`).

    Args:
      calibrated: float32 [n, D], the request's rows of `embed`.
      precision: one of `precisions`.
      dimensions: int in 1..D or None.

    Returns:
      np.ndarray [n, D'] (float32, int8, uint8) or [n, ceil(D' / 8)] (binary int8, ubinary uint8).
    """
    codes = self.encoder.sentence_codes
    returned = codes.vectors(calibrated, dimensions)
    return codes.codes(calibrated, returned, precision, dimensions)

  def search(self, queries, top_k, precision, candidates):
    """ExportedEncoder.search: list of len(queries) lists of {"corpus_id", "score", "sentence"}, best first."""
    return self.encoder.search(queries, k=top_k, precision=precision, candidates=candidates)
