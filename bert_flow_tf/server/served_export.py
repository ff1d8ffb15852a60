"""ServedExport: an export's text model (and its search models) as the server runs them, a batch at a time.

One call of `embed` runs the text SavedModel's serving_default on a batch of sentences from any number of requests
and returns everything a request may ask of it: the float32 vectors, the codes the export computes in its graph
with the calibration's saved int8 ranges (`export(..., precisions=...)`: "embeddings_int8", ...), and each
sentence's token count. `request_output` then cuts one request's rows as `encode(..., truncate_dim=, precision=)`
does, so a sentence's answer does not depend on what else was in its batch:

  dimensions  the calibration's truncation order (`calibration.truncation.kept`, export_info.json's
              truncation_order; without one the first dimensions)
  int8/uint8  the graph's codes with the calibration's ranges, cut to the kept dimensions (each dimension is
              quantized on its own, so the cut of the codes is the codes of the cut)
  binary/ubinary  the sign bits of the (cut) vectors, packed per row (`quantization.quantize_embeddings`)

Legend: n = sentences, D = the export's width, D' = a request's dimensions.
"""
import os

import numpy as np
import tensorflow as tf

from bert_flow_tf import quantization
from bert_flow_tf.calibration import truncation
from bert_flow_tf.exported_encoder import ExportedEncoder
from bert_flow_tf.modeling.tokenizer import BertTokenizer
from bert_flow_tf.serving import text_bound

RANGED = ("int8", "uint8")  # precisions whose codes need the calibration's int8 ranges


class ServedExport:
  """An export loaded for the server.

  Args:
    export_dir: str, an export (SentenceEncoder.export, run_flow.py --export_dir): its SavedModels are loaded and
      run (a trusted folder: docs/security.md).
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
    self._serve = self.encoder.text_model.signatures["serving_default"]
    graph_codes = tuple(p for p in self.encoder.info.get("precisions", ()) if p in RANGED)
    self.precisions = ("float32",) + graph_codes + ("binary", "ubinary")
    self.search_precisions = tuple(p for p, model in (("float32", self.encoder.search_model),
                                                      ("binary", self.encoder.binary_search_model)) if model)
    vocab = os.path.join(export_dir, "text", str(self.encoder.version), "assets", "vocab.txt")
    self._tokenizer = BertTokenizer(vocab, self.encoder.info["do_lower_case"], self.max_seq_length)

  def embed(self, sentences):
    """One run of the text model.

    Args:
      sentences: list of n str.

    Returns:
      (float32 [n, D], dict precision -> codes [n, D] of the graph's ranged precisions).
    """
    out = self._serve(sentences=tf.constant(sentences, tf.string))
    codes = {p: out[f"embeddings_{p}"].numpy() for p in self.precisions if p in RANGED}
    return out["embeddings"].numpy(), codes

  def token_counts(self, sentences):
    """np.int64 [n]: the tokens the model reads of each sentence ([CLS] + pieces + [SEP], at most
    max_seq_length), counted by the export's own vocab and settings."""
    return self._count(tf.constant(sentences, tf.string)).numpy()

  @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
  def _count(self, sentences):
    bounded = text_bound.bound_text(sentences, self.max_seq_length, self._tokenizer.do_lower_case)
    pieces = self._tokenizer.tokenize(bounded).row_lengths()
    return tf.minimum(pieces, self.max_seq_length - 2) + 2

  def kept(self, dimensions):
    """The dimensions a request's `dimensions` keeps (index for the last axis): `truncation.kept`."""
    return truncation.kept(self.encoder.truncation_order, dimensions, self.dim)

  def request_output(self, vectors, codes, precision, dimensions):
    """One request's rows as `encode(..., precision=, truncate_dim=dimensions)` returns them.

    Args:
      vectors: float32 [n, D], codes: dict as from `embed` (the request's rows).
      precision: one of `precisions`.
      dimensions: int in 1..D or None.

    Returns:
      np.ndarray [n, D'] (float32, int8, uint8) or [n, ceil(D' / 8)] (binary int8, ubinary uint8).
    """
    kept = self.kept(dimensions)
    if precision in RANGED:
      return codes[precision][:, kept]
    return quantization.quantize_embeddings(vectors[:, kept], precision)

  def search(self, queries, top_k, precision, candidates):
    """ExportedEncoder.search: list of len(queries) lists of {"corpus_id", "score", "sentence"}, best first."""
    return self.encoder.search(queries, k=top_k, precision=precision, candidates=candidates)
