"""Servable SavedModels: sentences -> (flow-calibrated) sentence embeddings.

`export_models` writes two SavedModels in TF Serving's layout (`<base>/<version>/`) plus a description:

  <export_dir>/text/<version>/   strings in; tokenizer -> BERT -> pooling -> flow, all in the graph.
      serving_default: sentences string [B]                       -> embeddings float32 [B, D]
      similarity:      sentences_a, sentences_b string [B]         -> cosine float32 [B]
      with_token_counts: sentences string [B] -> embeddings float32 [B, D], token_counts int32 [B] (the tokens read)
  <export_dir>/ids/<version>/    tokenizer-free (no TF.Text ops), for servers built without them.
      serving_default: input_word_ids, input_mask, input_type_ids int32 [B, S] -> embeddings float32 [B, D]
  <export_dir>/search/<version>/ and binary_search/<version>/: the text model and a corpus, searched in the graph
      (serving/search_model.py, quantization/binary_search_model.py).
  <export_dir>/export_info.json  model source, pooling, max_seq_length, do_lower_case, calibration, flow config, D;
      and, written last, every other file's SHA-256 (serving/export_folder.py).

Each SavedModel carries TF Serving warm-up requests in `assets.extra/` (bert_flow_tf.serving.warmup) when
tensorflow-serving-api is installed (the `serving` extra); without it the models are written without them and a
warning says so (the server then pays for its first requests' graph optimization). The text
model's root is also callable (tf.string [B] -> float32 [B, D]), so `hub.KerasLayer(<export_dir>/text/<version>)`
works without naming a signature.

The text model pads each batch to its longest sentence (word pieces + [CLS] + [SEP]), capped at max_seq_length;
longer sentences are cut as in `SentenceEmbedder`. Poolings mask the padding, so the padded length changes the
result only by float rounding (well below 1e-5). With no flow the embedding is the pooled BERT vector; with a
flow it is the flow's z (all levels' latents concatenated, width D); with an `Affine` (whitening(-k) and the other
baselines) it is (x - center) W + offset, width D' (whitening-k: k).

The export is written whole (serving/export_folder.py): every part in a hidden folder beside export_dir, then
export_info.json, with each file's SHA-256, last, then one rename; a crash leaves no export_dir (or the previous one).
An existing export is replaced whole only with `overwrite=True`, and only if it holds nothing but an export's
parts (docs/security.md).

Legend: B = batch size, S = padded length, D = embedding width.
"""
import os
import types

import numpy as np
import tensorflow as tf
from absl import logging

from bert_flow_tf import search
from bert_flow_tf.serving import export_folder
from bert_flow_tf.serving import graph_calibration
from bert_flow_tf.serving import text_bound
from bert_flow_tf.modeling import packing
from bert_flow_tf.modeling import pooling_ops
from bert_flow_tf.utils import io_utils

TOKEN_COUNTS_SIGNATURE = "with_token_counts"  # the text model's embeddings with each sentence's tokens
# What a version folder holds (tf.saved_model.save, then the warm-up requests), saved_model.pb first.
SAVED_MODEL_FILES = ("saved_model.pb", "variables", "assets", "assets.extra", "fingerprint.pb")
_IDS_SPEC = tf.TensorSpec([None, None], tf.int32)
TEXT_SPEC = tf.TensorSpec([None], tf.string)


