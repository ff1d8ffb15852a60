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
that cannot be read (its zip CRC included), has the wrong width or holds NaN/inf is reported, deleted and its
sentences encoded again: every shard of a quantity is checked when the quantity is first asked for, read a block at a
time. Memory: an open store holds the sorted keys and (shard, row) of each quantity asked for (32 bytes a sentence);
`get` reads only the rows asked for from the memory-mapped shards (`shard_member`), and `ensure` stores sentences
without reading their vectors back. Encoding holds one shard's vectors at a time.
Storage grows with what was asked, not with the model's depth: one quantity of 1M sentences is 1M x H x 4 bytes
(BERT-base: 3 GB).

Without `root` the store keeps its shards in memory for the life of the object (the same lookups, no files).
"""
import glob
import hashlib
import json
import os
import zipfile
import zlib

import numpy as np
from absl import logging

from bert_flow_tf.embedding import settings
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import checks
from bert_flow_tf.utils import io_utils
from bert_flow_tf.utils.progress import Progress

STORE_VERSION = 1
DEFAULT_SHARD_SIZE = 16384
_KEY_BYTES = 16
_CHECK_BYTES = 8 * 2 ** 20   # read a block at a time when a shard is checked


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


def shard_member(path, name):
  """np.memmap, read-only, of the member `name` ("keys" or "vectors") of the shard at `path`: the file's bytes in
  place (np.savez stores members uncompressed); indexing it reads only the pages of the rows asked for."""
  shape, dtype, fortran_order, _, offset, _ = _member_layout(path, name)
  return np.memmap(path, dtype, "r", offset, shape, "F" if fortran_order else "C")


def _member_layout(path, name):
  """(shape, dtype, fortran order, offset of the member's bytes, offset of its array data, its ZipInfo) of the
  array `name` in the npz at `path`; raises ValueError when the member is compressed or its size is not the
  shape's."""
  with zipfile.ZipFile(path) as archive:
    info = archive.getinfo(name + ".npy")
    if info.compress_type != zipfile.ZIP_STORED:
      raise ValueError(f"{path}: {name} is compressed; the store writes shards with np.savez (uncompressed)")
    with archive.open(info) as member:
      read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
      shape, fortran_order, dtype = read_header[np.lib.format.read_magic(member)](member)
      header_bytes = member.tell()
  with open(path, "rb") as f:                                   # the member's bytes: after the local file header
    f.seek(info.header_offset + 26)
    name_length, extra_length = np.frombuffer(f.read(4), "<u2")
  start = info.header_offset + 30 + int(name_length) + int(extra_length)
  if info.file_size - header_bytes != int(np.prod(shape)) * dtype.itemsize:
    raise ValueError(f"{path}: {name} holds {info.file_size - header_bytes} data bytes for shape {shape}")
  return shape, dtype, fortran_order, start, start + header_bytes, info


def _check_member(path, name, finite):
  """Reads the member `name` of the shard at `path` a block of _CHECK_BYTES at a time (memory stays flat).

  Returns:
    False when (`finite`) it holds NaN or inf, else True. Raises ValueError when its bytes are cut short or do not
    match the zip's CRC.
  """
  _, dtype, _, start, data, info = _member_layout(path, name)
  with open(path, "rb") as f:
    f.seek(start)
    crc = zlib.crc32(f.read(data - start))                      # the npy header
    left = info.file_size - (data - start)
    step = max(1, _CHECK_BYTES // dtype.itemsize) * dtype.itemsize
    while left > 0:
      block = f.read(min(step, left))
      if len(block) != min(step, left):
        raise ValueError(f"{path}: {name} is cut short")
      if finite and not np.all(np.isfinite(np.frombuffer(block, dtype))):
        return False
      crc = zlib.crc32(block, crc)
      left -= len(block)
  if crc != info.CRC:
    raise ValueError(f"{path}: {name} does not match its CRC")
  return True


def in_sorted(sorted_keys, keys):
  """bool [n]: which of `keys` are in `sorted_keys` (np.bytes_ S16, sorted): the one test of "which keys are
  stored"."""
  pos = np.searchsorted(sorted_keys, keys)
  found = pos < len(sorted_keys)
  found[found] = sorted_keys[pos[found]] == keys[found]
  return found


class _Shards:
  """The shards of one quantity: sorted keys with (shard, row) per key; vectors read on demand, only the rows asked
  for (memory-mapped from the shard files, or kept in memory when the store has no folder).

  Each shard file is checked when the quantity is opened, read a block at a time (its zip CRC, width, finite
  values); one that fails is reported and deleted, so its sentences count as missing and are encoded again.
  """

  def __init__(self, folder, width):
    self.folder, self.width = folder, width
    self.sources = []                       # per shard: its path, or float32 [k, H] in memory (no folder)
    self.keys = np.zeros([0], f"S{_KEY_BYTES}")
    self.where = np.zeros([0, 2], np.int64)  # per key: (shard, row)
    if folder and os.path.isdir(folder):
      opened = [(path, self._open(path)) for path in sorted(glob.glob(os.path.join(folder, "*.npz")))]
      opened = [(path, keys) for path, keys in opened if keys is not None]
      self._add([keys for _, keys in opened], [path for path, _ in opened])

  def _open(self, path):
    """np.bytes_ S16 [k]: the keys of the shard file at `path` once checked; None when it fails (reported,
    deleted)."""
    try:
      keys, vectors = shard_member(path, "keys"), shard_member(path, "vectors")
      shapes = f"keys {keys.dtype} {keys.shape} and vectors {vectors.dtype} {vectors.shape}"
      fits = (keys.dtype == np.dtype(f"S{_KEY_BYTES}") and keys.ndim == 1 and vectors.dtype == np.float32
              and vectors.shape == (len(keys), self.width))
      keys = np.array(keys)
      del vectors
      fits = fits and _check_member(path, "keys", False) and _check_member(path, "vectors", True)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
      logging.warning("embedding store shard %s is unreadable (%s); deleting it, its sentences are encoded again",
                      path, e)
      os.remove(path)
      return None
    if not fits:
      logging.warning("embedding store shard %s holds %s (want float32 width %d, finite values); "
                      "deleting it, its sentences are encoded again", path, shapes, self.width)
      os.remove(path)
      return None
    return keys

  def _add(self, shard_keys, sources):
    """Adds shards: their keys (each S16 [k]) and sources (path or float32 [k, H]), sorting the index once."""
    where = [np.stack([np.full(len(keys), len(self.sources) + i), np.arange(len(keys))], axis=1)
             for i, keys in enumerate(shard_keys)]
    self.sources.extend(sources)
    keys = np.concatenate([self.keys, *shard_keys])
    where = np.concatenate([self.where, *where])
    order = np.argsort(keys, kind="stable")
    self.keys, self.where = keys[order], where[order]

  def add(self, keys, vectors):
    """Stores a new shard: atomically on disk when the store has a folder (its vectors are then not kept), else in
    memory."""
    if not self.folder:
      self._add([keys], [vectors])
      return
    path = os.path.join(self.folder, shard_name(keys))
    with io_utils.atomic_path(path) as tmp:
      with open(tmp, "wb") as f:
        np.savez(f, keys=keys, vectors=vectors)
    self._add([keys], [path])

  def find(self, keys):
    """bool [n]: which of `keys` are stored."""
    return in_sorted(self.keys, keys)

  def get(self, keys):
    """float32 [n, H] for stored `keys`, read from their shards (only their rows)."""
    where = self.where[np.searchsorted(self.keys, keys)]
    out = np.empty([len(keys), self.width], np.float32)
    for shard in np.unique(where[:, 0]):
      rows = where[:, 0] == shard
      source = self.sources[shard]
      vectors = shard_member(source, "vectors") if isinstance(source, str) else source
      out[rows] = vectors[where[rows, 1]]
    return out


class EmbeddingStore:
  """Per-sentence quantities of one model and max_seq_length, encoded through a SentenceEmbedder on a miss.

  Args:
    embedder: bert_flow_tf.embedding.embedder.SentenceEmbedder (its model, tokenizer, strategy and length).
    root: str or None. The store's folder (see the module notes); None keeps everything in memory.
    batch_size: int, sentences per encoding batch.
    shard_size: int, newly encoded sentences per shard (and per resumable unit of work).
  """

  def __init__(self, embedder, root=None, batch_size=settings.BATCH_SENTENCES, shard_size=DEFAULT_SHARD_SIZE):
    self.embedder = embedder
    self.batch_size = settings.check_batch_sentences("batch_size", batch_size)
    self.shard_size = checks.positive_int("shard_size", shard_size)
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

  def get(self, sentences, names, show_progress=None):
    """The quantities `names` of each sentence, in input order; encodes only what is not stored yet.

    Args:
      sentences: list of str (duplicates welcome: each distinct sentence is looked up and encoded once).
      names: iterable of quantity names (`pooling.quantities`).
      show_progress: None (a progress line when many sentences are encoded), True (always) or False (never).

    Returns:
      dict name -> np.float32 [n, H].
    """
    names, unique, inverse = self._stored(sentences, names, show_progress)
    return {name: self._quantity(name).get(unique)[inverse.reshape(-1)] for name in names}

  def ensure(self, sentences, names, show_progress=None):
    """Makes sure the quantities `names` of each sentence are stored, as `get` but returning nothing: with a
    folder, memory holds the keys and one shard being encoded, not the vectors."""
    self._stored(sentences, names, show_progress)

  def _stored(self, sentences, names, show_progress):
    """Encodes what is missing. Returns (sorted names, unique keys S16 [u], int [n] each sentence's in them)."""
    names = tuple(sorted(set(names)))
    keys = sentence_keys(sentences)
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    missing = {name: ~self._quantity(name).find(unique) for name in names}
    todo = np.flatnonzero(np.any(list(missing.values()), axis=0)) if names else np.zeros([0], np.int64)
    if len(todo):
      wanted = tuple(name for name in names if missing[name].any())
      self._encode([sentences[i] for i in first[todo]], unique[todo], wanted, show_progress)
    return names, unique, inverse

  def _encode(self, sentences, keys, names, show_progress):
    logging.info("encoding %d new sentences (%s)", len(sentences), ", ".join(names))
    progress = None if show_progress is False else Progress("encoding", len(sentences), forced=show_progress)
    for start in range(0, len(sentences), self.shard_size):
      self._encode_shard(sentences[start:start + self.shard_size], keys[start:start + self.shard_size], names,
                         progress)

  def _encode_shard(self, sentences, keys, names, progress):
    """Encodes and stores one shard; its vectors are dropped on return (kept only by an in-memory store)."""
    values = self.embedder.encode_quantities(sentences, names, self.batch_size, progress)
    for name in names:
      self._quantity(name).add(keys, values[name])
    self.encoded += len(sentences)

  def vectors(self, sentences, pooling, show_progress=None):
    """Sentence vectors for a Pooling: np.float32 [n, D], derived from the stored quantities."""
    return pooling_lib.combine(pooling, self.get(sentences, pooling_lib.quantities(pooling), show_progress))
