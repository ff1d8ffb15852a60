"""Sentence vectors from a loaded BERT: the input pipeline, the replicas that encode, the store that keeps them.

  settings.py   the embedding defaults (pooling, max_seq_length, sentences per batch) and their checks
  pipeline.py   tf.data on the host: tokenize, bucket by length, pack, prefetch; example ids restore the order
  embedder.py   QuantityEncoder: batches -> per-sentence quantities on any tf.distribute strategy;
                SentenceEmbedder: one with a pooling, for the in-graph users (export, siamese pairs)
  store.py      EmbeddingStore: per-sentence quantities on disk or in memory, content-addressed, each encoded
                once; `vectors` is the one way sentences become pooled vectors
  store_files.py  the store's files, one owner: paths, model key, shard names and members, their check, the key
                index (each key read once), atomic shard writes through a filesystem seam (Beam's, or local)
"""
# The modules users import by name (the others serve them); importing the package loads none of them.
__all__ = ["embedder", "store"]
