"""On-disk cache of sentence embeddings, keyed by model, pooling, max_seq_length and the sentences.

One `.npz` per key under the cache directory holds the vectors of a list of unique sentences and the key it was
made for. A file that cannot be read, whose stored key differs, whose shape is off or that holds NaN/inf is
reported and rebuilt, never used. Writes are atomic.
"""
import glob
import hashlib
import json
import os
import zipfile

import numpy as np
from absl import logging

from bert_flow_tf.utils import io_utils


def model_fingerprint(model_path):
  """A string that changes when the model files change: their names, sizes and modification times.

  Args:
    model_path: a model directory, or a checkpoint prefix (every file starting with it counts).
  """
  model_path = os.path.realpath(model_path)
  if os.path.isdir(model_path):
    files = [os.path.join(root, name) for root, _, names in os.walk(model_path) for name in names]
  else:
    files = glob.glob(glob.escape(model_path) + "*")
  parts = [model_path]
  for path in sorted(files):
    stat = os.stat(path)
    parts.append(f"{os.path.relpath(path, os.path.dirname(model_path))}:{stat.st_size}:{stat.st_mtime_ns}")
  return "\n".join(parts)


def cache_key(model_fingerprint_text, sentence_embedding_type, max_seq_length, sentences):
  """sha256 hex over everything the vectors depend on."""
  h = hashlib.sha256()
  h.update(json.dumps([model_fingerprint_text, sentence_embedding_type, max_seq_length]).encode("utf-8"))
  for sentence in sentences:
    h.update(sentence.encode("utf-8") + b"\x00")
  return h.hexdigest()


class EmbeddingCache:
  """Embeds sentences through a SentenceEmbedder, reading and writing vectors under `cache_dir`.

  Args:
    embedder: bert_flow_tf.embedding.embedder.SentenceEmbedder.
    model_path: str, the model's directory or checkpoint prefix (fingerprinted for the key).
    cache_dir: str or None; None disables the cache.
  """

  def __init__(self, embedder, model_path, cache_dir, batch_size=64):
    self.embedder = embedder
    self.cache_dir = cache_dir
    self.batch_size = batch_size
    self.fingerprint = model_fingerprint(model_path)

  def _path(self, key):
    return os.path.join(self.cache_dir, f"emb-{key[:32]}.npz")

  def _read(self, path, key, n):
    try:
      with np.load(path) as f:
        stored_key, vectors = str(f["key"]), f["embeddings"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
      logging.warning("embedding cache %s is unreadable (%s); rebuilding it", path, e)
      return None
    if stored_key != key or vectors.shape != (n, self.embedder.dim) or not np.all(np.isfinite(vectors)):
      logging.warning("embedding cache %s does not match this request (key, shape %s or non-finite values); "
                      "rebuilding it", path, vectors.shape)
      return None
    return vectors

  def embed(self, sentences):
    """Vectors for a list of str, float32 [n, D], in order; duplicates are encoded once."""
    unique = sorted(set(sentences))
    key = cache_key(self.fingerprint, self.embedder.pooling.name, self.embedder.max_seq_length, unique)
    vectors = None
    if self.cache_dir:
      path = self._path(key)
      if os.path.exists(path):
        vectors = self._read(path, key, len(unique))
    if vectors is None:
      vectors = self.embedder.encode(unique, batch_size=self.batch_size)
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
