"""EmbeddingStore: per-sentence pooled quantities, content-addressed, so no sentence is run through BERT twice.

What is stored is not a pooling but the quantities every pooling is derived from (`pooling.quantities`): the token
mean of layer l ("mean-l"), block l's [CLS] vector ("cls-l") and the pooler output ("pooler"), each float32 [H]
per sentence. A run that asks for `first-last-avg` stores "mean-1" and "mean-L"; a later `last-avg` run over the
same sentences finds "mean-L" and runs no BERT at all; `emb-avg` needs "mean-0" only, and its forward pass stops
before the first transformer block. A sentence shared by two datasets or splits is encoded once.

On disk (`root` given):

  <root>/<model key>/model.json            what the key stands for (model files, vocab, casing, max_seq_length)
  <root>/<model key>/<quantity>/<shard>.npz keys: S16 [k] (sha256 of the UTF-8 sentence, first 16 bytes),
                                            vectors: float32 [k, H]

The model key hashes the model's files (names, sizes, modification times), the vocabulary, do_lower_case and
max_seq_length. Shards are written atomically, one per quantity for every `shard_size` newly encoded sentences, so a
killed run keeps what it finished and a rerun encodes only the rest. A shard is named by a hash of its keys
(`shard_name`), so the shards of one batch of sentences have the same name in every quantity's folder and a writer
that repeats itself (a retried Beam bundle, `bert_flow_tf/beam/`) replaces a shard instead of adding one. A shard
that cannot be read, has the wrong width or holds NaN/inf is reported, deleted and its sentences encoded again.
Storage grows with what was asked, not with the model's depth: one quantity of 1M sentences is 1M x H x 4 bytes
(BERT-base: 3 GB).

Without `root` the store keeps its shards in memory for the life of the object (the same lookups, no files).
"""
import glob
import hashlib
import json
import os
import zipfile

import numpy as np
from absl import logging

from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import io_utils
from bert_flow_tf.utils.progress import Progress

STORE_VERSION = 1
DEFAULT_SHARD_SIZE = 16384
_KEY_BYTES = 16


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


def sentence_keys(sentences):
  """np.bytes_ S16 [n]: the first 16 bytes of each sentence's UTF-8 sha256."""
  keys = [hashlib.sha256(s.encode("utf-8")).digest()[:_KEY_BYTES] for s in sentences]
  return np.array(keys, dtype=f"S{_KEY_BYTES}").reshape(len(keys))


def shard_name(keys):
  """The file name of a shard holding np.bytes_ S16 [k] `keys` (in that order): "<32 hex digits>.npz"."""
  return hashlib.sha256(np.asarray(keys, f"S{_KEY_BYTES}").tobytes()).hexdigest()[:32] + ".npz"


def describe_model(embedder):
  """dict: what a store key stands for (store version, model files, vocab, casing, max_seq_length, format).

  Args:
    embedder: a SentenceEmbedder (its model and max_seq_length).
  """
  model = embedder.loaded
  return {"store_version": STORE_VERSION, "model": model.source,
          "model_files": model_fingerprint(model.files),
          "vocab": model_fingerprint(model.vocab_file), "do_lower_case": model.do_lower_case,
          "max_seq_length": embedder.max_seq_length, "format": model.format}


def model_key(description):
  """The store's folder name for a `describe_model` dict: 32 hex digits."""
  return hashlib.sha256(json.dumps(description, sort_keys=True).encode("utf-8")).hexdigest()[:32]


