"""TF-Hub BERT encoders: writes ours as a reusable SavedModel, and loads any such encoder as a Keras layer.

The format is TF2's reusable SavedModel (https://www.tensorflow.org/hub/reusable_saved_models), as the TF-Hub
BERT encoders exported from tensorflow/models use it: the root object is callable as
`obj(inputs, training=False)` on a dict of int32 [B, S] `input_word_ids`, `input_mask`, `input_type_ids` and
returns a dict with `pooled_output` [B, H], `sequence_output` [B, S, H] and `encoder_outputs` (list of L
[B, S, H]); it has `variables`, `trainable_variables` and `regularization_losses`, and, like TF-Hub's BERT
encoders, `vocab_file` (an Asset, kept in `assets/`) and `do_lower_case` (a bool tf.Variable).

Dropout: the call is traced for `training=True` (dropout on, at the config's rates) and `training=False`. The
loaded encoder is wrapped in `hub.KerasLayer(..., trainable=True)`, which passes `training` through, so dropout
is active exactly when the wrapping layer is called with `training=True` (fine-tuning), as for BertEncoder.
"""
import os
import shutil
import tempfile

import tensorflow as tf
import tf_keras as keras

from bert_flow_tf.loaders.loaded_model import LoadedModel
from bert_flow_tf.modeling import packing
from bert_flow_tf.utils import saved_models

_OUTPUT_NAMES = ("pooled_output", "sequence_output", "encoder_outputs")


class _HubExport(tf.train.Checkpoint):
  """The saved root object. A tf.train.Checkpoint, because hub's attribute `variables` is a read-only property
  of tf.Module; the Checkpoint is only a trackable container here (nothing is written with its save())."""

  def __init__(self, encoder, vocab_file, do_lower_case):
    super().__init__()
    self.encoder = encoder
    self.variables = list(encoder.variables)
    self.trainable_variables = list(encoder.trainable_variables)
    self.regularization_losses = []
    if vocab_file is not None:
      self.vocab_file = tf.saved_model.Asset(vocab_file)
    self.do_lower_case = tf.Variable(do_lower_case, trainable=False, name="do_lower_case")
    self.__call__ = tf.function(self._call, autograph=False)

  def _call(self, inputs, training=False):
    outputs = self.encoder({name: inputs[name] for name in packing.INPUT_NAMES}, training=training)
    return {name: outputs[name] for name in _OUTPUT_NAMES}


def save_hub_encoder(encoder, out_dir, vocab_file=None, do_lower_case=True):
  """Writes a built BertEncoder as a TF-Hub-style BERT encoder SavedModel (see the module notes).

  Args:
    encoder: a built BertEncoder (or any layer with its call contract).
    out_dir: str. SavedModel directory (`saved_model.pb`, `variables/`, `assets/`).
    vocab_file: str or None. Stored as `assets/vocab.txt` and as the `vocab_file` attribute.
    do_lower_case: bool. Stored as the `do_lower_case` attribute.
  """
  if not encoder.built:
    raise ValueError("save_hub_encoder needs a built encoder (load weights or call build_variables())")
  with tempfile.TemporaryDirectory() as tmp:
    if vocab_file is not None and os.path.basename(vocab_file) != "vocab.txt":
      # The asset keeps its file name in assets/; TF-Hub's BERT encoders call it vocab.txt.
      vocab_file = shutil.copyfile(vocab_file, os.path.join(tmp, "vocab.txt"))
    export = _HubExport(encoder, vocab_file, do_lower_case)
    specs = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in packing.INPUT_NAMES}
    for training in (True, False):
      export.__call__.get_concrete_function(specs, training=training)
    tf.saved_model.save(export, out_dir)


class HubEncoder(keras.layers.Layer):
  """A TF-Hub BERT encoder SavedModel as a Keras layer with BertEncoder's outputs, except `embedding_output`.

  Call args:
    inputs: dict of int32 [B, S] `input_word_ids`, `input_mask`, `input_type_ids`.
    training: bool. Dropout is active only when True.

  Returns a dict: `encoder_outputs` (list of L float32 [B, S, H]), `sequence_output` [B, S, H] and
  `pooled_output` [B, H]. TF-Hub encoders do not expose the embedding layer, so `emb-avg`-type poolings fail
  with a clear error in `pooling_ops.pool`.
  """

  def __init__(self, saved_model, **kwargs):
    super().__init__(**kwargs)
    # Imported here, not at the top: with pkg_resources it costs every process ~0.2 s, and only this layer uses it.
    import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
    self.hub_layer = hub.KerasLayer(saved_model, trainable=True, name="hub_encoder")

  def call(self, inputs, training=False):
    outputs = self.hub_layer({name: inputs[name] for name in packing.INPUT_NAMES}, training=training)
    return {"encoder_outputs": list(outputs["encoder_outputs"]), "sequence_output": outputs["sequence_output"],
            "pooled_output": outputs["pooled_output"]}


def _asset_path(saved_model):
  if not hasattr(saved_model, "vocab_file"):
    return None
  return saved_model.vocab_file.asset_path.numpy().decode("utf-8")


def _find_vocab(model_dir, saved_model, vocab_file, preprocess_dir):
  """The vocabulary: the argument, the model's `vocab_file` asset, its assets/vocab.txt, or the preprocess
  model's assets/vocab.txt, in this order."""
  if vocab_file is not None:
    if not os.path.isfile(vocab_file):
      raise FileNotFoundError(f"vocab file not found: {vocab_file}")
    return vocab_file
  candidates = [_asset_path(saved_model), os.path.join(model_dir, "assets", "vocab.txt")]
  if preprocess_dir is not None:
    candidates.append(os.path.join(preprocess_dir, "assets", "vocab.txt"))
  for path in candidates:
    if path is not None and os.path.isfile(path):
      return path
  looked = ["the model's vocab_file attribute"] + candidates[1:]
  raise FileNotFoundError(f"{model_dir}: no WordPiece vocabulary found; looked at {', '.join(looked)}. Pass "
                          "vocab_file=, or preprocess_dir= (the matching TF-Hub bert_*_preprocess SavedModel).")


def load_hub_model(model_dir, vocab_file=None, do_lower_case=None, source=None, preprocess_dir=None):
  """Loads a TF-Hub BERT encoder SavedModel (ours or TF-Hub's) as a LoadedModel.

  Args:
    model_dir: str. The SavedModel directory.
    vocab_file: str or None. None looks in the model (see `_find_vocab`).
    do_lower_case: bool or None. None reads the model's `do_lower_case` attribute, else True.
    source: str or None. Recorded as LoadedModel.source (default `model_dir`).
    preprocess_dir: str or None. A TF-Hub `bert_*_preprocess` SavedModel to take the vocabulary from.

  Returns:
    LoadedModel with format "tfhub" and config None; L and H are read from the outputs of one dummy call.
  """
  saved_model = saved_models.load(model_dir)  # a damaged SavedModel: one line naming its file
  vocab = _find_vocab(model_dir, saved_model, vocab_file, preprocess_dir)
  if do_lower_case is None:
    do_lower_case = bool(saved_model.do_lower_case.numpy()) if hasattr(saved_model, "do_lower_case") else True
  encoder = HubEncoder(saved_model)
  ids = tf.zeros([1, 2], tf.int32)
  outputs = encoder(packing.input_dict(ids, tf.ones_like(ids)))
  return LoadedModel(encoder, num_layers=len(outputs["encoder_outputs"]),
                             hidden_size=int(outputs["sequence_output"].shape[-1]), vocab_file=vocab,
                             do_lower_case=do_lower_case, source=source or model_dir, format="tfhub",
                             files=model_dir)
