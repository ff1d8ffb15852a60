"""SentenceEmbedder: strings -> sentence embeddings (tokenizer -> encoder -> pooling), batched by length.

Legend: B = batch size, S = padded length (a bucket), H = hidden size, D = embedding width.
"""
import numpy as np
import tensorflow as tf
from absl import logging

from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils.progress import Progress
from bert_flow_tf.modeling.tokenizer import BertTokenizer

# Padded lengths a batch may take; fixed so the graph sees few distinct shapes.
DEFAULT_BUCKETS = (16, 32, 48, 64)


def bucket_lengths(max_seq_length, buckets=DEFAULT_BUCKETS):
  """The bucket lengths below max_seq_length, plus max_seq_length itself, ascending."""
  return tuple(sorted({b for b in buckets if b < max_seq_length} | {max_seq_length}))


class SentenceEmbedder(tf.Module):
  """Embeds sentences with a loaded BERT and a named pooling.

  Each sentence is packed alone as `[CLS] pieces [SEP]`, truncated to max_seq_length. An empty or
  whitespace-only sentence has no pieces: its vector is the pooling of `[CLS] [SEP]`.

  Args:
    model: bert_flow_tf.loaders.LoadedModel.
    sentence_embedding_type: str, a name from bert_flow_tf.modeling.pooling (original names accepted).
    max_seq_length: int, tokens per sentence including [CLS] and [SEP] (64 as the original).
  """

  def __init__(self, model, sentence_embedding_type, max_seq_length=64, buckets=DEFAULT_BUCKETS):
    super().__init__()
    if model.config is not None and max_seq_length > model.config.max_position_embeddings:
      raise ValueError(f"max_seq_length {max_seq_length} > the model's max_position_embeddings "
                       f"{model.config.max_position_embeddings}")
    self.model = model
    self.encoder = model.encoder
    self.pooling = pooling_lib.resolve(sentence_embedding_type, model.num_layers)
    self.dim = self.pooling.output_dim(model.hidden_size)
    self.max_seq_length = max_seq_length
    self.buckets = bucket_lengths(max_seq_length, buckets)
    self.tokenizer = BertTokenizer(model.vocab_file, model.do_lower_case, max_seq_length)
    ids = tf.TensorSpec([None, None], tf.int32)
    self._embed_inference = tf.function(lambda w, m, t: self.embed_inputs(
        {"input_word_ids": w, "input_mask": m, "input_type_ids": t}, training=False),
        input_signature=[ids, ids, ids])

  def embed_inputs(self, inputs, training=False):
    """Packed inputs (dict of int32 [B, S]) -> float32 [B, D]. Dropout runs only when training."""
    outputs = self.encoder(inputs, training=training)
    return pooling_lib.pool(self.pooling, outputs, inputs["input_mask"])

  def tokenize(self, sentences):
    """Tokenizes a list of str. Returns (ragged int32 [n, (pieces)], lengths np.int64 [n] incl. specials)."""
    pieces = self.tokenizer.tokenize_list(sentences)
    lengths = pieces.row_lengths().numpy() + 2
    truncated = int(np.sum(lengths > self.max_seq_length))
    if truncated:
      logging.info("%d of %d sentences are longer than max_seq_length=%d tokens and were truncated",
                   truncated, len(sentences), self.max_seq_length)
    return pieces, np.minimum(lengths, self.max_seq_length)

  def batches(self, lengths, batch_size):
    """Yields (indices, padded length): indices sorted by length, each batch padded to its bucket."""
    order = np.argsort(lengths, kind="stable")
    for start in range(0, len(order), batch_size):
      idx = order[start:start + batch_size]
      longest = int(lengths[idx].max())
      yield idx, next(b for b in self.buckets if b >= longest)

  def encode(self, sentences, batch_size=64, show_progress=True):
    """Embeds sentences in input order.

    Args:
      sentences: list of str.
      batch_size: int.
      show_progress: bool, a progress line on stderr for long inputs.

    Returns:
      np.float32 [n, D]; deterministic (no dropout).
    """
    sentences = list(sentences)
    out = np.zeros([len(sentences), self.dim], np.float32)
    if not sentences:
      return out
    pieces, lengths = self.tokenize(sentences)
    progress = Progress("encoding", len(sentences)) if show_progress else None
    for idx, seq_length in self.batches(lengths, batch_size):
      inputs = self.tokenizer.pack(tf.gather(pieces, idx), seq_length)
      out[idx] = self._embed_inference(inputs["input_word_ids"], inputs["input_mask"],
                                       inputs["input_type_ids"]).numpy()
      if progress:
        progress.update(len(idx))
    return out
