"""Fits BERT-flow's Glow on sentence pairs by maximum likelihood: schedules, checkpoints, resume.

As the original, a batch is `batch_size` PAIRS and the loss is the mean NLL (bits/dim) of the `a` sentences
plus that of the `b` sentences, through one shared flow. The step count is
int(num_pairs / batch_size * num_train_epochs); the pairs are visited in a seeded random order (a new
permutation per epoch, a final partial batch carried into the next epoch), so a run stopped and restarted
from its checkpoint sees the same batches and ends at the same result as an uninterrupted one.

Two ways to get the vectors:
  cached    the embeddings computed once without dropout (`CachedPairs`): fast. Fits on one device (the
            default strategy: wherever TF places the ops); the flow is small and its step is cheap.
  faithful  BERT in training mode (dropout on), embeddings recomputed every step (`FaithfulPairs`), as the
            original ran. BERT itself stays frozen. Each step runs under the embedder's tf.distribute strategy:
            the host packs the B pairs, the replicas embed and score their share, the flow's gradients are
            summed across replicas (see `FaithfulPairs.make_train_step`).

Legend: B = pairs per batch, D = embedding width.
"""
import dataclasses
import json
import math
import os
import weakref

import numpy as np
import tensorflow as tf
import tf_keras as keras
from absl import logging

from tensorflow.core.framework import summary_pb2

import glow
from bert_flow_tf.embedding import pipeline
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils
from bert_flow_tf.data import order as order_lib
from bert_flow_tf.utils.progress import Progress

FLOW_INFO = "flow.json"
# TensorBoard's scalar-plugin tag, written with core TF so that tensorboard is needed only to view the events.
_SCALAR_METADATA = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
    plugin_name="scalars"))
MODES = ("cached", "faithful")


@dataclasses.dataclass(frozen=True)
class FlowFitConfig:
  """How to fit the flow. Defaults are the paper's target setting.

  Attributes:
    flow_model_config: str, a glow config name (default glow.DEFAULT_CONFIG, the original's) or a JSON path.
    init: str, "original" (the original's effective ActNorm init) or "ddi" (data-dependent, on the first batch).
    learning_rate: float, constant (1e-3 target, 2e-5 NLI in the paper).
    num_train_epochs: float (1.0 target, 0.15 NLI).
    batch_size: int, pairs per step (32).
    seed: int, seeds the flow's init and the batch order.
    weight_decay_rate: float, AdamWeightDecay's decoupled decay (0.01 as the original).
    save_checkpoints_steps: int, checkpoint period in steps (and at the end).
    log_every_steps: int, TensorBoard and log period.
  """
  flow_model_config: str = glow.DEFAULT_CONFIG
  init: str = "original"
  learning_rate: float = 1e-3
  num_train_epochs: float = 1.0
  batch_size: int = 32
  seed: int = 1234
  weight_decay_rate: float = 0.01
  save_checkpoints_steps: int = 100
  log_every_steps: int = 10


class FlowDivergedError(FloatingPointError):
  """The loss became NaN or inf; the last good checkpoint is kept."""


class CachedPairs:
  """Pairs as precomputed vectors. a, b: float32 [N, D]. The fit runs on one device (the default strategy)."""

  def __init__(self, a, b):
    if a.shape != b.shape:
      raise ValueError(f"pair vectors differ in shape: a {a.shape}, b {b.shape}")
    self.a, self.b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    self.dim = a.shape[1]
    self.strategy = tf.distribute.get_strategy()

  def __len__(self):
    return len(self.a)

  def batch(self, idx):
    return tf.constant(self.a[idx]), tf.constant(self.b[idx])

  def make_train_step(self, flow, optimizer, batch_size):  # pylint: disable=unused-argument
    """train_step(idx int [B]) -> loss: one step of `glow.make_train_step(pairs=True)` on these rows."""
    train_step = glow.make_train_step(flow, optimizer, pairs=True)
    return lambda idx: train_step(*self.batch(idx))


