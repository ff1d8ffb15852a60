"""Reads and writes HF-format BERT directories: config.json, vocab.txt, model.safetensors (numpy, no torch)."""
import json
import os
import shutil

import numpy as np
import safetensors.numpy

from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils
from bert_flow_tf.modeling.config import BertConfig
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from bert_flow_tf.loaders import names as names_lib

# Our activation name -> HF's config word.
_HF_ACTIVATION_WORDS = {"gelu_erf": "gelu", "gelu_tanh": "gelu_new", "relu": "relu", "tanh": "tanh"}
# Keys an HF checkpoint may hold beside the encoder: buffers and task heads.
_IGNORED_PREFIXES = ("embeddings.position_ids", "cls.", "qa_outputs.", "classifier.")


def _normalise_key(key):
  """Drops a "bert." model prefix and maps old gamma/beta LayerNorm names to weight/bias."""
  if key.startswith("bert."):
    key = key[len("bert."):]
  if ".LayerNorm." in key or key.startswith("LayerNorm."):
    key = key.replace(".gamma", ".weight").replace(".beta", ".bias")
  return key


def read_do_lower_case(model_dir, default=True):
  """`do_lower_case` from tokenizer_config.json when present, else `default` (HF BertTokenizer's default)."""
  path = os.path.join(model_dir, "tokenizer_config.json")
  if not os.path.isfile(path):
    return default
  with open(path, encoding="utf-8") as f:
    return bool(json.load(f).get("do_lower_case", default))


def load_hf_encoder(model_dir):
  """Builds a BertEncoder from an HF-format directory.

  Returns:
    (BertEncoder, BertConfig).
  Raises:
    FileNotFoundError naming the missing file; ValueError listing missing, mismatched or unused tensors.
  """
  config = BertConfig.from_hf_json(os.path.join(model_dir, "config.json"))
  weights_path = os.path.join(model_dir, "model.safetensors")
  if not os.path.isfile(weights_path):
    raise errors.missing_file("HF weights not found (only safetensors are read; convert a pytorch_model.bin "
                              "with transformers' save_pretrained(safe_serialization=True))", weights_path)
  try:
    stored = safetensors.numpy.load_file(weights_path)
  except safetensors.SafetensorError as e:
    raise errors.UserError(f"not a readable safetensors file, truncated or corrupt? ({e})", weights_path) from e
  tensors = {_normalise_key(k): v for k, v in stored.items()}
  encoder = BertEncoder(config).build_variables()
  names_lib.assign_strict([(n.hf, names_lib.fill_exact(n.variable, n.hf_transposed))
                           for n in names_lib.weight_names(encoder)], tensors, source=weights_path,
                          ignore=_IGNORED_PREFIXES)
  return encoder, config


def hf_config_dict(config):
  """An HF-format `config.json` for a BertConfig (our "gelu_erf" is HF's "gelu")."""
  raw = config.to_dict()
  raw["hidden_act"] = _HF_ACTIVATION_WORDS[config.hidden_act]
  return {"architectures": ["BertModel"], "model_type": "bert", **raw}


def save_hf_encoder(encoder, config, out_dir, vocab_file=None, do_lower_case=True):
  """Writes a BertEncoder as an HF-format directory that `load_hf_encoder` (and transformers) read.

  Files: model.safetensors (HF keys and layouts from `names.weight_names`), config.json,
  tokenizer_config.json (do_lower_case) and vocab.txt when `vocab_file` is given. Each is written atomically.
  """
  os.makedirs(out_dir, exist_ok=True)
  tensors = {}
  for name in names_lib.weight_names(encoder):
    value = name.variable.numpy()
    tensors[name.hf] = np.ascontiguousarray(value.T if name.hf_transposed else value)
  with io_utils.atomic_path(os.path.join(out_dir, "model.safetensors")) as tmp:
    safetensors.numpy.save_file(tensors, tmp)
  io_utils.write_text(os.path.join(out_dir, "config.json"),
                      json.dumps(hf_config_dict(config), indent=2, sort_keys=True) + "\n")
  io_utils.write_text(os.path.join(out_dir, "tokenizer_config.json"),
                      json.dumps({"do_lower_case": do_lower_case}) + "\n")
  target = os.path.join(out_dir, "vocab.txt")
  if vocab_file and os.path.abspath(vocab_file) != os.path.abspath(target):
    with io_utils.atomic_path(target) as tmp:
      shutil.copyfile(vocab_file, tmp)
  return out_dir