class IdsEmbedder(tf.Module):
  """BERT + pooling + optional flow on packed ids; the tokenizer-free SavedModel's root."""

  def __init__(self, embedder, calibration):
    super().__init__(name="ids_embedder")
    # The Keras layers sit in an untracked namespace and only their variables are tracked: saving a tracked
    # Keras layer would also trace and store every sublayer's call (slow, and nothing serving uses).
    self._layers = types.SimpleNamespace(encoder=embedder.encoder, calibration=calibration,
                                         pooling_spec=embedder.pooling_spec)
    self.weights = list(embedder.encoder.variables) + ([] if calibration is None else
                                                       list(calibration.variables))
    # The vocab ships in assets/ so clients can tokenize; the settings they need to match it are variables.
    self.vocab_file = embedder.tokenizer.vocab_file
    self.do_lower_case = tf.Variable(embedder.tokenizer.do_lower_case, trainable=False,
                                     name="do_lower_case")
    self.max_seq_length = tf.Variable(embedder.max_seq_length, trainable=False, name="max_seq_length")

  def embed_ids(self, inputs):
    """Dict of int32 [B, S] -> float32 [B, D]: pooled encoder outputs, through the flow when there is one."""
    outputs = self._layers.encoder(inputs, training=False)
    x = pooling_ops.pool(self._layers.pooling_spec, outputs, inputs["input_mask"])  # [B, D]
    if self._layers.calibration is None:
      return x
    z, _ = self._layers.calibration(x, training=False)
    return z

  # The signatures here trace without AutoGraph (as tokenizer.tokenize): nothing under them branches on a tensor,
  # and converting the encoder's Keras calls took 1.6 s of each export of the MiniLM preset.
  @tf.function(input_signature=[_IDS_SPEC, _IDS_SPEC, _IDS_SPEC], autograph=False)
  def serve_ids(self, input_word_ids, input_mask, input_type_ids):
    return {"embeddings": self.embed_ids(packing.input_dict(input_word_ids, input_mask, input_type_ids))}


class TextEmbedder(IdsEmbedder):
  """The ids embedder behind the in-graph tokenizer; the text SavedModel's root.

  It follows TF-Hub's Reusable SavedModel API: a callable root plus `variables` and `trainable_variables`
  saved as lists, which `hub.KerasLayer` adds as its weights.
  """
  # Plain attributes instead of tf.Module's computed properties, so that they are saved with the model.
  variables = None
  trainable_variables = None

  def __init__(self, embedder, calibration, quantizer=None):
    super().__init__(embedder, calibration)
    self.tokenizer = embedder.tokenizer
    self.quantizer = quantizer  # quantization.graph_quantizer.GraphQuantizer: serve_text's extra outputs, or None
    self.variables = list(self.weights) + [self.do_lower_case, self.max_seq_length]
    self.trainable_variables = [v for v in self.variables if v.trainable]

  def packed_text(self, sentences):
    """tf.string [B] -> the encoder's input dict, int32 [B, S]: each batch padded to its longest sentence (capped at
    max_seq_length)."""
    bounded = text_bound.bound_text(sentences, self.tokenizer.max_seq_length, self.tokenizer.do_lower_case)
    return packing.pack_to_longest(self.tokenizer, self.tokenizer.tokenize(bounded))

  @tf.function(input_signature=[TEXT_SPEC], autograph=False)
  def embed_and_count(self, sentences):
    """tf.string [B] -> (float32 [B, D], int32 [B] the tokens the model read of each sentence: [CLS] + word pieces
    + [SEP], at most max_seq_length). One function that every text signature calls, so the SavedModel traces and
    stores the tokenizer and the encoder once."""
    inputs = self.packed_text(sentences)
    return self.embed_ids(inputs), tf.reduce_sum(inputs["input_mask"], axis=1)

  def embed_text(self, sentences):
    """tf.string [B] -> float32 [B, D]."""
    return self.embed_and_count(sentences)[0]

  @tf.function(input_signature=[TEXT_SPEC], autograph=False)
  def serve_text(self, sentences):
    embeddings = self.embed_text(sentences)
    return {"embeddings": embeddings, **(self.quantizer(embeddings) if self.quantizer else {})}

  @tf.function(input_signature=[TEXT_SPEC], autograph=False)
  def serve_text_with_token_counts(self, sentences):
    """serving_default's embeddings and the tokens the model read of each sentence (`embed_and_count`): an HTTP
    server's usage from the same tokenization."""
    embeddings, token_counts = self.embed_and_count(sentences)
    return {"embeddings": embeddings, "token_counts": token_counts}

  @tf.function(input_signature=[TEXT_SPEC], autograph=False)
  def __call__(self, sentences):
    """tf.string [B] -> float32 [B, D]; what `hub.KerasLayer` calls when given no signature."""
    return self.embed_text(sentences)

  @tf.function(input_signature=[TEXT_SPEC, TEXT_SPEC], autograph=False)
  def serve_similarity(self, sentences_a, sentences_b):
    with tf.control_dependencies([tf.debugging.assert_equal(
        tf.size(sentences_a), tf.size(sentences_b),
        message="similarity needs sentences_a and sentences_b of the same length")]):
      a = self.embed_text(sentences_a)  # [B, D]
    b = self.embed_text(sentences_b)  # [B, D]
    norms = tf.maximum(tf.norm(a, axis=1), search.COSINE_EPS) * tf.maximum(tf.norm(b, axis=1), search.COSINE_EPS)
    return {"cosine": tf.reduce_sum(a * b, axis=1) / norms}