class FaithfulPairs:
  """Pairs as sentences, embedded every step by BERT in training mode (dropout on), as the original did.

  The sentences are tokenized once; each step packs its rows on the host (`[CLS] pieces [SEP]`, padded to the
  shortest of `pipeline.static_lengths` that holds the longest sentence, a and b each their own), so no string
  op runs on the replicas. Where the step runs:

    default strategy, no XLA   on the host as before the strategies: BERT embeds a then b (one traced function
                               called twice, so its dropout draws continue from a to b), then
                               `glow.make_train_step(pairs=True)`. Earlier faithful fits reproduce.
    any other strategy / XLA   one `strategy.run` per step: each replica embeds its B / R pairs (a and b), takes
                               the flow NLL with `nll_loss(..., global_batch_size=B)` and applies the gradients,
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
    self.pieces, self.lengths = embedder.tokenize(list(sentences_a) + list(sentences_b))
    ids = tf.TensorSpec([None, None], tf.int32)
    self._embed_training = tf.function(lambda w, m, t: embedder.embed_inputs(
        {"input_word_ids": w, "input_mask": m, "input_type_ids": t}, training=True),
        input_signature=[ids, ids, ids])
    # The default strategy outside any scope: the host path. Anything else runs under strategy.run.
    self.on_host = (not embedder.use_xla and self.strategy is tf.distribute.get_strategy()
                    and not tf.distribute.has_strategy())

  def __len__(self):
    return self.n

  def _pack(self, rows):
    """Packed inputs of sentences `rows` (of the 2N): dict of int32 [len(rows), S], S from static_lengths."""
    longest = int(self.lengths[rows].max())
    seq_length = next(b for b in pipeline.static_lengths(self.embedder.max_seq_length) if b >= longest)
    inputs = self.embedder.tokenizer.pack(tf.gather(self.pieces, rows), seq_length)
    return {name: inputs[name] for name in pipeline.INPUT_NAMES}

  def _embed(self, rows):
    inputs = self._pack(rows)
    return self._embed_training(inputs["input_word_ids"], inputs["input_mask"], inputs["input_type_ids"])

  def batch(self, idx):
    """(a, b) float32 [len(idx), D], embedded on the host with dropout (DDI init, the host path)."""
    return self._embed(idx), self._embed(idx + self.n)

  def make_train_step(self, flow, optimizer, batch_size):
    """train_step(idx int [B]) -> loss float32 scalar (bits/dim, before the update); B = batch_size.

    Call under `self.strategy.scope()` (the optimizer builds its slots here), with `flow` and `optimizer` made
    under that scope.
    """
    if self.on_host:
      train_step = glow.make_train_step(flow, optimizer, pairs=True)
      return lambda idx: train_step(*self.batch(idx))
    if not bool(flow.initialized.numpy()):
      raise ValueError(f"Glow {flow.name!r} (init={flow.init!r}) is not initialized: call "
                       "flow.data_init(first_batch) before making the train step")
    strategy, embedder = self.strategy, self.embedder
    replicas = strategy.num_replicas_in_sync
    rows = -(-batch_size // replicas) * replicas                  # B rounded up to a multiple of R
    variables = flow.trainable_variables
    optimizer.build(variables)

    def forward_backward(a, b, weight):
      """One replica's share: a, b dicts of int32 [B/R, S], weight float32 [B/R] (0 on padding rows)."""
      x_a = embedder.embed_inputs(a, training=True)                # BERT is frozen: outside the tape
      x_b = embedder.embed_inputs(b, training=True)
      with tf.GradientTape() as tape:
        loss = glow.nll_loss(flow.nll(x_a, training=True) * weight, flow.nll(x_b, training=True) * weight,
                             global_batch_size=batch_size)
      return loss, tape.gradient(loss, variables)

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

    def train_step(idx):
      padded = np.resize(idx, rows)                                # repeats idx's rows to fill B up to `rows`
      weight = tf.constant((np.arange(rows) < len(idx)).astype(np.float32))
      return distributed_step(split(self._pack(padded)), split(self._pack(padded + self.n)), split(weight))

    return train_step


def _build_flow(dim, config):
  keras.utils.set_random_seed(config.seed)
  return glow.Glow.from_config(config.flow_model_config, dim=dim, init=config.init, seed=config.seed)


def _write_info(flow_dir, dim, config, extra):
  info = {"dim": dim, "flow_config": glow.GlowConfig.load(config.flow_model_config).to_dict(),
          "fit": dataclasses.asdict(config), **extra}
  io_utils.write_text(os.path.join(flow_dir, FLOW_INFO), json.dumps(info, indent=2, sort_keys=True) + "\n")


def read_flow_info(flow_dir):
  """The flow.json that `fit_flow` wrote: dim, flow config, fit config, progress and `provenance`."""
  info_path = os.path.join(flow_dir, FLOW_INFO)
  if not os.path.isfile(info_path):
    raise errors.missing_file(f"no fitted flow: {FLOW_INFO} is missing", info_path)
  with open(info_path, encoding="utf-8") as f:
    try:
      return json.load(f)
    except json.JSONDecodeError as e:
      raise errors.UserError(f"not valid JSON ({e.msg})", f"{info_path}:{e.lineno}") from e


