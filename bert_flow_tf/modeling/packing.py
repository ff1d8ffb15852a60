"""The encoder's inputs: their names, and a batch of word pieces packed to its longest sentence.

Every batch of sentences reaches BERT as `[CLS] pieces [SEP]` per row (`BertTokenizer.pack`), padded to one length
S for the batch: the longest row (word pieces + 2), capped at max_seq_length, or, where shapes must be static (TPU,
XLA), the shortest of `static_lengths(max_seq_length)` that holds it. Poolings mask the padding, so S changes a
vector only by float rounding.

Legend: B = sentences in the batch, S = padded length.
"""
import tensorflow as tf

# The three int32 [B, S] inputs of every encoder (TF-Hub's names; see `input_dict`).
INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
# The padded lengths of static-shape batches below max_seq_length (`static_lengths`).
STATIC_LENGTHS = (16, 32, 48, 64)


def input_dict(word_ids, mask, type_ids=None):
  """The encoder's input dict from int32 [B, S] word ids, mask (1 = token) and type ids (default all 0)."""
  if type_ids is None:
    type_ids = tf.zeros_like(word_ids)
  return dict(zip(INPUT_NAMES, (word_ids, mask, type_ids)))


def static_lengths(max_seq_length):
  """The few padded lengths of static-shape batches: STATIC_LENGTHS below max_seq_length, and max_seq_length."""
  return tuple(sorted({b for b in STATIC_LENGTHS if b < max_seq_length} | {max_seq_length}))


def padded_length(lengths, max_seq_length, static_shapes=False):
  """S for a batch whose rows have `lengths` tokens.

  Args:
    lengths: int32 [B], tokens per row with [CLS] and [SEP] (capped or not).
    max_seq_length: int, the largest S.
    static_shapes: bool, S from `static_lengths(max_seq_length)` (the shortest that holds the longest row).

  Returns:
    int32 scalar Tensor: the longest row capped at max_seq_length (2 for an empty batch), or its static length.
  """
  longest = tf.reduce_max(tf.concat([[2], tf.cast(lengths, tf.int32)], axis=0))
  longest = tf.minimum(longest, max_seq_length)
  if not static_shapes:
    return longest
  choices = tf.constant(static_lengths(max_seq_length), tf.int32)
  return tf.gather(choices, tf.argmax(choices >= longest))


def pack_to_longest(tokenizer, pieces, static_shapes=False):
  """Packs a batch of word pieces to its longest row (see the module notes).

  Args:
    tokenizer: bert_flow_tf.modeling.tokenizer.BertTokenizer (its pack and max_seq_length).
    pieces: tf.RaggedTensor int32 [B, (pieces)], as from `BertTokenizer.tokenize`, without special tokens.
    static_shapes: bool, pad to one of `static_lengths(tokenizer.max_seq_length)`.

  Returns:
    dict INPUT_NAMES -> int32 [B, S].
  """
  lengths = tf.cast(pieces.row_lengths(), tf.int32) + 2                                # [B], with [CLS] and [SEP]
  return tokenizer.pack(pieces, padded_length(lengths, tokenizer.max_seq_length, static_shapes))
