"""Calibrations fitted from the embedding store block by block, in memory that does not grow with the corpus.

The in-memory path (`pair_sources.CachedPairs`, `baselines.Whitening.fit`) holds every vector; it stays the default
where they fit. Here a pooling's vectors are read from the store's shards in blocks of rows (`StoreShards`: the npz
members memory-mapped, only a block's pages touched), optionally restricted to a fit set's sentences (`fit_set`),
so the peak memory is a few blocks plus a shuffle buffer of a fixed size in MB, whatever the number of sentences:

  StreamedPairs   the flow's pairs through tf.data: shards in a seeded order per epoch, read side by side a block at
                  a time, rows paired within their shard (`data.pairs.consecutive_pairs`: rows 2i and 2i+1, an odd
                  last row with the shard's first, as a sentences file's lines pair up), shuffled across shards in a
                  buffer (DEFAULT_SHUFFLE_MB), batched. Each pair is copied into its own [2, D] tensor before the
                  buffer: a row sliced from a block shares (so keeps alive) the whole block while it waits there.
                  The pair loss and step count are `flow_fitting.fit_flow`'s (num_pairs / batch_size * epochs, a
                  partial batch carried on).
  fit_whitening   BERT-whitening's mean and covariance merged block by block (Chan et al.'s pairwise update), the
                  same SVD and floor as `baselines.Whitening`.

The quantities of a pooling that needs several (first-last-avg: mean-1 and mean-L) are matched by key, and each
distinct sentence is read once, whatever the store's history (`StoreShards`).

Legend: k = rows in a shard, R = rows in a block, H = hidden size, D = pooling width, B = pairs per batch.
"""
import os

import numpy as np
import tensorflow as tf

from bert_flow_tf.calibration import baselines
from bert_flow_tf.calibration import decompositions
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.embedding import store_files
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import tf_data

DEFAULT_SHUFFLE_MB = 16    # the shuffle buffer: 5,461 pairs at D=384, 2,730 at D=768
BLOCK_ROWS = 1024          # rows read at a time for pairs: 1.5 MB at D=384
MOMENT_BLOCK_ROWS = 8192   # rows read at a time for whitening's moments: 24 MB in float64 at D=384
PAIR_SOURCE = "streamed from the embedding store"   # a streamed fit's flow.json: provenance["pairs"]