def check_fitted_flow(flow_dir, dim=None, fit=None, provenance=None):
  """Reads the flow.json in `flow_dir` and checks that the flow was fitted as these arguments say.

  Only what is given is compared: `dim` with the flow's width, `fit` with its fit settings, and each key of
  `provenance` that the flow.json records (a flow written without provenance skips that part).

  Args:
    flow_dir: str, a directory written by `fit_flow`.
    dim: int or None, the width of the vectors that will go through the flow.
    fit: FlowFitConfig or None, the settings the caller would fit with.
    provenance: dict or None, what the vectors are (as `fit_flow` takes it).

  Returns:
    dict, the flow.json (see `read_flow_info`).

  Raises:
    FileNotFoundError: flow_dir holds no flow.json.
    ValueError: naming every setting that differs, with the value asked for and the flow's.
  """
  info = read_flow_info(flow_dir)
  fitted = info.get("provenance") or {}
  asked = {k: (v, fitted[k]) for k, v in (provenance or {}).items() if k in fitted}
  if dim is not None:
    asked["dim"] = (dim, info["dim"])
  if fit is not None:
    ours, theirs = dataclasses.asdict(fit), info["fit"]
    asked.update({f"fit.{k}": (ours.get(k), theirs.get(k)) for k in sorted(ours.keys() | theirs.keys())})
  wrong = {k: v for k, v in asked.items() if v[0] != v[1]}
  if wrong:
    names = sorted({k.split(".")[0] for k in wrong})
    raise errors.UserError(f"the flow was fitted with other settings ({', '.join(names)} differ): " + "; ".join(
        f"{k}={want} (the flow was fitted with {got})" for k, (want, got) in wrong.items()), flow_dir)
  return info


def load_fitted_flow(flow_dir):
  """Restores a flow written by `fit_flow` (its flow.json and latest checkpoint). Returns a Glow."""
  info = read_flow_info(flow_dir)
  if not info.get("complete"):
    raise errors.UserError(f"the flow did not finish fitting ({info.get('steps_done')} of {info.get('num_steps')} "
                           "steps); rerun the fit to resume it", flow_dir)
  flow = glow.Glow(glow.GlowConfig.from_dict(info["flow_config"]), info["dim"], init=info["fit"]["init"],
                   seed=info["fit"]["seed"])
  latest = tf.train.latest_checkpoint(flow_dir)
  if latest is None:
    raise errors.missing_file("no flow checkpoint", flow_dir)
  try:
    tf.train.Checkpoint(flow=flow).restore(latest).expect_partial()
  except (tf.errors.OpError, ValueError, IndexError) as e:  # a truncated file: IndexError "Read less bytes"
    raise errors.UserError(f"cannot restore the flow, corrupt or of another shape? ({e})", latest) from e
  return flow


def save_fitted_flow(flow, flow_dir, config, summary):
  """Writes a fitted flow as `fit_flow` leaves it, for `load_fitted_flow`: flow.json and a checkpoint of the flow
  alone (no optimizer slots).

  Args:
    flow: the fitted Glow.
    flow_dir: str, a new or empty directory.
    config: FlowFitConfig, how it was fitted.
    summary: dict, what `fit_flow` returned with it (complete must be True).
  """
  os.makedirs(flow_dir, exist_ok=True)
  tf.train.Checkpoint(flow=flow).save(os.path.join(flow_dir, "flow"))
  _write_info(flow_dir, flow.dim, config, {k: v for k, v in summary.items() if k not in ("dim", "flow_config",
                                                                                        "fit")})


