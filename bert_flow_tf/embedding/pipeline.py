"""The input pipeline: sentences -> tf.data batches of packed token ids with example ids, bucketed by length.

Everything here runs on the host inside tf.data (never inside the replica function): tensorflow-text
tokenization in chunks, grouping by length, packing `[CLS] pieces [SEP]` and prefetching, so that tokenizing the
next batches overlaps the encoder. Autotuning is off (`utils.tf_data`).

  dynamic shapes (CPU, GPU)   sentences are grouped by their exact length (tokens with [CLS] and [SEP]), so a
                              batch needs no padding; a length's last batch may be smaller. (Buckets 8 tokens
                              wide, padded up to a multiple of 8, cost 25% more encoder work on STS-B.)
  static shapes (TPU, XLA)    every batch has `batch_size` rows and a length from `packing.static_lengths`; the rows
                              that fill the last batch of a bucket are empty sentences with valid = False,
                              which the caller drops (no sentence is ever dropped, as drop_remainder would).

Each element is a dict: int32 [B, S] `input_word_ids`, `input_mask`, `input_type_ids`; int64 [B] `example_id`
(the sentence's index in the input list, so the caller restores the input order); bool [B] `valid` and
`truncated` (the sentence had more than max_seq_length - 2 pieces).
"""
import tensorflow as tf

from bert_flow_tf.modeling import packing
from bert_flow_tf.utils import tf_data

_TOKENIZE_CHUNK = 1024
_PREFETCH_BATCHES = 8


class InputPipeline:
  """Makes the datasets of one tokenizer, batch size and shape mode; its map functions are traced once, so each
  further dataset costs no tokenizer or packing trace (about 0.5 s a time on a 2-core CPU).

  Args:
    tokenizer: bert_flow_tf.modeling.tokenizer.BertTokenizer (its max_seq_length bounds S).
    batch_size: int, sentences per batch (the global batch under a tf.distribute strategy).
    static_shapes: bool, see the module notes.
  """

  def __init__(self, tokenizer, batch_size, static_shapes=False):
    self.batch_size = batch_size
    max_len = tokenizer.max_seq_length
    if static_shapes:
      # Bucket k holds the lengths up to the k-th static length.
      self.boundaries = [b + 1 for b in packing.static_lengths(max_len)[:-1]]
    else:
      self.boundaries = list(range(3, max_len + 1))         # one bucket per length 2..max_len

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None], tf.string)],
                 autograph=False)
    def tokenize(example_id, text):
      pieces = tokenizer.tokenize(text)                                          # ragged int32 [C, (pieces)]
      full = tf.cast(pieces.row_lengths(), tf.int32) + 2                         # [C], with [CLS] and [SEP]
      return example_id, pieces.to_tensor(default_value=-1), tf.minimum(full, max_len), full > max_len

    @tf.function(input_signature=[tf.TensorSpec([None], tf.int64), tf.TensorSpec([None, None], tf.int32),
                                  tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.bool)], autograph=False)
    def pack(example_id, pieces, length, truncated):
      del length  # the packer reads the lengths off the pieces
      rows = batch_size if static_shapes else tf.shape(pieces)[0]
      missing = rows - tf.shape(pieces)[0]                                       # > 0 only for static shapes
      pieces = tf.pad(pieces, [[0, missing], [0, 0]], constant_values=-1)        # filler rows: empty sentences
      packed = packing.pack_to_longest(tokenizer, tf.RaggedTensor.from_tensor(pieces, padding=-1), static_shapes)
      packed["example_id"] = tf.pad(example_id, [[0, missing]], constant_values=-1)
      packed["valid"] = tf.range(rows) < rows - missing
      packed["truncated"] = tf.pad(truncated, [[0, missing]])
      if static_shapes:
        packed = {k: tf.ensure_shape(v, [batch_size] + v.shape[1:]) for k, v in packed.items()}
      return packed

    self._tokenize, self._pack = tokenize, pack
    # The elements' spec, from the traced packing function (what `dataset` and `single_batch` both yield).
    self.element_spec = tf.nest.map_structure(tf.type_spec_from_value, pack.get_concrete_function().structured_outputs)

  def single_batch(self, sentences):
    """The one element that holds all `len(sentences) <= batch_size` sentences, padded to the longest, packed
    eagerly by the same traced functions: no tf.data, whose iterator alone takes ~0.4 s to start."""
    if len(sentences) > self.batch_size:
      raise ValueError(f"{len(sentences)} sentences do not fit in one batch of {self.batch_size}")
    return self._pack(*self._tokenize(tf.range(len(sentences), dtype=tf.int64), tf.constant(sentences, tf.string)))

  def dataset(self, sentences):
    """tf.data.Dataset of dicts as in the module notes, over `sentences` (list of str or bytes, or tf.string [n])."""
    n = len(sentences)
    dataset = tf.data.Dataset.from_tensor_slices((tf.range(n, dtype=tf.int64), tf.constant(sentences, tf.string)))
    dataset = dataset.batch(_TOKENIZE_CHUNK).map(self._tokenize, num_parallel_calls=tf.data.AUTOTUNE).unbatch()
    dataset = dataset.bucket_by_sequence_length(
        lambda example_id, pieces, length, truncated: length, self.boundaries,
        [self.batch_size] * (len(self.boundaries) + 1), padding_values=(tf.constant(0, tf.int64), -1, 0, False))
    dataset = dataset.map(self._pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(_PREFETCH_BATCHES)
    return tf_data.untuned(dataset)
