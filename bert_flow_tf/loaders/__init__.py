"""Loads a BERT encoder and its vocabulary from a local directory, detecting the format.

Formats (one module each): google-research TF1 checkpoints (`tf1_checkpoint.py`), HF-format directories with
safetensors (`safetensors.py`) and TF-Hub encoder SavedModels (`tfhub.py`).
"""
import dataclasses
import os

from bert_flow_tf import presets


@dataclasses.dataclass
class LoadedModel:
  """An encoder ready to call, with what tokenizing for it needs.

  Attributes:
    encoder: a Keras layer mapping the dict of int32 [B, S] inputs (`input_word_ids`, `input_mask`,
      `input_type_ids`) to a dict with `encoder_outputs` (list of L [B, S, H]), `sequence_output`,
      `pooled_output` and, for our BertEncoder, `embedding_output`.
    num_layers: int. L.
    hidden_size: int. H.
    vocab_file: str. WordPiece vocabulary.
    do_lower_case: bool.
    source: str. The directory (or preset name) it came from; part of cache keys.
    format: str. "tf1", "hf" or "tfhub".
    config: BertConfig or None (None for TF-Hub encoders, whose config is not stored).
  """
  encoder: object
  num_layers: int
  hidden_size: int
  vocab_file: str
  do_lower_case: bool
  source: str
  format: str
  config: object = None


def _require(path):
  if not os.path.exists(path):
    raise FileNotFoundError(f"not found: {path}")
  return path


def detect_format(model_dir):
  """"tf1", "hf" or "tfhub" from the files in `model_dir`; a clear error when none fits."""
  has = lambda name: os.path.exists(os.path.join(model_dir, name))
  if not os.path.isdir(model_dir):
    raise FileNotFoundError(f"model directory not found: {model_dir}")
  if has("bert_config.json"):
    return "tf1"
  if has("config.json"):
    return "hf"
  if has("saved_model.pb"):
    return "tfhub"
  raise ValueError(f"{model_dir}: not a BERT model directory; expected bert_config.json + bert_model.ckpt.* "
                   "(TF1), config.json + model.safetensors (HF) or saved_model.pb (TF-Hub encoder)")


def load_model(model_dir, do_lower_case=None, vocab_file=None, init_checkpoint=None, preprocess_dir=None):
  """Loads the encoder in `model_dir` (a path or a preset name such as "all-minilm-l6-v2").

  Args:
    model_dir: str. Directory or preset name.
    do_lower_case: bool or None. None reads it from the model files where they say, else True.
    vocab_file: str or None. Overrides `<model_dir>/vocab.txt` (TF-Hub encoders keep theirs in assets/).
    init_checkpoint: str or None. TF1 only: a checkpoint prefix other than `<model_dir>/bert_model.ckpt`.
    preprocess_dir: str or None. TF-Hub only: a matching preprocess SavedModel whose assets hold the vocab.
  """
  source = model_dir
  model_dir = presets.resolve(model_dir)
  fmt = detect_format(model_dir)
  if fmt == "tf1":
    from bert_flow_tf.loaders import tf1_checkpoint
    encoder, config = tf1_checkpoint.load_tf1_encoder(
        os.path.join(model_dir, "bert_config.json"),
        init_checkpoint or os.path.join(model_dir, "bert_model.ckpt"))
    vocab = vocab_file or _require(os.path.join(model_dir, "vocab.txt"))
    lower = True if do_lower_case is None else do_lower_case
    return LoadedModel(encoder, config.num_hidden_layers, config.hidden_size, vocab, lower, source, fmt, config)
  if fmt == "hf":
    from bert_flow_tf.loaders import safetensors
    encoder, config = safetensors.load_hf_encoder(model_dir)
    vocab = vocab_file or _require(os.path.join(model_dir, "vocab.txt"))
    lower = safetensors.read_do_lower_case(model_dir) if do_lower_case is None else do_lower_case
    return LoadedModel(encoder, config.num_hidden_layers, config.hidden_size, vocab, lower, source, fmt, config)
  from bert_flow_tf.loaders import tfhub
  return tfhub.load_hub_model(model_dir, vocab_file=vocab_file, do_lower_case=do_lower_case, source=source,
                              preprocess_dir=preprocess_dir)


def load_tf1_files(bert_config_file, vocab_file, init_checkpoint, do_lower_case=True):
  """The original's flags `--bert_config_file --vocab_file --init_checkpoint` as one LoadedModel."""
  from bert_flow_tf.loaders import tf1_checkpoint
  encoder, config = tf1_checkpoint.load_tf1_encoder(bert_config_file, init_checkpoint)
  return LoadedModel(encoder, config.num_hidden_layers, config.hidden_size, _require(vocab_file), do_lower_case,
                     init_checkpoint, "tf1", config)
