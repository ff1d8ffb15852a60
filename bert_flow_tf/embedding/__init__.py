"""Sentence vectors from a loaded BERT: batching, pooling, and the on-disk store that keeps them.

  embedder.py   SentenceEmbedder: strings -> tokenizer -> BertEncoder -> pooling, batched by length
  cache.py      EmbeddingCache: vectors on disk, keyed by model, pooling, length and sentences
"""
