"""Where a flow fit gets its sentence pairs: the `PairSource` interface and its in-memory sources.

  PairSource     the interface `flow_fitting.fit_flow` reads (width, strategy, size, batch order, batches)
  CachedPairs    the embeddings computed once without dropout: fast. Fits on one device (the default strategy:
                 wherever TF places the ops); the flow is small and its step is cheap.
  FaithfulPairs  BERT in training mode (dropout on), embeddings recomputed every step, as the original ran. BERT
                 itself stays frozen. Each step runs under the embedder's tf.distribute strategy: the host packs
                 the B pairs, the replicas embed and score their share, the flow's gradients are summed across
                 replicas (see `FaithfulPairs.make_train_step`).

The third source, `store_stream.StreamedPairs`, reads the embedding store shard by shard.

Legend: N pairs, B pairs per batch, D embedding width, R replicas, S padded sequence length.
"""
from typing import Protocol

import numpy as np
import tensorflow as tf

import glow
from bert_flow_tf.data import order as order_lib
from bert_flow_tf.modeling import packing


class PairSource(Protocol):
  """The pairs a flow fit reads; subclass it (its methods are the defaults of an in-memory source).

  Attributes:
    dim: int, D.
    strategy: tf.distribute.Strategy the flow and its optimizer are made under.
  """
  dim: int
  strategy: tf.distribute.Strategy

  def __len__(self):
    """N, the number of pairs (the step count is N / B x epochs)."""
    raise NotImplementedError

  def batch_order(self, num_steps, batch_size, seed):
    """What each step reads: an array [num_steps, ...], row s passed to `batch` at step s.

    Default: the pair indices [num_steps, B], a seeded permutation per epoch (`data.order.batch_order`)."""
    return order_lib.batch_order(len(self), batch_size, num_steps, seed)

  def batch(self, row):
    """(a, b) float32 [B, D]: the vectors of the pairs of one step, `row` a row of `batch_order`."""
    raise NotImplementedError

  def make_train_step(self, glow_model, optimizer, batch_size):  # pylint: disable=unused-argument
    """A step of its own, train_step(row) -> loss float32 scalar (bits/dim), or None (the default): the fit then
    runs the flow's traced pair step (`glow.make_train_step(pairs=True)`) on `batch(row)`."""
    return None


class CachedPairs(PairSource):
  """Pairs as precomputed vectors. a, b: float32 [N, D]. The fit runs on one device (the default strategy)."""

  def __init__(self, a, b):
    if a.shape != b.shape:
      raise ValueError(f"pair vectors differ in shape: a {a.shape}, b {b.shape}")
    self.a, self.b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    self.dim = a.shape[1]
    self.strategy = tf.distribute.get_strategy()

  def __len__(self):
    return len(self.a)

  def batch(self, row):
    return tf.constant(self.a[row]), tf.constant(self.b[row])


