"""Sentence vectors the long way: the reference the product's path (batches, store) must match.

Each sentence goes through the BERT alone, unpadded (no batching, bucketing, strategy, quantities or store), and is
pooled in numpy (float64) from the layer outputs as bert_flow_tf/modeling/pooling.py documents the names. It shares
only the tokenizer, the BERT and the name -> layers table (`pooling.resolve`, tested on its own) with the product.
"""
import weakref

import numpy as np
import tensorflow as tf

# encoder -> its call as one tf.function with the sentence length left open: two traces, then graph calls of the
# same kernels on the same unpadded inputs (about 5x less CPU a sentence than eager calls on the tiny BERT).
_GRAPHS = weakref.WeakKeyDictionary()


def _graph(encoder):
  if encoder not in _GRAPHS:
    ref = weakref.ref(encoder)   # the entry goes with the encoder
    _GRAPHS[encoder] = tf.function(lambda inputs: ref()(inputs, training=False), reduce_retracing=True)
  return _GRAPHS[encoder]


def _pooled(pooling_spec, outputs):
  """One sentence's vector: outputs of the BERT on [1, S] unpadded inputs -> float64 [D]."""
  if pooling_spec.mode == "cls-pooler":
    return np.asarray(outputs["pooled_output"], np.float64)[0]
  layers = [outputs["embedding_output"], *outputs["encoder_outputs"]]  # layer l: [1, S, H]
  if pooling_spec.mode == "cls-token":
    return np.asarray(layers[pooling_spec.layers[0]], np.float64)[0, 0]
  means = [np.asarray(layers[layer], np.float64)[0].mean(axis=0) for layer in pooling_spec.layers]  # each [H]
  return np.concatenate(means) if pooling_spec.mode == "concat" else np.mean(means, axis=0)


def engine_vectors(embedder, sentences, batch_size=64):
  """Float32 [n, D], each of `sentences` encoded alone by `embedder`'s BERT and pooled with its pooling.

  Args:
    embedder: SentenceEmbedder (its tokenizer, encoder and pooling are used).
    sentences: iterable of str.
    batch_size: unused; the signature of a batched reference.
  """
  del batch_size
  out, encode = [], _graph(embedder.encoder)
  for sentence in sentences:
    pieces = embedder.tokenizer.tokenize([sentence])             # ragged [1, (pieces)], no special tokens
    length = min(int(pieces.row_lengths()[0]) + 2, embedder.max_seq_length)  # [CLS] pieces [SEP], truncated
    inputs = embedder.tokenizer.pack(pieces, length)
    out.append(_pooled(embedder.pooling_spec, encode(inputs)))
  return np.asarray(out, np.float32)
