"""EmbeddingStore: per-sentence pooled quantities, content-addressed, so no sentence is run through BERT twice.

What is stored is not a pooling but the quantities every pooling is derived from (`pooling.quantities`): the token
mean of layer l ("mean-l"), block l's [CLS] vector ("cls-l") and the pooler output ("pooler"), each float32 [H]
per sentence. A run that asks for `first-last-avg` stores "mean-1" and "mean-L"; a later `last-avg` run over the
same sentences finds "mean-L" and runs no BERT at all; `emb-avg` needs "mean-0" only, and its forward pass stops
before the first transformer block. A sentence shared by two datasets or splits is encoded once.

On disk (`cache_dir` given), in the layout of `store_files` (the one owner of the files: paths, model key, shard names
and members): <cache_dir>/<model key>/<quantity>/<shard>.npz. Shards are written atomically, one per quantity for every
`shard_size` newly encoded sentences, so a killed run keeps what it finished and a rerun encodes only the rest. A
shard that cannot be read (its zip CRC included), has the wrong width or holds NaN/inf is reported, deleted and its
sentences encoded again: every shard of a quantity is checked when the quantity is first asked for, read a block at a
time. Two processes filling one store may each store a sentence the other stored meanwhile; lookups go by key
(`store_files.KeyIndex`), so such a sentence is read from one shard and counted once.
Memory: an open store holds the sorted keys and (shard, row) of each quantity asked for (32 bytes a sentence);
`get` reads only the rows asked for from the memory-mapped shards (`store_files.shard_member`), and `ensure` stores
sentences without reading their vectors back. Encoding holds one shard's vectors at a time.
Storage grows with what was asked, not with the model's depth: one quantity of 1M sentences is 1M x H x 4 bytes
(BERT-base: 3 GB).

Without `cache_dir` the store keeps its shards in memory for the life of the object (the same lookups, no files).
"""
import os
import zipfile

from absl import logging
import numpy as np

from bert_flow_tf.embedding import settings
from bert_flow_tf.embedding import store_files
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import checks
from bert_flow_tf.utils.progress import Progress


class _Shards:
  """The shards of one quantity: a `store_files.KeyIndex` over them; vectors read on demand, only the rows asked
  for (memory-mapped from the shard files, or kept in memory when the store has no folder).

  Each shard file is checked when the quantity is opened, read a block at a time (its zip CRC, width, finite
  values); one that fails is reported and deleted, so its sentences count as missing and are encoded again.
  """

  def __init__(self, folder, quantity, width):
    self.folder, self.quantity = folder, quantity
    self.index = store_files.KeyIndex(width)
    if folder:
      opened = [(path, self._open(path, width)) for path in store_files.shard_paths(folder, quantity)]
      opened = [(path, keys) for path, keys in opened if keys is not None]
      self.index.add([keys for _, keys in opened], [path for path, _ in opened])

  @property
  def sources(self):
    return self.index.sources

  @staticmethod
  def _open(path, width):
    """np.bytes_ S16 [k]: the keys of the shard file at `path` once checked; None when it fails (reported,
    deleted)."""
    try:
      return store_files.check_shard(path, width)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
      logging.warning("embedding store shard %s is unreadable or not finite (%s); deleting it, its sentences are "
                      "encoded again", path, e)
      os.remove(path)
      return None

  def add(self, keys, vectors):
    """Stores a new shard: atomically on disk when the store has a folder (its vectors are then not kept), else in
    memory."""
    if not self.folder:
      self.index.add([keys], [vectors])
      return
    path = store_files.write_shard(self.folder, self.quantity, keys, vectors)
    self.index.add([keys], [path])

  def find(self, keys):
    """bool [n]: which of `keys` are stored."""
    return self.index.find(keys)

  def get(self, keys):
    """float32 [n, H] for stored `keys`, read from their shards (only their rows)."""
    return self.index.read(self.index.locate(keys))


class EmbeddingStore:
  """Per-sentence quantities of one model and max_seq_length, encoded through a QuantityEncoder on a miss.

  Args:
    embedder: bert_flow_tf.embedding.embedder.QuantityEncoder (its model, tokenizer, strategy and length).
    cache_dir: str or None. The store's folder (see the module notes); None keeps everything in memory.
    batch_size: int, sentences per encoding batch.
    shard_size: int, newly encoded sentences per shard (and per resumable unit of work).
  """

  def __init__(self, embedder, cache_dir=None, batch_size=settings.BATCH_SENTENCES,
               shard_size=store_files.DEFAULT_SHARD_SIZE):
    self.embedder = embedder
    self.batch_size = settings.check_batch_sentences("batch_size", batch_size)
    self.shard_size = checks.positive_int("shard_size", shard_size)
    self.width = embedder.loaded.hidden_size
    self.folder = None
    if cache_dir:
      self.folder = store_files.model_folder(cache_dir, store_files.describe_model(embedder))
    self._shards = {}
    self.encoded = 0  # sentences run through BERT by this object, for reports and tests

  def _quantity(self, name):
    if name not in self._shards:
      self._shards[name] = _Shards(self.folder, name, self.width)
    return self._shards[name]

  def get(self, sentences, names, show_progress=None):
    """The quantities `names` of each sentence, in input order; encodes only what is not stored yet.

    Args:
      sentences: list of str (duplicates welcome: each distinct sentence is looked up and encoded once).
      names: iterable of quantity names (`pooling.quantities`).
      show_progress: True, False or None (auto), the progress line while encoding (utils.progress).

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
    keys = store_files.sentence_keys(sentences)
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    missing = {name: ~self._quantity(name).find(unique) for name in names}
    todo = np.flatnonzero(np.any(list(missing.values()), axis=0)) if names else np.zeros([0], np.int64)
    if len(todo):
      wanted = tuple(name for name in names if missing[name].any())
      self._encode([sentences[i] for i in first[todo]], unique[todo], wanted, show_progress)
    return names, unique, inverse

  def _encode(self, sentences, keys, names, show_progress):
    logging.info("encoding %d new sentences (%s)", len(sentences), ", ".join(names))
    progress = Progress("encoding", len(sentences), show=show_progress)
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
