"""The calibrated sentence encoder as LiteRT (.tflite) files that MediaPipe's TextEmbedder loads as they are.

  <export_dir>/litert/model.tflite        float32 weights
  <export_dir>/litert/model_int8.tflite   dynamic-range int8 weights (activations stay float; the kernels quantize
                                          them per call)

Each file computes, from token ids, what `SentenceEncoder.encode` returns: BERT, the pooling, the calibration (a
flow, on its principal axes, or a `graph_calibration.Affine`), the model's Normalize (`normalize`), then
`truncate_dim` dimensions (the first, or a saved truncation order's: `quantization.truncation`).

  inputs   ids, mask, segment_ids: int32 [B, S] (B and S free), `[CLS] pieces [SEP]` then padding (mask 0)
  output   embedding: float32 [B, D']

A row longer than max_seq_length is cut in the graph as our tokenizer cuts it: its first max_seq_length - 1 ids,
then [SEP]. MediaPipe's BERT preprocessor sends one sentence at a time, unpadded and uncut (B = 1, S = pieces + 2:
its "dynamic input tensors", which it chooses because S is -1 in the inputs' shape signature).

The metadata (MediaPipe's metadata_writers) names the three inputs `ids`, `mask` and `segment_ids`, holds the
BERT tokenizer as an input process unit with the model's vocab.txt packed into the file, and describes the output
as a feature vector; `mediapipe.tasks.python.text.TextEmbedder.create_from_options` needs nothing else. The
tokenizer MediaPipe runs from it differs from ours where docs/serving.md (LiteRT) says.

Converter: tf.lite.TFLiteConverter of TensorFlow (deprecated in favour of LiteRT's tools, but still the one that
converts a tf.function); builtin ops only, so that every LiteRT runtime runs the files. Interpreter: ai-edge-litert.

Legend: B = batch size, S = padded length, D' = the output width.
"""
import os
import sys
import types

import tensorflow as tf

from bert_flow_tf import search
from bert_flow_tf.serving import export as export_lib
from bert_flow_tf.serving import graph_calibration
from bert_flow_tf.utils import io_utils

KIND = "litert"
FP32_FILE = "model.tflite"
INT8_FILE = "model_int8.tflite"
INPUT_NAMES = ("ids", "mask", "segment_ids")
OUTPUT_NAME = "embedding"
_IDS_SPEC = tf.TensorSpec([None, None], tf.int32)
# The newest metadata schema field `with_metadata` writes: BertTokenizerOptions, "Added in: 1.1.0"
# (mediapipe/tasks/metadata/metadata_schema.fbs).
MIN_PARSER_VERSION = "1.1.0"
_VERSION_MODULE = "mediapipe.tasks.cc.metadata.python._pywrap_metadata_version"


class _LiteRtEmbedder(export_lib.IdsEmbedder):
  """The ids embedder with MediaPipe's input names, the cut to max_seq_length, Normalize and truncate_dim."""

  def __init__(self, embedder, calibration, normalize, dims):
    super().__init__(embedder, calibration)
    self._cut_length = embedder.max_seq_length
    self._sep_id = embedder.tokenizer.sep_id
    self._normalize = normalize
    self._dims = None if dims is None else tf.constant(dims, tf.int32)  # [D'] or None (all)

  def _cut(self, ids, mask, segment_ids):
    """Rows longer than max_seq_length L -> their first L - 1 ids and [SEP]; int32 [B, S] -> [B, min(S, L)]."""
    length = self._cut_length
    long_rows = tf.reduce_sum(mask, axis=1, keepdims=True) > length  # [B, 1]
    last = tf.where(long_rows, tf.constant(self._sep_id, tf.int32), ids[:, length - 1:length])  # [B, 0 or 1]
    return tf.concat([ids[:, :length - 1], last], axis=1), mask[:, :length], segment_ids[:, :length]

  @tf.function(input_signature=[_IDS_SPEC, _IDS_SPEC, _IDS_SPEC], autograph=False)
  def serve(self, ids, mask, segment_ids):
    ids, mask, segment_ids = self._cut(ids, mask, segment_ids)
    x = self.embed_ids({"input_word_ids": ids, "input_mask": mask, "input_type_ids": segment_ids})  # [B, D]
    if self._normalize:
      x = x / tf.maximum(tf.norm(x, axis=1, keepdims=True), search.COSINE_EPS)
    if self._dims is not None:
      x = tf.gather(x, self._dims, axis=1)  # [B, D']
    return {OUTPUT_NAME: x}


