"""Calibrations fitted from the embedding store shard by shard, in memory that does not grow with the corpus.

The in-memory path (`pair_sources.CachedPairs`, `baselines.Whitening.fit`) holds every vector; it stays the default
where they fit. Here a pooling's vectors are read one store shard at a time (`StoreShards`), so the peak memory is
a few shards plus a shuffle buffer whatever the number of sentences:

  StreamedPairs   the flow's pairs through tf.data: shards in a seeded order per epoch, interleaved, rows paired
                  within their shard (`data.pairs.consecutive_pairs`: rows 2i and 2i+1, an odd last row with
                  the shard's first, as a sentences file's lines pair up), shuffled across shards in a buffer,
                  batched. The pair loss and step count are `flow_fitting.fit_flow`'s (num_pairs / batch_size *
                  epochs, a partial batch carried on).
  fit_whitening   BERT-whitening's mean and covariance merged shard by shard (Chan et al.'s pairwise update), the
                  same SVD and floor as `baselines.Whitening`.

Shards of a pooling that needs several quantities (first-last-avg: mean-1 and mean-L) are matched by file name:
the store and the Beam pipeline name a shard by a hash of its keys, the same in every quantity's folder.

Legend: k = rows in a shard, H = hidden size, D = pooling width, B = pairs per batch.
"""
import glob
import os

import numpy as np
import tensorflow as tf

from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import tf_data

DEFAULT_SHUFFLE_BUFFER = 16384


class StoreShards:
  """A pooling's vectors in a store folder, one shard at a time.

  Args:
    folder: str, a store folder (<cached_dir>/<model key>, `EmbeddingStore.folder`).
    pooling: a resolved pooling (`pooling.resolve`).
  """

  def __init__(self, folder, pooling):
    self.folder, self.pooling = folder, pooling
    self.names = tuple(sorted(pooling_lib.quantities(pooling)))
    files = {name: sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, name, "*.npz")))
             for name in self.names}
    self.shards = files[self.names[0]]
    for name in self.names[1:]:
      if files[name] != self.shards:
        raise ValueError(f"{folder}: the shards of {name!r} ({len(files[name])}) are not those of "
                         f"{self.names[0]!r} ({len(self.shards)}); a store written before shards were named by "
                         "their keys: stream a one-quantity pooling or refill the store")
    if not self.shards:
      raise ValueError(f"{folder}: no shard of {', '.join(self.names)}")
    self.rows = np.array([len(self._keys(s)) for s in self.shards], np.int64)   # k per shard (keys read only)
    self.dim = self.read(0).shape[1]

  def _keys(self, shard):
    with np.load(os.path.join(self.folder, self.names[0], shard)) as f:
      return f["keys"]

  def __len__(self):
    return len(self.shards)

  def read(self, index):
    """float32 [k, D]: the pooled vectors of shard `index`."""
    values = {}
    for name in self.names:
      with np.load(os.path.join(self.folder, name, self.shards[index])) as f:
        values[name] = f["vectors"]
    return np.asarray(pooling_lib.combine(self.pooling, values), np.float32)