def check_version(version):
  if isinstance(version, bool) or not isinstance(version, int) or version < 1:
    raise ValueError(f"version must be an int >= 1 (a TF Serving version directory), got {version!r}")


def export_models(embedder, calibration, export_dir, version=1, overwrite=False, quantizer=None,
                  truncation_order=None, int8_ranges=None, normalize=False):
  """Writes the text and ids SavedModels and export_info.json as export_dir, whole (export_folder.write).

  Args:
    embedder: bert_flow_tf.embedding.embedder.SentenceEmbedder (its tokenizer, encoder, pooling, max_seq_length).
    calibration: what the models chain after the pooling: a glow.Glow over width D = embedder.dim (its z is the
      embedding) or a RotatedFlow (z turned to its principal axes), an Affine over width D (a baseline
      calibration), or None for the raw pooled vectors.
    export_dir: str. Base directory.
    version: int >= 1. TF Serving version directory name.
    overwrite: bool. Replace an existing export whole (a folder holding anything else is refused); otherwise a
      folder that is not empty is an error.
    quantizer, truncation_order, int8_ranges, normalize: as `write_models`.

  Returns:
    dict: "text" and "ids" (the SavedModel directories) and "info" (the JSON file).

  Raises:
    ValueError: a bad version, or a flow whose width is not D.
    errors.UserError: export_dir may not be replaced.
  """
  check_models(embedder, calibration, version)
  return export_folder.write(export_dir, overwrite, lambda folder: write_models(
      embedder, calibration, folder, version, quantizer, truncation_order, int8_ranges, normalize))


def check_models(embedder, calibration, version):
  """Raises ValueError for a bad version or a calibration whose width is not the embedder's."""
  check_version(version)
  if calibration is not None and calibration.dim != embedder.dim:
    raise ValueError(f"flow width {calibration.dim} != embedding width D={embedder.dim} "
                     f"({embedder.pooling_spec.describe()})")