def convert(module, int8):
  """The .tflite bytes of `module.serve` (builtin ops only); int8: dynamic-range int8 weights."""
  function = module.serve.get_concrete_function()
  converter = tf.lite.TFLiteConverter.from_concrete_functions([function], module)
  converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
  if int8:
    converter.optimizations = [tf.lite.Optimize.DEFAULT]  # no representative data: weights only
  return converter.convert()


def _metadata_writer():
  """mediapipe's metadata_writer module.

  mediapipe 1.2's metadata.py still imports the pybind module that computed the metadata's minimum parser version,
  which its wheels no longer ship (the rest moved to its C library); where that import fails, a stand-in module
  answers MIN_PARSER_VERSION, the version of the newest field written here.
  """
  try:
    __import__(_VERSION_MODULE)
  except ImportError:
    parts = _VERSION_MODULE.split(".")
    for depth in range(3, len(parts) + 1):  # mediapipe.tasks.cc, ... (mediapipe.tasks exists)
      sys.modules.setdefault(".".join(parts[:depth]), types.ModuleType(".".join(parts[:depth])))
    stand_in = sys.modules[_VERSION_MODULE]
    stand_in.GetMinimumMetadataParserVersion = lambda metadata: MIN_PARSER_VERSION
    setattr(sys.modules[".".join(parts[:-1])], parts[-1], stand_in)
  from mediapipe.tasks.python.metadata.metadata_writers import metadata_writer  # pylint: disable=import-outside-toplevel
  return metadata_writer


def with_metadata(model, vocab_file, description):
  """`model` (.tflite bytes) with MediaPipe's text embedder metadata: BERT tokenizer on `vocab_file` (packed in)."""
  metadata_writer = _metadata_writer()
  writer = metadata_writer.MetadataWriter.create(bytearray(model))
  writer.add_general_info("bert_flow_tf sentence encoder", description)
  writer.add_bert_text_input(metadata_writer.BertTokenizer(vocab_file), *_input_tensor_names(model))
  writer.add_feature_output(OUTPUT_NAME, "The sentence embedding, float32 [1, D].")
  model = bytes(writer.populate()[0])
  del writer  # its __del__ removes a temporary folder: now, not at interpreter exit (where it fails)
  return model


def _input_tensor_names(model):
  """The converted model's tensor names of the signature's inputs, in INPUT_NAMES' order ("serving_default_ids:0",
  ...: the converter prefixes them)."""
  from ai_edge_litert import interpreter as litert  # pylint: disable=import-outside-toplevel
  inputs = litert.Interpreter(model_content=model).get_signature_runner().get_input_details()  # name -> details
  return [inputs[name]["name"] for name in INPUT_NAMES]


def export_litert(embedder, calibration, export_dir, normalize=False, dims=None, overwrite=False):
  """Writes export_dir/litert/ (FP32_FILE, INT8_FILE), atomically.

  Args:
    embedder: bert_flow_tf.embedding.embedder.SentenceEmbedder.
    calibration: a glow.Glow, a graph_calibration.RotatedFlow, a graph_calibration.Affine or None (as
      export.export_models).
    export_dir: str.
    normalize: bool, unit length after the calibration (the model's Normalize).
    dims: int [D'] or None, the calibrated dimensions kept, in order (quantization.truncation.kept_indices).
    overwrite: bool, replace an existing litert/ (only if it holds nothing but these files); otherwise it is an
      error.

  Returns:
    dict: "fp32" and "int8", the two files' paths.

  Raises:
    FileExistsError: litert/ exists and overwrite is False.
    errors.UserError: litert/ holds other files.
  """
  path = os.path.join(export_dir, KIND)
  if os.path.exists(path) and not overwrite:
    raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
  module = _LiteRtEmbedder(embedder, calibration, normalize, dims)
  description = (f"{embedder.pooling_spec.describe()}; calibration: {_calibration_name(calibration)}; "
                 f"normalize: {bool(normalize)}; dims: {'all' if dims is None else len(dims)}; "
                 f"max_seq_length: {embedder.max_seq_length}")
  vocab_file = embedder.tokenizer.vocab_file.asset_path.numpy().decode("utf-8")
  with io_utils.atomic_dir(path, own=(FP32_FILE, INT8_FILE), remedy="remove it") as tmp:
    for name, int8 in ((FP32_FILE, False), (INT8_FILE, True)):
      with open(os.path.join(tmp, name), "wb") as f:
        f.write(with_metadata(convert(module, int8), vocab_file, description))
  return {"fp32": os.path.join(path, FP32_FILE), "int8": os.path.join(path, INT8_FILE)}


def _calibration_name(calibration):
  if calibration is None:
    return "none"
  return calibration.method if isinstance(calibration, graph_calibration.Affine) else "flow"