class FaithfulPairs(PairSource):
  """Pairs as sentences, embedded every step by BERT in training mode (dropout on), as the original did.

  The sentences are tokenized once; each step packs its rows on the host (`[CLS] pieces [SEP]`, padded to the
  shortest of `packing.static_lengths` that holds the longest sentence, a and b each their own), so no string
  op runs on the replicas. Where the step runs:

    default strategy, no XLA   on the host as before the strategies: BERT embeds a then b (one traced function
                               called twice, so its dropout draws continue from a to b), then the flow's traced
                               pair step (`make_train_step` returns None). Earlier faithful fits reproduce.
    any other strategy / XLA   one `strategy.run` per step: each replica embeds its B / R pairs (a and b), takes
                               `glow.loss_and_gradients(..., global_batch_size=B)` and applies the gradients,
                               which the optimizer sums across replicas. B is padded to a multiple of R with
                               repeated rows of weight 0. With use_xla the replica's forward and backward pass
                               is XLA-compiled (the all-reduce and update run outside it).

  Args:
    embedder: bert_flow_tf.embedding.embedder.SentenceEmbedder; its strategy, static_shapes and use_xla apply.
      The flow and its optimizer are created under `embedder.strategy.scope()` by `fit_flow`.
    sentences_a, sentences_b: sequences of N str.
  """

  def __init__(self, embedder, sentences_a, sentences_b):
    self.embedder = embedder
    self.strategy = embedder.strategy
    self.dim = embedder.dim
    self.n = len(sentences_a)
    self.pieces = embedder.tokenizer.tokenize_list(list(sentences_a) + list(sentences_b))   # ragged [2N, (pieces)]
    ids = tf.TensorSpec([None, None], tf.int32)
    self._embed_training = tf.function(lambda w, m, t: embedder.embed_inputs(
        packing.input_dict(w, m, t), training=True),
        input_signature=[ids, ids, ids], autograph=False)
    # The default strategy outside any scope: the host path. Anything else runs under strategy.run.
    self.on_host = (not embedder.use_xla and self.strategy is tf.distribute.get_strategy()
                    and not tf.distribute.has_strategy())

  def __len__(self):
    return self.n

  def _pack(self, rows):
    """Packed inputs of sentences `rows` (of the 2N): dict of int32 [len(rows), S], S from static_lengths."""
    return packing.pack_to_longest(self.embedder.tokenizer, tf.gather(self.pieces, rows), static_shapes=True)

  def _embed(self, rows):
    inputs = self._pack(rows)
    return self._embed_training(inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"])

  def batch(self, row):
    """(a, b) float32 [len(row), D], embedded on the host with dropout (the host path; DDI init)."""
    return self._embed(row), self._embed(row + self.n)

  def make_train_step(self, glow_model, optimizer, batch_size):
    """None on the host path; else train_step(row int [B]) -> loss float32 scalar (bits/dim, before the update).

    Call under `self.strategy.scope()` (the optimizer builds its slots here), with `glow_model` and `optimizer` made
    under that scope.
    """
    if self.on_host:
      return None
    glow.training.check_initialized(glow_model)
    strategy, embedder = self.strategy, self.embedder
    replicas = strategy.num_replicas_in_sync
    rows = -(-batch_size // replicas) * replicas                  # B rounded up to a multiple of R
    variables = glow_model.trainable_variables
    optimizer.build(variables)

    def forward_backward(a, b, weight):
      """One replica's share: a, b dicts of int32 [B/R, S], weight float32 [B/R] (0 on padding rows)."""
      x_a = embedder.embed_inputs(a, training=True)                # BERT is frozen: outside the tape
      x_b = embedder.embed_inputs(b, training=True)
      return glow.loss_and_gradients(glow_model, (x_a, x_b), weight, global_batch_size=batch_size)

    if embedder.use_xla:
      forward_backward = tf.function(forward_backward, jit_compile=True, autograph=False)

    def replica_step(a, b, weight):
      loss, grads = forward_backward(a, b, weight)
      optimizer.apply_gradients(zip(grads, variables))             # sums the replicas' gradients, then clips
      return loss

    # Static shapes: one trace per (S_a, S_b). Dynamic: shapes relax after the second one.
    @tf.function(autograph=False, reduce_retracing=not embedder.static_shapes)
    def distributed_step(a, b, weight):
      losses = strategy.run(replica_step, args=(a, b, weight))
      return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    def split(values):
      """Replica r gets rows [r * B/R, (r + 1) * B/R) of each [rows, ...] tensor."""
      share = rows // replicas
      return strategy.experimental_distribute_values_from_function(lambda ctx: tf.nest.map_structure(
          lambda t: t[ctx.replica_id_in_sync_group * share:(ctx.replica_id_in_sync_group + 1) * share], values))

    def train_step(row):
      padded = np.resize(row, rows)                                # repeats row's pairs to fill B up to `rows`
      weight = tf.constant((np.arange(rows) < len(row)).astype(np.float32))
      return distributed_step(split(self._pack(padded)), split(self._pack(padded + self.n)), split(weight))

    return train_step