class StreamedPairs(pair_sources.PairSource):
  """fit_flow's pairs, streamed from the store (see the module notes). Fits on one device, as CachedPairs.

  `fit_flow` asks `batch_order` for its order: here the step numbers themselves; step s's batch is the s-th of
  the stream, so a fit resumed at step s skips s batches and sees what an uninterrupted one would. tf.data's
  seeded shuffles also depend on TF's global seed, which fit_flow sets to the fit's seed before the first batch
  (`keras.utils.set_random_seed`); `pair_ids` sets it the same way.

  Args:
    shards: StoreShards.
    shuffle_buffer: int, pairs in the shuffle buffer (memory: shuffle_buffer x 2 x D x 4 bytes).
    cycle_length: int, shards read side by side (memory: cycle_length shards).
  """

  def __init__(self, shards, shuffle_buffer=DEFAULT_SHUFFLE_BUFFER, cycle_length=2):
    if shuffle_buffer < 1 or cycle_length < 1:
      raise ValueError(f"shuffle_buffer {shuffle_buffer} and cycle_length {cycle_length} must be >= 1")
    self.shards, self.shuffle_buffer, self.cycle_length = shards, shuffle_buffer, cycle_length
    self.dim = shards.dim
    self.num_pairs = int(sum(len(pairs_lib.consecutive_pairs(k)[0]) for k in shards.rows))
    self.strategy = tf.distribute.get_strategy()
    self._batch_size = self._seed = None
    self._iterator, self._next_step = None, None

  def __len__(self):
    return self.num_pairs

  def _shard_pairs(self, index):
    vectors = self.shards.read(int(index))
    rows_a, rows_b = pairs_lib.consecutive_pairs(len(vectors))
    ids = int(index) * (1 << 32) + rows_a                        # pair id: (shard, row a)
    return vectors[rows_a], vectors[rows_b], ids.astype(np.int64)

  def dataset(self, batch_size, seed):
    """tf.data.Dataset of (a float32 [B, D], b float32 [B, D], pair id int64 [B]), endless."""
    spec = (tf.float32, tf.float32, tf.int64)

    def read(index):
      a, b, ids = tf.numpy_function(self._shard_pairs, [index], spec, stateful=False)
      a.set_shape([None, self.dim])
      b.set_shape([None, self.dim])
      ids.set_shape([None])
      return tf.data.Dataset.from_tensor_slices((a, b, ids))

    # One epoch: shards in a seeded order, read side by side, rows through the buffer. Repeated after the buffer,
    # so an epoch holds every pair once (with new orders each epoch) and a partial last batch runs into the next.
    shards = tf.data.Dataset.range(len(self.shards)).shuffle(len(self.shards), seed=seed,
                                                               reshuffle_each_iteration=True)
    pairs = shards.interleave(read, cycle_length=self.cycle_length, block_length=1)
    pairs = pairs.shuffle(self.shuffle_buffer, seed=seed + 1, reshuffle_each_iteration=True).repeat()
    return tf_data.untuned(pairs.batch(batch_size, drop_remainder=True).prefetch(2))

  def batch_order(self, num_steps, batch_size, seed):
    """fit_flow's order: int64 [num_steps, 1], the step numbers (the stream fixes which pairs each step sees)."""
    self._batch_size, self._seed = batch_size, seed
    return np.arange(num_steps, dtype=np.int64)[:, None]

  def _step_batch(self, step):
    if self._iterator is None or step != self._next_step:
      self._iterator = iter(self.dataset(self._batch_size, self._seed).skip(step))
    self._next_step = step + 1
    return next(self._iterator)

  def batch(self, idx):
    """(a, b) float32 [B, D] of step idx[0] (as `batch_order` numbers them)."""
    a, b, _ = self._step_batch(int(idx[0]))
    return a, b

  def pair_ids(self, num_steps, batch_size, seed):
    """int64 [num_steps, B]: the pair ids (shard index * 2**32 + row a) each step of a fit with this batch size
    and seed sees, for tests and checks. Sets TF's global seed to `seed`, as fit_flow does."""
    tf.random.set_seed(seed)
    batches = self.dataset(batch_size, seed).take(num_steps)
    return np.stack([ids.numpy() for _, _, ids in batches]) if num_steps else np.zeros([0, batch_size], np.int64)


def fit_whitening(shards, k=None):
  """BERT-whitening fitted shard by shard: the mean and covariance merged pairwise, in float64.

  Args:
    shards: StoreShards.
    k: int or None, as `baselines.Whitening`.

  Returns:
    baselines.Whitening, fitted (equal to `Whitening(k).fit(all vectors)` up to float64 rounding).
  """
  n, mean, scatter = 0, None, None                              # scatter: sum of outer products about the mean
  for index in range(len(shards)):
    x = shards.read(index).astype(np.float64)                   # [k, D]
    m = x.mean(axis=0)
    s = (x - m).T @ (x - m)
    if n == 0:
      n, mean, scatter = len(x), m, s
      continue
    total = n + len(x)
    delta = m - mean
    scatter = scatter + s + np.outer(delta, delta) * (n * len(x) / total)
    mean = mean + delta * (len(x) / total)
    n = total
  if n < 2:
    raise ValueError(f"whitening: need at least 2 vectors to fit, got {n}")
  return baselines.Whitening(k).fit_moments(mean, scatter / (n - 1))