class StoreShards:
  """A pooling's vectors in a store folder, read a block of rows at a time (memory-mapped npz members).

  Each distinct sentence stored in every quantity of the pooling is read once, whatever the store's history: a
  sentence stored in two shards (two processes filled the store) is read from the first, and the quantities are
  matched by key, not by shard name (a re-encoded shard of one quantity has another name than its sibling). A
  sentence's rows are those of its shard in the first quantity (`names[0]`); the others are looked up by key.

  Args:
    folder: str, a store folder (<cache_dir>/<model key>, `EmbeddingStore.folder`).
    pooling_spec: a PoolingSpec (`pooling.resolve`).
    keys: np.bytes_ S16 [n] (`store_files.sentence_keys`), or None. Given, only the rows of these sentences are
      read (a fit set in a store that holds others); a shard's rows keep their order.

  Attributes:
    shards: the file names (in folder/names[0]) of the shards read, sorted.
    rows: int64 [shards], k: the rows of each shard that are read. Shards with none are left out.
  """

  def __init__(self, folder, pooling_spec, keys=None):
    self.folder, self.pooling_spec = folder, pooling_spec
    self.names = tuple(sorted(pooling_lib.quantities(pooling_spec)))
    indexes = {}
    for name in self.names:
      paths = store_files.shard_paths(folder, name)
      width = store_files.shard_member(paths[0], "vectors").shape[1] if paths else 0
      indexes[name] = store_files.KeyIndex(width)
      indexes[name].add([store_files.read_keys(path) for path in paths], paths)
    first = indexes[self.names[0]]
    wanted = np.unique(first.keys)                               # each distinct sentence once
    if keys is not None:
      wanted = wanted[store_files.in_sorted(np.unique(keys), wanted)]
    for name in self.names[1:]:
      wanted = wanted[indexes[name].find(wanted)]                # stored in every quantity
    if not len(wanted):
      raise ValueError(f"{folder}: no shard of {', '.join(self.names)}"
                       + ("" if keys is None else f" holds any of the {len(np.unique(keys))} sentences asked for"))
    home = first.locate(wanted)                                  # [u, 2]: (shard, row) in names[0]
    order = np.lexsort((home[:, 1], home[:, 0]))                 # by shard, then row: a shard's rows in order
    wanted, home = wanted[order], home[order]
    shards, starts = np.unique(home[:, 0], return_index=True)
    bounds = list(starts) + [len(home)]
    # What reading needs: each quantity's shard files and width (not its key index), and per shard read its number
    # in names[0].
    self._files = {name: index.sources for name, index in indexes.items()}
    self._widths = {name: index.width for name, index in indexes.items()}
    self._numbers = shards
    self._rows = [home[a:b, 1] for a, b in zip(bounds[:-1], bounds[1:])]   # per shard: rows in names[0]'s file
    self._where = {name: [indexes[name].locate(wanted[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
                   for name in self.names[1:]}                   # per shard: (shard, row) in that quantity
    self.shards = [os.path.basename(first.sources[i]) for i in shards]
    self.rows = np.array([len(r) for r in self._rows], np.int64)
    self.dim = self.block(0, 0, 1).shape[1]

  def __len__(self):
    return len(self.shards)

  def read(self, index):
    """float32 [k, D]: the pooled vectors of shard `index`."""
    return self.block(index, 0, int(self.rows[index]))

  def block(self, index, start, count):
    """float32 [count, D]: rows start .. start + count - 1 (of those read) of shard `index`; only their pages of
    the files are touched."""
    rows = self._rows[index][start:start + count]
    where = {self.names[0]: np.stack([np.full(len(rows), self._numbers[index]), rows], axis=1)}
    where.update({name: self._where[name][index][start:start + count] for name in self.names[1:]})
    values = {name: store_files.read_rows(self._files[name], where[name], self._widths[name]) for name in self.names}
    return np.asarray(pooling_lib.combine(self.pooling_spec, values), np.float32)

  def blocks(self, index, rows):
    """Yields (first row, float32 [R <= rows, D]): shard `index` in blocks of `rows` rows."""
    length = int(self.rows[index])
    for start in range(0, length, rows):
      yield start, self.block(index, start, min(rows, length - start))


def fit_set(folder, pooling_spec, sentences):
  """StoreShards of `sentences` (each distinct one once, in the store's order) in the store folder `folder`.
  Raises ValueError when some of them are not stored (`EmbeddingStore.ensure` stores them)."""
  keys = np.unique(store_files.sentence_keys(sentences))
  shards = StoreShards(folder, pooling_spec, keys=keys)
  if int(shards.rows.sum()) != len(keys):
    raise ValueError(f"{folder}: {len(keys) - int(shards.rows.sum())} of the {len(keys)} fit sentences are not "
                     f"stored for {', '.join(shards.names)}; store them first (EmbeddingStore.ensure)")
  return shards


class StreamedPairs(pair_sources.PairSource):
  """fit_flow's pairs, streamed from the store (see the module notes). Fits on one device, as CachedPairs.

  `fit_flow` asks `batch_order` for its order: here the step numbers themselves; step s's batch is the s-th of
  the stream, so a fit resumed at step s skips s batches and sees what an uninterrupted one would. tf.data's
  seeded shuffles also depend on TF's global seed, which fit_flow sets to the fit's seed before the first batch
  (`keras.utils.set_random_seed`); `pair_ids` sets it the same way.

  Args:
    shards: StoreShards.
    shuffle_buffer: int or None, pairs in the shuffle buffer (memory: shuffle_buffer x 2 x D x 4 bytes); None:
      DEFAULT_SHUFFLE_MB's worth.
    cycle_length: int, shards read side by side (memory: cycle_length blocks of BLOCK_ROWS rows).
  """

  def __init__(self, shards, shuffle_buffer=None, cycle_length=4):
    if shuffle_buffer is None:
      shuffle_buffer = max(1, DEFAULT_SHUFFLE_MB * 2 ** 20 // (2 * shards.dim * 4))
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

  def _block_pairs(self, index, start):
    """(pairs float32 [R / 2, 2, D], pair ids int64 [R / 2]): the rows start .. start + BLOCK_ROWS - 1 of shard
    `index`, paired as `consecutive_pairs` pairs them (BLOCK_ROWS is even: a pair never straddles two blocks)."""
    index, start = int(index), int(start)
    count = min(BLOCK_ROWS, int(self.shards.rows[index]) - start)
    block = self.shards.block(index, start, count)
    if count % 2:                                               # the shard's odd last row goes with its first
      block = np.concatenate([block, self.shards.block(index, 0, 1)])
    ids = index * (1 << 32) + np.arange(start, start + count, 2, dtype=np.int64)   # pair id: (shard, row a)
    return block.reshape(-1, 2, self.dim), ids

  def dataset(self, batch_size, seed):
    """tf.data.Dataset of (a float32 [B, D], b float32 [B, D], pair id int64 [B]), endless."""
    rows = tf.constant(self.shards.rows)

    def read_block(index, start):
      pairs, ids = tf.numpy_function(self._block_pairs, [index, start], (tf.float32, tf.int64), stateful=False)
      return tf.ensure_shape(pairs, [None, 2, self.dim]), tf.ensure_shape(ids, [None])

    def read(index):
      starts = tf.data.Dataset.range(0, rows[index], BLOCK_ROWS)
      blocks = starts.map(lambda start: read_block(index, start))
      # A row of an unbatched block is a view of the block; `+ 0` gives each pair its own buffer (module notes).
      return blocks.unbatch().map(lambda pair, pair_id: (pair + 0.0, pair_id))

    # One epoch: shards in a seeded order, read side by side, pairs through the buffer. Repeated after the buffer,
    # so an epoch holds every pair once (with new orders each epoch) and a partial last batch runs into the next.
    shards = tf.data.Dataset.range(len(self.shards)).shuffle(len(self.shards), seed=seed,
                                                               reshuffle_each_iteration=True)
    pairs = shards.interleave(read, cycle_length=self.cycle_length, block_length=1)
    pairs = pairs.shuffle(self.shuffle_buffer, seed=seed + 1, reshuffle_each_iteration=True).repeat()
    batches = pairs.batch(batch_size, drop_remainder=True).map(lambda ab, ids: (ab[:, 0], ab[:, 1], ids))
    return tf_data.untuned(batches.prefetch(2))

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
  """BERT-whitening fitted block by block: the mean and covariance merged pairwise, in float64.

  Args:
    shards: StoreShards.
    k: int or None, as `baselines.Whitening`.

  Returns:
    baselines.Whitening, fitted (equal to `Whitening(k).fit(all vectors)` up to float64 rounding).
  """
  moments = decompositions.Scatter()
  for index in range(len(shards)):
    for _, block in shards.blocks(index, MOMENT_BLOCK_ROWS):
      moments.add(block)
  if moments.n < 2:
    raise ValueError(f"whitening: need at least 2 vectors to fit, got {moments.n}")
  return baselines.Whitening(k).fit_moments(moments.mean, moments.scatter / (moments.n - 1))
