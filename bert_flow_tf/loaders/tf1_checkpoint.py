"""Reads and writes google-research/bert TF1 checkpoints: `bert_config.json` + `bert_model.ckpt.{index,data-*}`.

Variables keep google's names (`bert/encoder/layer_0/attention/self/query/kernel`, ...; see `names.py`), and
kernels keep their [in, out] layout, so nothing is transposed.

Exact GELU: google's `"hidden_act": "gelu"` is the tanh approximation, and the google format has no word for the
exact erf GELU that HF models (MiniLM among them) use. `save_tf1_checkpoint` refuses such a config unless
`allow_exact_gelu=True`; then it writes `"hidden_act": "gelu_erf"`, which `load_tf1_encoder` reads back but which
google's own code (and the original BERT-flow) rejects as an unsupported activation, instead of silently
computing a different function.
"""
import collections
import json
import os
import shutil

import tensorflow as tf
from absl import logging

from bert_flow_tf.modeling.config import BertConfig
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from bert_flow_tf.loaders import names as names_lib
from bert_flow_tf.loaders import tf1_flow
from bert_flow_tf.utils import errors

# Checkpoint entries that are not encoder weights, by kind: Adam slots, the step counter, the pre-training heads,
# the NLI classifier of the original's run_siamese.py (it has no bias; "loss/output_bias" is BERT's
# run_classifier.py), and the original's Glow (read by tf1_flow.py).
_IGNORED_SUFFIXES = ("/adam_m", "/adam_v")
_IGNORED_NAMES = ("global_step", "loss/output_weights", "loss/output_bias")
_IGNORED_PREFIXES = ("cls/",)

# Our activation name -> the word written in bert_config.json. "gelu_erf" is ours, written only on request.
_GOOGLE_WORDS = {"gelu_tanh": "gelu", "relu": "relu", "tanh": "tanh"}
EXACT_GELU_WORD = "gelu_erf"


def _ignored_kind(name):
  """Why `name` is not an encoder weight ("Adam slots", "global_step", ...), or None for an encoder weight."""
  if name.endswith(_IGNORED_SUFFIXES):
    return "Adam slots"
  if name in _IGNORED_NAMES:
    return name
  if name.startswith(_IGNORED_PREFIXES):
    return "pre-training heads (cls/)"
  if name.startswith(tf1_flow.FLOW_PREFIX):
    return f"the original's Glow ({tf1_flow.FLOW_PREFIX}, read only by the flow loader)"
  return None


def load_tf1_encoder(bert_config_file, init_checkpoint):
  """Builds a BertEncoder from a google-research TF1 checkpoint, strictly.

  Args:
    bert_config_file: str. Google-format `bert_config.json` ("gelu" = tanh GELU).
    init_checkpoint: str. Checkpoint prefix, e.g. ".../bert_model.ckpt" (the files are `<prefix>.index` and
      `<prefix>.data-*`).

  Returns:
    (BertEncoder, BertConfig).

  Raises:
    FileNotFoundError naming the missing config or `.index` file.
    ValueError listing every missing tensor, every shape mismatch (stored and model shapes) and every unused
      tensor. Adam slots (`*/adam_m`, `*/adam_v`), `global_step`, the pre-training heads (`cls/...`), the
      classifier (`loss/output_weights`, `loss/output_bias`) and the original BERT-flow's Glow (`bert/flow/...`,
      see tf1_flow.py) are ignored, counted in one log line; nothing else is.
  """
  config = BertConfig.from_google_json(bert_config_file)
  index = init_checkpoint + ".index"
  if not os.path.isfile(index):
    raise errors.missing_file("TF1 checkpoint not found (init_checkpoint is the prefix, e.g. "
                              "'.../bert_model.ckpt')", index)
  ignored = collections.Counter()
  tensors = {}
  try:
    reader = tf.train.load_checkpoint(init_checkpoint)
    for name in reader.get_variable_to_shape_map():
      kind = _ignored_kind(name)
      if kind is None:
        tensors[name] = reader.get_tensor(name)
      else:
        ignored[kind] += 1
  except tf.errors.OpError as e:
    raise errors.UserError(f"cannot read the checkpoint, truncated or corrupt? ({e.message})", init_checkpoint) from e
  if ignored:
    logging.info("%s: ignored %s", init_checkpoint, "; ".join(f"{kind} ({n})" for kind, n in sorted(ignored.items())))
  encoder = BertEncoder(config).build_variables()
  names_lib.assign_strict([(n.tf1, names_lib.fill_exact(n.variable)) for n in names_lib.weight_names(encoder)],
                          tensors, source=init_checkpoint)
  return encoder, config


def google_config_dict(config, allow_exact_gelu=False):
  """The `bert_config.json` contents for `config` (google's words; see the module notes on exact GELU).

  Raises:
    ValueError for hidden_act "gelu_erf" unless `allow_exact_gelu`.
  """
  raw = config.to_dict()
  if config.hidden_act == "gelu_erf":
    if not allow_exact_gelu:
      raise ValueError("hidden_act 'gelu_erf' (exact GELU) has no google bert_config.json word: google's 'gelu' "
                       "is the tanh approximation. Pass allow_exact_gelu=True to write 'gelu_erf', which this "
                       "package reads but google's TF1 code rejects.")
    raw["hidden_act"] = EXACT_GELU_WORD
  else:
    raw["hidden_act"] = _GOOGLE_WORDS[config.hidden_act]
  return raw


def save_tf1_checkpoint(encoder, config, out_dir, vocab_file=None, allow_exact_gelu=False):
  """Writes `encoder` as a google-research TF1 BERT directory.

  Files: `bert_config.json`, `bert_model.ckpt.index`, `bert_model.ckpt.data-00000-of-00001` (plain TF1 variable
  names, written with the SaveV2 op, as TF1's Saver does) and `vocab.txt` when `vocab_file` is given.

  Args:
    encoder: a built BertEncoder.
    config: BertConfig written as `bert_config.json`.
    out_dir: str. Created if missing.
    vocab_file: str or None. Copied to `<out_dir>/vocab.txt`.
    allow_exact_gelu: bool. Write "gelu_erf" for exact-GELU configs instead of refusing them.

  Returns:
    str, the checkpoint prefix `<out_dir>/bert_model.ckpt`.
  """
  if not encoder.built:
    raise ValueError("save_tf1_checkpoint needs a built encoder (load weights or call build_variables())")
  raw = google_config_dict(config, allow_exact_gelu)
  os.makedirs(out_dir, exist_ok=True)
  with open(os.path.join(out_dir, "bert_config.json"), "w", encoding="utf-8") as f:
    f.write(json.dumps(raw, indent=2, sort_keys=True) + "\n")
  names = names_lib.weight_names(encoder)
  prefix = os.path.join(out_dir, "bert_model.ckpt")
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=[n.tf1 for n in names], shape_and_slices=[""] * len(names),
                    tensors=[n.variable.read_value() for n in names])
  if vocab_file is not None:
    shutil.copyfile(vocab_file, os.path.join(out_dir, "vocab.txt"))
  return prefix