def fit_flow(pairs, config, flow_dir, name="flow", provenance=None):
  """Fits a Glow on `pairs`, checkpointing into `flow_dir`; resumes from the latest checkpoint there.

  Args:
    pairs: CachedPairs, FaithfulPairs or `store_stream.StreamedPairs` (the store read shard by shard).
    config: FlowFitConfig.
    flow_dir: str. Checkpoints, flow.json and TensorBoard events (`tb/`) go here.
    name: str, a label for logs and progress.
    provenance: dict or None, what the vectors are (model, pooling, max_seq_length), kept in flow.json so that
      users of the flow can check they feed it the same kind of vectors.

  Returns:
    (Glow, dict) — the fitted flow and a summary: steps, first/last/mean loss (bits/dim), seconds.

  Raises:
    FlowDivergedError when a loss is NaN or inf (the last good checkpoint stays in flow_dir).
  """
  num_steps = order_lib.num_train_steps(len(pairs), config.batch_size, config.num_train_epochs)
  if num_steps < 1:
    raise ValueError(f"{name}: {len(pairs)} pairs at batch_size {config.batch_size} x {config.num_train_epochs} "
                     "epochs is less than one step")
  if hasattr(pairs, "batch_order"):  # pairs that fix their own order (store_stream.StreamedPairs: step numbers)
    order = pairs.batch_order(num_steps, config.batch_size, config.seed)
  else:
    order = order_lib.batch_order(len(pairs), config.batch_size, num_steps, config.seed)
  with pairs.strategy.scope():  # mirrored variables under a distributed strategy; checkpoints read as plain ones
    flow = _build_flow(pairs.dim, config)
    optimizer = glow.AdamWeightDecay(learning_rate=config.learning_rate,
                                     weight_decay_rate=config.weight_decay_rate)
  step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
  checkpoint = tf.train.Checkpoint(flow=flow, optimizer=optimizer, step=step)
  manager = tf.train.CheckpointManager(checkpoint, flow_dir, max_to_keep=2)
  if manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint)
    logging.info("%s: resuming from %s (step %d of %d)", name, manager.latest_checkpoint, int(step), num_steps)
  elif config.init == "ddi":
    a, b = pairs.batch(order[0])
    flow.data_init(tf.concat([a, b], axis=0))
  _write_info(flow_dir, pairs.dim, config, {"num_steps": num_steps, "steps_done": int(step), "complete": False,
                                            "provenance": provenance})

  with pairs.strategy.scope():
    train_step = pairs.make_train_step(flow, optimizer, config.batch_size)
  writer = tf.summary.create_file_writer(os.path.join(flow_dir, "tb"))
  progress = Progress(f"fitting {name}", num_steps, unit="step", min_total=200)
  progress.update(int(step))
  losses, start = [], tf.timestamp()
  while int(step) < num_steps:
    loss = float(train_step(order[int(step)]))
    if not math.isfinite(loss):
      raise FlowDivergedError(f"{name}: flow loss is {loss} at step {int(step) + 1}; the last good checkpoint is "
                              f"{manager.latest_checkpoint or 'none (no step finished)'}")
    step.assign_add(1)
    losses.append(loss)
    progress.update(1)
    done = int(step)
    if done % config.log_every_steps == 0 or done == num_steps:
      with writer.as_default():
        tf.summary.write(f"flow_loss/{name}", tf.constant(loss), step=done, metadata=_SCALAR_METADATA)
    if done % config.save_checkpoints_steps == 0 or done == num_steps:
      manager.save(checkpoint_number=done)
  writer.flush()
  seconds = float(tf.timestamp() - start)
  summary = {"num_steps": num_steps, "steps_done": int(step), "complete": True, "seconds": seconds,
             "provenance": provenance,
             "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
             "mean_loss_last_10pct": float(np.mean(losses[-max(1, len(losses) // 10):])) if losses else None}
  _write_info(flow_dir, pairs.dim, config, summary)
  logging.info("%s: %d steps in %.1f s, loss (bits/dim, a+b) %s -> %s", name, num_steps, seconds,
               summary["first_loss"], summary["last_loss"])
  return flow, summary


# flow -> its traced inference function (z only, no dropout); weakly held, so a dropped flow is freed.
_LATENT_FNS = weakref.WeakKeyDictionary()


def _latent_fn(flow):
  if flow not in _LATENT_FNS:
    flow_ref = weakref.ref(flow)
    _LATENT_FNS[flow] = tf.function(lambda x: flow_ref()(x, training=False)[0],
                                    input_signature=[tf.TensorSpec([None, None], tf.float32)], autograph=False)
  return _LATENT_FNS[flow]


def transform(flow, vectors, batch_size=1024):
  """The flow's latent z for float32 [N, D] vectors, in batches, without dropout. Returns np.float32 [N, D].

  Runs a traced function (one per flow): a call on a few vectors costs about a millisecond, not the ~85 ms of
  the Keras model's eager ops."""
  latent = _latent_fn(flow)
  out = [latent(tf.constant(vectors[i:i + batch_size], tf.float32)).numpy()
         for i in range(0, len(vectors), batch_size)]
  return np.concatenate(out) if out else np.zeros_like(vectors, np.float32)
