"""A tiny random BERT (H=16, L=3) with a 13-token vocab, for fast embedding tests."""
from bert_flow_tf import loaders
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from tests import tiny

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "man", "dog", "runs", "plays", "the", "guitar", "."]
# Duplicates, an empty and a whitespace-only line, a sentence longer than max_seq_length=16, and 23 sentences in
# all, so batches of 4 leave partial last batches in every bucket.
SENTENCES = ["a man plays the guitar .", "the dog runs .", "a man plays the guitar .", "", "   ",
             "the man . " * 8, "dog", "a dog plays the guitar", "the the the the", "man runs", "guitar",
             "a . a . a . a . a", "the dog runs . the man plays .", "runs", "plays guitar", "a man", "the dog",
             "dog dog dog", ". .", "man plays the dog", "the guitar runs .", "a a a a a a a a a a a a", "x y z"]


def tiny_model(folder, num_layers=3):
  """LoadedModel of a seeded random BERT whose files (vocab.txt) live in `folder`."""
  folder.mkdir(parents=True, exist_ok=True)
  vocab = folder / "vocab.txt"
  vocab.write_text("\n".join(VOCAB) + "\n")
  config = tiny.bert_config(len(VOCAB), num_hidden_layers=num_layers)
  import tf_keras as keras  # pylint: disable=g-import-not-at-top
  keras.utils.set_random_seed(0)
  return loaders.LoadedModel(BertEncoder(config).build_variables(), num_layers, 16, str(vocab), True, str(folder),
                             "hf", config)
