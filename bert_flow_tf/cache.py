"""On-disk cache of sentence embeddings, keyed by model, pooling, max_seq_length and the sentences.

One `.npz` per key under the cache directory holds the vectors of a list of unique sentences and the key it was
made for. A file that cannot be read, whose stored key differs, whose shape is off or that holds NaN/inf is
reported and rebuilt, never used. Writes are atomic.
"""
import hashlib
import json
import os
import zipfile

import numpy as np
from absl import logging

from bert_flow_tf import io_utils


def model_fingerprint(model_dir):
  """A string that changes when the model files change: their names, sizes and modification times."""
  model_dir = os.path.realpath(model_dir)
  if not os.path.isdir(model_dir):
    return model_dir
  parts = [model_dir]
  for root, _, files in sorted(os.walk(model_dir)):
    for name in sorted(files):
      stat = os.stat(os.path.join(root, name))
      parts.append(f"{os.path.relpath(os.path.join(root, name), model_dir)}:{stat.st_size}:{stat.st_mtime_ns}")
  return "\n".join(parts)


def cache_key(model_fingerprint_text, sentence_embedding_type, max_seq_length, sentences):
  """sha256 hex over everything the vectors depend on."""
  h = hashlib.sha256()
  h.update(json.dumps([model_fingerprint_text, sentence_embedding_type, max_seq_length]).encode("utf-8"))
  for sentence in sentences:
    h.update(sentence.encode("utf-8") + b"\x00")
  return h.hexdigest()


class EmbeddingCache:
  """Embeds sentences through a SentenceEncoder, reading and writing vectors under `cache_dir`.

  Args:
    sentence_encoder: bert_flow_tf.embed.SentenceEncoder.
    model_dir: str, the model's directory (fingerprinted for the key).
    cache_dir: str or None; None disables the cache.
  """

  def __init__(self, sentence_encoder, model_dir, cache_dir, batch_size=64):
    self.encoder = sentence_encoder
    self.cache_dir = cache_dir
    self.batch_size = batch_size
    self.fingerprint = model_fingerprint(model_dir)

  def _path(self, key):
    return os.path.join(self.cache_dir, f"emb-{key[:32]}.npz")

  def _read(self, path, key, n):
    try:
      with np.load(path) as f:
        stored_key, vectors = str(f["key"]), f["embeddings"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
      logging.warning("embedding cache %s is unreadable (%s); rebuilding it", path, e)
      return None
    if stored_key != key or vectors.shape != (n, self.encoder.dim) or not np.all(np.isfinite(vectors)):
      logging.warning("embedding cache %s does not match this request (key, shape %s or non-finite values); "
                      "rebuilding it", path, vectors.shape)
      return None
    return vectors

  def embed(self, sentences):
    """Vectors for a list of str, float32 [n, D], in order; duplicates are encoded once."""
    unique = sorted(set(sentences))
    key = cache_key(self.fingerprint, self.encoder.pooling.name, self.encoder.max_seq_length, unique)
    vectors = None
    if self.cache_dir:
      path = self._path(key)
      if os.path.exists(path):
        vectors = self._read(path, key, len(unique))
    if vectors is None:
      vectors = self.encoder.encode(unique, batch_size=self.batch_size)
      if self.cache_dir:
        with io_utils.atomic_path(path) as tmp:
          with open(tmp, "wb") as f:
            np.savez(f, key=np.array(key), embeddings=vectors)
    index = {s: i for i, s in enumerate(unique)}
    return vectors[[index[s] for s in sentences]]

  def embed_pairs(self, pairs):
    """(a [N, D], b [N, D]) for a PairSet."""
    vectors = self.embed(list(pairs.sentences_a) + list(pairs.sentences_b))
    return vectors[:len(pairs)], vectors[len(pairs):]
