"""The tiny models the tests share, written once: a Glow config and a BERT config small enough to trace in seconds.

  GLOW, GLOW_DEEP      two-level Glow configs of width 8 (one step per level; two, additive, reversed)
  write_glow_config    one of them as a JSON file, the form every fit takes it in
  bert_config          a random-weight BERT's sizes: H=16, 2 layers of 2 heads by default; WIDE for H=32, 4 heads
  make_tiny_setup      a tiny TF1 BERT, GLOW and SNLI-format files: what the siamese tests (and commands) train on;
                       siamese_flow_config its Glow config's path
"""
import json
import os
import pathlib

import numpy as np

from bert_flow_tf.modeling.config import BertConfig

GLOW = {"coupling_width": 8, "n_levels": 2, "depth": 1}
GLOW_DEEP = {"coupling": "additive", "coupling_width": 8, "n_levels": 2, "depth": 2, "permutation": True}
WIDE = {"hidden_size": 32, "num_attention_heads": 4, "intermediate_size": 37}


def write_glow_config(path, fields=None):
  """Writes `fields` (default GLOW) as a Glow config JSON file at `path` (a pathlib.Path); returns its path (str)."""
  path.write_text(json.dumps(GLOW if fields is None else fields))
  return str(path)


def bert_config(vocab_size, **overrides):
  """BertConfig of a tiny BERT: H=16, 2 layers, 2 heads, FFN 24, 64 positions, 2 types, unless overridden."""
  sizes = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
               max_position_embeddings=64, type_vocab_size=2)
  return BertConfig(vocab_size=vocab_size, **{**sizes, **overrides})


WORDS = ["the", "a", "cat", "dog", "man", "woman", "sat", "runs", "on", "in", "mat", "park", "red", "blue", "."]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LABELS = ("entailment", "neutral", "contradiction")


def siamese_flow_config(model_dir):
  """The path of the tiny Glow config that make_tiny_setup wrote beside `model_dir`."""
  return os.path.join(os.path.dirname(model_dir), "tiny_flow.json")


def make_tiny_setup(root, num_pairs=24):
  """Writes a tiny TF1 BERT (model/: H=32, one block, dropout 0, a 20-token vocab), GLOW (tiny_flow.json) and
  SNLI-format dev and test files of random sentences (data/SNLI/), for the siamese tests; returns (model_dir,
  data_dir)."""
  from bert_flow_tf.modeling.bert_encoder import BertEncoder
  from bert_flow_tf.loaders import tf1_checkpoint
  import tf_keras as keras
  root = pathlib.Path(root)
  vocab = root / "vocab.txt"
  vocab.write_text("\n".join(SPECIALS + WORDS) + "\n")
  config = bert_config(len(SPECIALS) + len(WORDS), **WIDE, num_hidden_layers=1, max_position_embeddings=32,
                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
  keras.utils.set_random_seed(7)  # python, numpy and TF seeds: the same weights whatever ran before
  encoder = BertEncoder(config).build_variables()
  model_dir = root / "model"
  tf1_checkpoint.save_tf1_checkpoint(encoder, config, str(model_dir), vocab_file=str(vocab))
  write_glow_config(root / "tiny_flow.json")
  rng = np.random.default_rng(0)
  snli = root / "data" / "SNLI"
  snli.mkdir(parents=True)
  for split in ("dev", "test"):
    sent = lambda: " ".join(rng.choice(WORDS[:-1], size=rng.integers(2, 9))) + " ."
    s1 = [sent() for _ in range(num_pairs)]
    s2 = [sent() for _ in range(num_pairs)]
    labels = [LABELS[i] for i in rng.integers(0, 3, num_pairs)]
    for name, lines in (("s1", s1), ("s2", s2), ("labels", labels)):
      (snli / f"{name}.{split}").write_text("\n".join(lines) + "\n")
  return str(model_dir), str(root / "data")
