"""Fits BERT-flow's Glow on sentence pairs by maximum likelihood: the loop, its checkpoints and resume.

As the original, a batch is `batch_size` PAIRS and the loss is the mean NLL (bits/dim) of the `a` sentences
plus that of the `b` sentences, through one shared flow. The step count is
int(num_pairs / batch_size * num_train_epochs); the pairs are visited in the source's seeded order (in memory:
a new permutation per epoch, a final partial batch carried into the next epoch), so a run stopped and restarted
from its checkpoint sees the same batches and ends at the same result as an uninterrupted one.

The pairs come from a `pair_sources.PairSource`: cached vectors, BERT with dropout every step (faithful), or the
store read shard by shard (`store_stream.StreamedPairs`). The fitted flow's folder (flow.json, checkpoints) is
`fitted_flow`'s.

A fit on one device reuses the traced train step of a fit before it whose Glow and optimizer the trace fixes
alike (`glow.training.trace_settings`: config, width, init, weight decay, ...). `TracedSteps` keeps the steps
and is passed to `fit_flow` (by default the one the process shares, `SHARED_STEPS`); `glow.ReusableTrainStep.reset`
puts in the fit's own freshly seeded Glow and new optimizer and refuses what it cannot reproduce: the same numbers
as a new trace, without its seconds.

Legend: B = pairs per batch, D = embedding width.
"""
import collections
import math
import os

import numpy as np
import tensorflow as tf
import tf_keras as keras
from absl import logging

from tensorflow.core.framework import summary_pb2

import glow
from bert_flow_tf.calibration import fitted_flow
# The fit's settings (fit_config.py, free of TensorFlow for the commands' flags), also reached as flow_fitting's.
from bert_flow_tf.calibration.fit_config import FlowFitConfig  # pylint: disable=unused-import
from bert_flow_tf.calibration.fit_config import MODES  # pylint: disable=unused-import
from bert_flow_tf.calibration.fit_config import NLI_FIT_CONFIG  # pylint: disable=unused-import
from bert_flow_tf.calibration.fit_config import load_glow_config  # pylint: disable=unused-import
from bert_flow_tf.utils.progress import Progress

# TensorBoard's scalar-plugin tag, written with core TF so that tensorboard is needed only to view the events.
_SCALAR_METADATA = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
    plugin_name="scalars"))
class FlowDivergedError(FloatingPointError):
  """The loss became NaN or inf; the last good checkpoint is kept."""


def _seeded_glow(glow_config, dim, fit_config):
  """The Glow a fit starts from: Python, numpy and TF seeded with fit_config.seed, then built."""
  keras.utils.set_random_seed(fit_config.seed)
  return glow.Glow(glow_config, dim, init=fit_config.init, seed=fit_config.seed)


class TracedSteps:
  """Traced train steps kept for later fits (glow.ReusableTrainStep), one per Glow config, width, init, dtype policy
  and optimizer settings, the `max_steps` most recently used (each holds a Glow, an optimizer and a trace).

  Args:
    max_steps: int.
  """

  def __init__(self, max_steps=4):
    self.max_steps = max_steps
    self._steps = collections.OrderedDict()  # key -> glow.ReusableTrainStep, the most recently used last

  def get(self, glow_config, dim, init, optimizer):
    """The kept step for these settings (optimizer: a new one of the fit's settings), made the first time."""
    key = repr((glow_config, dim, init, keras.mixed_precision.global_policy().name,
                glow.training.optimizer_settings(optimizer)))  # the reset checks all of glow.training.trace_settings
    if key not in self._steps:
      self._steps[key] = glow.ReusableTrainStep(glow_config, dim, init, optimizer)
      while len(self._steps) > self.max_steps:
        self._steps.popitem(last=False)
    self._steps.move_to_end(key)
    return self._steps[key]

  def steps(self):
    """The kept glow.ReusableTrainStep, the least recently used first."""
    return list(self._steps.values())


SHARED_STEPS = TracedSteps()  # fit_flow's default: the fits of one process share their traces


def _train_state(pairs, glow_config, fit_config, optimizer, traced_steps):
  """A glow.ReusableTrainStep for this fit, not yet reset: from `traced_steps` on one device (the default strategy,
  no dropout), else a new one under the pairs' strategy (mirrored variables; the source's own step is traced per
  fit anyway)."""
  reusable = (traced_steps is not None and glow_config.coupling_dropout == 0 and not tf.distribute.has_strategy()
              and pairs.strategy is tf.distribute.get_strategy())
  if reusable:
    return traced_steps.get(glow_config, pairs.dim, fit_config.init, optimizer)
  with pairs.strategy.scope():
    return glow.ReusableTrainStep(glow_config, pairs.dim, fit_config.init, optimizer)


