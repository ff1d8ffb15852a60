"""Loads a BERT encoder and its vocabulary from a local directory or preset, detecting the format (the package's
`load_model`, `load_tf1_files`, `detect_format`, `check_vocab_size`)."""
import os

from bert_flow_tf.loaders import presets
from bert_flow_tf.loaders import safetensors
from bert_flow_tf.loaders import st_folder
from bert_flow_tf.loaders import tf1_checkpoint
from bert_flow_tf.loaders import tfhub
from bert_flow_tf.loaders.loaded_model import LoadedModel
from bert_flow_tf.modeling import tokenizer
from bert_flow_tf.utils import errors


def _require(path):
  if not os.path.exists(path):
    raise errors.missing_file("not found", path)
  return path


def check_vocab_size(vocab_file, config):
  """Fails when the vocab holds more tokens than the model has word embeddings (config.vocab_size): its ids
  past the table would fail deep inside the first batch. Returns vocab_file."""
  size = len(tokenizer.read_vocab(vocab_file))
  if size > config.vocab_size:
    raise errors.UserError(f"the vocab has {size} tokens but the model has {config.vocab_size} word embeddings "
                           "(vocab_size); is it the vocab of another model?", vocab_file)
  return vocab_file


def detect_format(model_dir):
  """"tf1", "hf" or "tfhub" from the files in `model_dir`; a clear error when none fits."""
  has = lambda name: os.path.exists(os.path.join(model_dir, name))
  if not os.path.isdir(model_dir):
    raise errors.missing_file("model directory not found", model_dir)
  if has("bert_config.json"):
    return "tf1"
  if has("config.json"):
    return "hf"
  if has("saved_model.pb"):
    return "tfhub"
  raise errors.UserError("not a BERT model directory; expected bert_config.json + bert_model.ckpt.* (TF1), "
                         "config.json + model.safetensors (HF) or saved_model.pb (TF-Hub encoder)", model_dir)


def load_model(model_dir, do_lower_case=None, vocab_file=None, init_checkpoint=None, preprocess_dir=None,
               bert_config_file=None):
  """Loads the encoder in `model_dir` (a path or a preset name such as "all-minilm-l6-v2"), or the original's
  three TF1 files.

  Args:
    model_dir: str or None. Directory (a sentence-transformers folder: its Transformer module's) or preset name
      or Hub id; None with `bert_config_file`.
    do_lower_case: bool or None. None reads it from the model files where they say, else True.
    vocab_file: str or None. Overrides `<model_dir>/vocab.txt` (TF-Hub encoders keep theirs in assets/);
      required with `bert_config_file`.
    init_checkpoint: str or None. TF1 only: a checkpoint prefix other than `<model_dir>/bert_model.ckpt`;
      required with `bert_config_file`.
    preprocess_dir: str or None. TF-Hub only: a matching preprocess SavedModel whose assets hold the vocab.
    bert_config_file: str or None. A TF1 `bert_config.json` read with `vocab_file` and `init_checkpoint`
      instead of a directory (the original's `--bert_config_file --vocab_file --init_checkpoint`).
  """
  if bert_config_file is not None or model_dir is None:
    tf1 = {"bert_config_file": bert_config_file, "vocab_file": vocab_file, "init_checkpoint": init_checkpoint}
    if model_dir is not None or None in tf1.values():
      raise ValueError(f"give a model directory or preset (model_dir={model_dir!r}) or all three TF1 files "
                       f"({', '.join(f'{k}={v!r}' for k, v in tf1.items())}), not both")
    return load_tf1_files(bert_config_file, vocab_file, init_checkpoint,
                          True if do_lower_case is None else do_lower_case)
  source = model_dir
  model_dir = presets.model_dir(model_dir)
  if st_folder.is_st_folder(model_dir):
    model_dir = st_folder.read(model_dir).model_dir
  fmt = detect_format(model_dir)
  if fmt == "tf1":
    encoder, config = tf1_checkpoint.load_tf1_encoder(
        os.path.join(model_dir, "bert_config.json"),
        init_checkpoint or os.path.join(model_dir, "bert_model.ckpt"))
    vocab = check_vocab_size(vocab_file or _require(os.path.join(model_dir, "vocab.txt")), config)
    lower = True if do_lower_case is None else do_lower_case
    return LoadedModel(encoder, config.num_hidden_layers, config.hidden_size, vocab, lower, source, fmt, config,
                       files=model_dir)
  if fmt == "hf":
    encoder, config = safetensors.load_hf_encoder(model_dir)
    vocab = check_vocab_size(vocab_file or _require(os.path.join(model_dir, "vocab.txt")), config)
    lower = safetensors.read_do_lower_case(model_dir) if do_lower_case is None else do_lower_case
    return LoadedModel(encoder, config.num_hidden_layers, config.hidden_size, vocab, lower, source, fmt, config,
                       files=model_dir)
  return tfhub.load_hub_model(model_dir, vocab_file=vocab_file, do_lower_case=do_lower_case, source=source,
                              preprocess_dir=preprocess_dir)


def load_tf1_files(bert_config_file, vocab_file, init_checkpoint, do_lower_case=True):
  """The original's flags `--bert_config_file --vocab_file --init_checkpoint` as one LoadedModel."""
  encoder, config = tf1_checkpoint.load_tf1_encoder(bert_config_file, init_checkpoint)
  return LoadedModel(encoder, config.num_hidden_layers, config.hidden_size,
                     check_vocab_size(_require(vocab_file), config), do_lower_case,
                     init_checkpoint, "tf1", config)
