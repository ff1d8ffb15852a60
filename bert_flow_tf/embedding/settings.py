"""How sentences are embedded unless told otherwise, and the checks of those settings.

The library owns these: SentenceEncoder, SentenceEmbedder and EmbeddingStore take them as defaults and run the
checks, and the command lines (bert_flow_tf/cli/) import them for their flags and run the same checks while the
flags are parsed (docs/flags.md).
"""
from bert_flow_tf.utils import checks

POOLING = "last-avg"        # the mean of the last block (the original's "avg")
MAX_SEQ_LENGTH = 64         # tokens per sentence, [CLS] and [SEP] included (the original's)
BATCH_SENTENCES = 64        # sentences per encoding batch (speed only)
MIN_SEQ_LENGTH = 3          # [CLS], one piece, [SEP]


def check_max_seq_length(name, value, max_position_embeddings=None):
  """A check: an int in [MIN_SEQ_LENGTH, max_position_embeddings] (the model's, when known); the ValueError names
  both numbers."""
  checks.int_at_least(MIN_SEQ_LENGTH)(name, value)
  if max_position_embeddings is not None and value > max_position_embeddings:
    checks.refuse(name, f"at most the model's max_position_embeddings {max_position_embeddings}", value)
  return value


check_batch_sentences = checks.positive_int


def batch_for(batch_size, default):
  """A call's sentences per batch: `batch_size`, checked (check_batch_sentences), or `default` for None."""
  return default if batch_size is None else check_batch_sentences("batch_size", batch_size)