def fit_flow(pairs, fit_config, flow_dir, name="flow", provenance=None, show_progress_bar=None,
             traced_steps=SHARED_STEPS):
  """Fits a Glow on `pairs`, checkpointing into `flow_dir`; resumes from the latest checkpoint there.

  Args:
    pairs: a pair_sources.PairSource (CachedPairs, FaithfulPairs, store_stream.StreamedPairs).
    fit_config: FlowFitConfig.
    flow_dir: str. Checkpoints, flow.json and TensorBoard events (`tb/`) go here.
    name: str, a label for logs and progress.
    provenance: dict or None, what the vectors are (model, pooling, max_seq_length), kept in flow.json so that
      users of the flow can check they feed it the same kind of vectors.
    show_progress_bar: None (auto: utils.progress), True (always) or False (never).
    traced_steps: TracedSteps whose traced step of the same settings this fit reuses (and keeps for later fits),
      or None for a new trace; the numbers are the same either way.

  Returns:
    (Glow, dict) — the fitted flow (a Glow of its own, not shared with later fits) and a summary: steps,
    first/last/mean loss (bits/dim), seconds.

  Raises:
    FlowDivergedError when a loss is NaN or inf (the last good checkpoint stays in flow_dir).
  """
  num_steps = fit_config.num_steps(len(pairs), name)
  order = pairs.batch_order(num_steps, fit_config.batch_size, fit_config.seed)
  glow_config = fit_config.glow_config()
  optimizer = glow.AdamWeightDecay(learning_rate=fit_config.learning_rate,
                                   weight_decay_rate=fit_config.weight_decay_rate)
  state = _train_state(pairs, glow_config, fit_config, optimizer, traced_steps)  # before seeding: it may build a Glow
  fresh = _seeded_glow(glow_config, pairs.dim, fit_config)
  state.reset(fresh, optimizer)
  glow_model, optimizer = state.glow_model, state.optimizer
  step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
  checkpoint = tf.train.Checkpoint(flow=glow_model, optimizer=optimizer, step=step)
  manager = tf.train.CheckpointManager(checkpoint, flow_dir, max_to_keep=2)
  if manager.latest_checkpoint:
    checkpoint.restore(manager.latest_checkpoint)
    logging.info("%s: resuming from %s (step %d of %d)", name, manager.latest_checkpoint, int(step), num_steps)
  elif fit_config.init == "ddi":
    a, b = pairs.batch(order[0])
    glow_model.data_init(tf.concat([a, b], axis=0))
  fitted_flow.write_info(flow_dir, pairs.dim, fit_config, {"num_steps": num_steps, "steps_done": int(step),
                                                       "complete": False, "provenance": provenance})

  with pairs.strategy.scope():
    train_step = pairs.make_train_step(glow_model, optimizer, fit_config.batch_size)
  if train_step is None:
    train_step = lambda row: state(*pairs.batch(row))
  writer = tf.summary.create_file_writer(os.path.join(flow_dir, "tb"))
  done = int(step)  # the step counter lives in Python; `step` is set from it for each checkpoint
  progress = Progress(f"fitting {name}", num_steps, unit="step", show=show_progress_bar)
  progress.update(done)
  losses, start = [], tf.timestamp()
  while done < num_steps:
    loss = float(train_step(order[done]))
    if not math.isfinite(loss):
      raise FlowDivergedError(f"{name}: flow loss is {loss} at step {done + 1}; the last good checkpoint is "
                              f"{manager.latest_checkpoint or 'none (no step finished)'}")
    done += 1
    losses.append(loss)
    progress.update(1)
    if done % fit_config.log_every_steps == 0 or done == num_steps:
      with writer.as_default():
        tf.summary.write(f"flow_loss/{name}", tf.constant(loss), step=done, metadata=_SCALAR_METADATA)
    if done % fit_config.save_checkpoints_steps == 0 or done == num_steps:
      step.assign(done)
      manager.save(checkpoint_number=done)
  writer.flush()
  seconds = float(tf.timestamp() - start)
  summary = {"num_steps": num_steps, "steps_done": done, "complete": True, "seconds": seconds,
             "provenance": provenance,
             "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
             "mean_loss_last_10pct": float(np.mean(losses[-max(1, len(losses) // 10):])) if losses else None}
  fitted_flow.write_info(flow_dir, pairs.dim, fit_config, summary)
  logging.info("%s: %d steps in %.1f s, loss (bits/dim, a+b) %s -> %s", name, num_steps, seconds,
               summary["first_loss"], summary["last_loss"])
  glow.training.copy_variables(glow_model, fresh)              # the state's Glow goes on to the next fit
  return fresh, summary