class _Shards:
  """The shards of one quantity: sorted keys with (shard, row) for lookups, vectors loaded on first use."""

  def __init__(self, folder, width):
    self.folder, self.width = folder, width
    self.vectors = []                       # per shard: float32 [k, H]
    self.keys = np.zeros([0], f"S{_KEY_BYTES}")
    self.where = np.zeros([0, 2], np.int64)  # per key: (shard, row)
    if folder and os.path.isdir(folder):
      for path in sorted(glob.glob(os.path.join(folder, "*.npz"))):
        loaded = self._read(path)
        if loaded is not None:
          self._add(*loaded)

  def _read(self, path):
    try:
      with np.load(path) as f:
        keys, vectors = f["keys"], f["vectors"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
      logging.warning("embedding store shard %s is unreadable (%s); deleting it, its sentences are encoded again",
                      path, e)
      os.remove(path)
      return None
    if (vectors.ndim != 2 or vectors.shape != (len(keys), self.width) or keys.dtype != np.dtype(f"S{_KEY_BYTES}")
        or not np.all(np.isfinite(vectors))):
      logging.warning("embedding store shard %s holds keys %s and vectors %s (want width %d, finite values); "
                      "deleting it, its sentences are encoded again", path, keys.shape, vectors.shape, self.width)
      os.remove(path)
      return None
    return keys, vectors

  def _add(self, keys, vectors):
    shard = len(self.vectors)
    self.vectors.append(vectors)
    where = np.stack([np.full(len(keys), shard), np.arange(len(keys))], axis=1)
    keys = np.concatenate([self.keys, keys])
    where = np.concatenate([self.where, where])
    order = np.argsort(keys, kind="stable")
    self.keys, self.where = keys[order], where[order]

  def add(self, keys, vectors):
    """Stores a new shard (atomically on disk when the store has a folder)."""
    if self.folder:
      with io_utils.atomic_path(os.path.join(self.folder, shard_name(keys))) as tmp:
        with open(tmp, "wb") as f:
          np.savez(f, keys=keys, vectors=vectors)
    self._add(keys, vectors)

  def find(self, keys):
    """bool [n]: which of the sorted unique `keys` are stored."""
    pos = np.searchsorted(self.keys, keys)
    found = pos < len(self.keys)
    found[found] = self.keys[pos[found]] == keys[found]
    return found

  def get(self, keys):
    """float32 [n, H] for stored `keys`."""
    where = self.where[np.searchsorted(self.keys, keys)]
    out = np.empty([len(keys), self.width], np.float32)
    for shard in np.unique(where[:, 0]):
      rows = where[:, 0] == shard
      out[rows] = self.vectors[shard][where[rows, 1]]
    return out


class EmbeddingStore:
  """Per-sentence quantities of one model and max_seq_length, encoded through a SentenceEmbedder on a miss.

  Args:
    embedder: bert_flow_tf.embedding.embedder.SentenceEmbedder (its model, tokenizer, strategy and length).
    root: str or None. The store's folder (see the module notes); None keeps everything in memory.
    batch_size: int, sentences per encoding batch.
    shard_size: int, newly encoded sentences per shard (and per resumable unit of work).
  """

  def __init__(self, embedder, root=None, batch_size=64, shard_size=DEFAULT_SHARD_SIZE):
    self.embedder = embedder
    self.batch_size = batch_size
    self.shard_size = shard_size
    self.width = embedder.loaded.hidden_size
    self.folder = None
    if root:
      description = describe_model(embedder)
      self.folder = os.path.join(root, model_key(description))
      info = os.path.join(self.folder, "model.json")
      if not os.path.isfile(info):
        io_utils.write_text(info, json.dumps(description, indent=2, sort_keys=True) + "\n")
    self._shards = {}
    self.encoded = 0  # sentences run through BERT by this object, for reports and tests

  def _quantity(self, name):
    if name not in self._shards:
      folder = os.path.join(self.folder, name) if self.folder else None
      self._shards[name] = _Shards(folder, self.width)
    return self._shards[name]

  def get(self, sentences, names, show_progress=True):
    """The quantities `names` of each sentence, in input order; encodes only what is not stored yet.

    Args:
      sentences: list of str (duplicates welcome: each distinct sentence is looked up and encoded once).
      names: iterable of quantity names (`pooling.quantities`).
      show_progress: bool, a progress line while encoding.

    Returns:
      dict name -> np.float32 [n, H].
    """
    names = tuple(sorted(set(names)))
    keys = sentence_keys(sentences)
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    missing = {name: ~self._quantity(name).find(unique) for name in names}
    todo = np.flatnonzero(np.any(list(missing.values()), axis=0)) if names else np.zeros([0], np.int64)
    if len(todo):
      wanted = tuple(name for name in names if missing[name].any())
      self._encode([sentences[i] for i in first[todo]], unique[todo], wanted, show_progress)
    return {name: self._quantity(name).get(unique)[inverse.reshape(-1)] for name in names}

  def _encode(self, sentences, keys, names, show_progress):
    logging.info("encoding %d new sentences (%s)", len(sentences), ", ".join(names))
    progress = Progress("encoding", len(sentences)) if show_progress else None
    for start in range(0, len(sentences), self.shard_size):
      chunk = sentences[start:start + self.shard_size]
      values = self.embedder.encode_quantities(chunk, names, self.batch_size, progress)
      for name in names:
        self._quantity(name).add(keys[start:start + len(chunk)], values[name])
      self.encoded += len(chunk)

  def vectors(self, sentences, pooling, show_progress=True):
    """Sentence vectors for a Pooling: np.float32 [n, D], derived from the stored quantities."""
    return pooling_lib.combine(pooling, self.get(sentences, pooling_lib.quantities(pooling), show_progress))