def write_models(embedder, calibration, folder, version=1, quantizer=None, truncation_order=None, int8_ranges=None,
                 normalize=False):
  """Writes the text and ids SavedModels under `folder` (an export's staging folder: export_folder.write).

  Args:
    embedder, calibration: as `export_models`.
    folder: str, an empty folder.
    version: int >= 1.
    quantizer: a quantization.graph_quantizer.GraphQuantizer, or None: the text model's serving_default also returns
      its outputs ("embeddings_int8", ...: the embeddings in sentence-transformers' quantized layouts).
    truncation_order: int [D] or None, the calibration's truncation order (`quantization.truncation`), recorded in
      export_info.json for an ExportedEncoder's truncate_dim.
    int8_ranges: float [2, D] or None, the calibration's int8 ranges, recorded in export_info.json for an
      ExportedEncoder's precision codes (`sentence_codes`: the same as the quantizer's outputs).
    normalize: bool, the model ends with a Normalize (recorded: an ExportedEncoder's `encode` applies it; the
      SavedModels return the calibrated vectors, which `embeddings_int8` and the rest quantize).

  Returns:
    (dict, dict): export_info.json's fields, and "text" and "ids" (the SavedModel directories).
  """
  paths = {kind: os.path.join(folder, kind, str(version)) for kind in ("text", "ids")}
  warmup = warmup_module()
  text = TextEmbedder(embedder, calibration, quantizer)
  save_atomically(text, paths["text"], {"serving_default": text.serve_text,
                                         "similarity": text.serve_similarity,
                                         TOKEN_COUNTS_SIGNATURE: text.serve_text_with_token_counts},
                   warmup and warmup.text_model_logs())
  ids = IdsEmbedder(embedder, calibration)
  save_atomically(ids, paths["ids"], {"serving_default": ids.serve_ids},
                   warmup and warmup.ids_model_logs(embedder.tokenizer))
  info = export_info(embedder, calibration, version)
  if quantizer:
    info["precisions"] = list(quantizer.precisions)
  if truncation_order is not None:
    info["truncation_order"] = [int(i) for i in truncation_order]
  if int8_ranges is not None:
    info["int8_ranges"] = np.asarray(int8_ranges, np.float32).tolist()
  info["normalize"] = bool(normalize)
  return info, paths


def export_info(embedder, calibration, version):
  """The JSON-ready description written to export_info.json."""
  model = embedder.loaded
  affine = isinstance(calibration, graph_calibration.Affine)
  return {
      "model_source": str(model.source),
      "model_format": model.format,
      "do_lower_case": bool(model.do_lower_case),
      "pooling": embedder.pooling_spec.name,
      "pooling_description": embedder.pooling_spec.describe(),
      "max_seq_length": embedder.max_seq_length,
      "padding": "each batch to its longest sentence, capped at max_seq_length",
      "dim": calibration.output_dim if affine else embedder.dim,
      "calibration": calibration.method if affine else None if calibration is None else "flow",
      "flow": None if calibration is None or affine else {
          "config": calibration.config.to_dict(), "dim": calibration.dim, "init": calibration.init,
          "principal_axes": isinstance(calibration, graph_calibration.RotatedFlow)},
      "version": version,
      "signatures": {
          "text": {"serving_default": "sentences string [B] -> embeddings float32 [B, D]",
                   "similarity": "sentences_a, sentences_b string [B] -> cosine float32 [B]",
                   TOKEN_COUNTS_SIGNATURE: "sentences string [B] -> embeddings float32 [B, D], "
                                           "token_counts int32 [B]"},
          "ids": {"serving_default": "input_word_ids, input_mask, input_type_ids int32 [B, S] -> "
                                     "embeddings float32 [B, D]"},
      },
  }


def warmup_module():
  """bert_flow_tf.serving.warmup, or None (with a warning) when tensorflow-serving-api is not installed."""
  try:
    from bert_flow_tf.serving import warmup  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  except ImportError as e:
    logging.warning("exporting without TF Serving warm-up requests: %s (pip install 'bert-flow-tf[serving]')", e)
    return None
  return warmup


def save_atomically(module, path, signatures, warmup_logs=None):
  """tf.saved_model.save and the warm-up records into a temporary sibling of `path`, then renames it onto `path`.

  Args:
    module: the tf.Module to save.
    path: str, the SavedModel directory.
    signatures: dict name -> tf.function.
    warmup_logs: list of PredictionLog (bert_flow_tf.serving.warmup), or None for no warm-up file.
  """
  # Reached for a new version, or one to overwrite: replaced only if it is a SavedModel (what an export writes).
  with io_utils.atomic_dir(path, own=SAVED_MODEL_FILES, remedy="remove it") as tmp:
    tf.saved_model.save(module, tmp, signatures=signatures)
    if warmup_logs:
      warmup_module().write(tmp, warmup_logs)

