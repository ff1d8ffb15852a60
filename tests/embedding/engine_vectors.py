"""Sentence vectors straight from the engine, without the store: the reference the product's path must match."""
from bert_flow_tf.modeling import pooling as pooling_lib


def engine_vectors(embedder, sentences, batch_size=64):
  """`embedder.encode_quantities` combined into its pooling: np.float32 [n, D], every sentence encoded (no
  lookups, duplicates encoded again)."""
  names = pooling_lib.quantities(embedder.pooling)
  return pooling_lib.combine(embedder.pooling, embedder.encode_quantities(list(sentences), names, batch_size))
