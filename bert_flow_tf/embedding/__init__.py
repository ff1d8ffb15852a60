"""Sentence vectors from a loaded BERT: the input pipeline, the replicas that encode, the store that keeps them.

  pipeline.py   tf.data on the host: tokenize, bucket by length, pack, prefetch; example ids restore the order
  embedder.py   SentenceEmbedder: batches -> per-sentence quantities on any tf.distribute strategy
  store.py      EmbeddingStore: per-sentence quantities on disk or in memory, content-addressed, each encoded
                once; `vectors` is the one way sentences become pooled vectors
  store_files.py  the store's files, one owner: paths, model key, shard names and members, their check, the key
                index (each key read once), atomic shard writes through a filesystem seam (Beam's, or local)
"""
