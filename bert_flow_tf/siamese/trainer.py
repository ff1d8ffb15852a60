"""The siamese trainer: the model, its optimizers and checkpoints under a tf.distribute strategy.

With `flow` and `flow_loss` (`--use_flow --flow_loss`; the original's `--flow=1 --flow_loss=1`) there are two
optimizers: BERT's (`glow.create_optimizer`: AdamWeightDecay, linear warmup then linear decay to 0) applies the
gradients of the supervised loss to the encoder and classifier variables, the flow's (AdamWeightDecay at a constant
`flow_learning_rate`) the gradients of the flow loss to the flow variables; variables are split by module
(`encoder.trainable_variables`, `flow.trainable_variables`). With `flow` alone the flow is one more layer trained by
the supervised loss.

Training runs a custom loop (`strategy.run` inside a `tf.function`) on any tf.distribute strategy. Each replica
scales its loss by 1 / global batch; the optimizers sum gradients across replicas (then clip to global norm 1).
The data order is fixed by `seed` (a permutation per epoch), so a run restarted from its latest checkpoint
continues exactly where it stopped. `dupe_factor` k: every training pair also appears k - 1 more times, each time
with one random word piece of each sentence replaced by [MASK]; steps are still counted from the pairs before
duplication, as the original.
"""
import os
import time

import numpy as np
import tensorflow as tf
import tf_keras as keras
from absl import logging

import glow
from bert_flow_tf.evaluation import metrics
from bert_flow_tf.data import order as order_lib
from bert_flow_tf.modeling.tokenizer import BertTokenizer
from bert_flow_tf.siamese import data as siamese_data
from bert_flow_tf.siamese import model as model_lib
from bert_flow_tf.utils import distribute


class Trainer:
  """The model, its optimizers and checkpoints under one strategy.

  Args:
    config: SiameseConfig.
    task: Task.
    strategy: tf.distribute.Strategy.
    num_train_steps: int (0 when not training; sets BERT's schedule).
  """

  def __init__(self, config, task, strategy, num_train_steps):
    self.config = config
    self.task = task
    self.strategy = strategy
    self.num_train_steps = num_train_steps
    self.static_shapes = distribute.needs_static_shapes(strategy, config.static_shapes, config.use_xla)
    self.policy = distribute.mixed_precision_policy(strategy, config.use_mixed_precision)
    keras.utils.set_random_seed(config.seed)
    with strategy.scope():
      with distribute.policy_scope(self.policy):
        self.loaded = model_lib.load_bert(config)
      if self.loaded.config is not None and config.max_seq_length > self.loaded.config.max_position_embeddings:
        raise ValueError(f"max_seq_length {config.max_seq_length} > the model's max_position_embeddings "
                         f"{self.loaded.config.max_position_embeddings}")
      self.model = model_lib.SiameseModel(self.loaded, config.sentence_embedding_type, task.num_labels,
                                config.flow_model_config if config.flow else None, config.low_dim, config.seed)
      self.bert_vars = self.model.bert_variables(include_flow=not config.flow_loss)
      optimizer = glow.create_optimizer(config.learning_rate, num_train_steps,
                                        int(num_train_steps * config.warmup_proportion))
      optimizer.build(self.bert_vars)
      self.optimizer = distribute.wrap_optimizer(optimizer, self.policy)
      self.flow_optimizer = None
      if config.flow_loss:
        self.flow_optimizer = glow.AdamWeightDecay(config.flow_learning_rate)  # the original's decay
        self.flow_optimizer.build(self.model.flow.trainable_variables)
      self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
    self.tokenizer = BertTokenizer(self.loaded.vocab_file, self.loaded.do_lower_case, config.max_seq_length)
    checkpoint = tf.train.Checkpoint(model=self.model, optimizer=self.optimizer, step=self.step,
                                     **({"flow_optimizer": self.flow_optimizer} if self.flow_optimizer else {}))
    self.manager = tf.train.CheckpointManager(
        checkpoint, os.path.join(config.output_dir, "checkpoints"), max_to_keep=config.keep_checkpoint_max,
        step_counter=self.step)
    if self.manager.latest_checkpoint:
      checkpoint.restore(self.manager.latest_checkpoint).assert_existing_objects_matched()
      logging.info("restored %s (step %d)", self.manager.latest_checkpoint, int(self.step.numpy()))
    self._train_step = None
    self._eval_step = None

  def features(self, pair_sets, training=False):
    c = self.config
    return siamese_data.make_features(pair_sets, self.task, self.tokenizer, c.max_seq_length,
                         dupe_factor=c.dupe_factor if training else 1,
                         num_examples=c.num_examples if training else -1, seed=c.seed)

  def _replica_train_step(self, batch):
    c = self.config
    global_batch = float(c.train_batch_size)
    flow_vars = self.model.flow.trainable_variables if self.flow_optimizer else []

    def gradients(batch):
      with tf.GradientTape(persistent=True) as tape:
        out = self.model(batch, training=True)
        per_example = model_lib.supervised_loss(out, c.l2_penalty, labelled=c.num_examples != 0)
        loss = tf.reduce_sum(per_example) / global_batch
        if self.flow_optimizer is not None:
          flow_loss = glow.nll_loss(out["flow_nll_a"], out["flow_nll_b"], global_batch_size=c.train_batch_size)
        else:
          flow_loss = tf.zeros([], tf.float32)
        scaled = self.optimizer.get_scaled_loss(loss) if self.policy == "mixed_float16" else loss
      grads = tape.gradient(scaled, self.bert_vars)  # None where the loss does not reach a variable
      flow_grads = tape.gradient(flow_loss, flow_vars) if flow_vars else []
      return loss, flow_loss, grads, flow_grads

    if c.use_xla:
      gradients = tf.function(gradients, jit_compile=True)
    loss, flow_loss, grads, flow_grads = gradients(batch)
    if self.policy == "mixed_float16":
      grads = self.optimizer.get_unscaled_gradients(grads)
    # As the original's AdamWeightDecayOptimizer: a variable without a gradient is not updated (not even decayed).
    connected = [(g, v) for g, v in zip(grads, self.bert_vars) if g is not None]
    if connected:
      self.optimizer.apply_gradients(connected)
    if flow_vars:
      self.flow_optimizer.apply_gradients(zip(flow_grads, flow_vars))
    return loss, flow_loss

  def train_step(self, iterator):
    """One global step; returns (supervised loss, flow loss) summed over replicas (= global means)."""
    if self._train_step is None:
      @tf.function
      def step_fn(iterator):
        loss, flow_loss = self.strategy.run(self._replica_train_step, args=(next(iterator),))
        reduce = lambda x: self.strategy.reduce(tf.distribute.ReduceOp.SUM, x, axis=None)
        return reduce(loss), reduce(flow_loss)
      self._train_step = step_fn
    return self._train_step(iterator)

  def train(self, pair_sets, stop_at_step=None):
    """Trains to `num_train_steps` from the current step (0, or the restored one), saving checkpoints.

    Args:
      pair_sets: list of PairSet, the training pairs.
      stop_at_step: int or None. Stop once this step is reached, without a final checkpoint, as if the run
        were killed there (only the periodic checkpoints remain).

    Returns:
      dict: losses (list of float, one per step run here), flow_losses, steps_per_second.
    """
    c = self.config
    features = self.features(pair_sets, training=True)
    start = int(self.step.numpy())
    end = self.num_train_steps if stop_at_step is None else min(stop_at_step, self.num_train_steps)
    order = order_lib.batch_order(len(features["label"]), c.train_batch_size, self.num_train_steps,
                                  c.seed).reshape(-1)
    order = order[start * c.train_batch_size:end * c.train_batch_size]
    dataset = siamese_data.pair_dataset(features, c.train_batch_size, self.static_shapes, order)
    iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
    logging.info("training steps %d..%d of %d (%d pairs x dupe_factor %d, global batch %d, %d replica(s))",
                 start, end, self.num_train_steps, len(features["label"]) // c.dupe_factor, c.dupe_factor,
                 c.train_batch_size, self.strategy.num_replicas_in_sync)
    losses, flow_losses = [], []
    began = time.time()
    for _ in range(start, end):
      loss, flow_loss = self.train_step(iterator)
      self.step.assign_add(1)
      losses.append(float(loss.numpy()))
      flow_losses.append(float(flow_loss.numpy()))
      step = int(self.step.numpy())
      if step % c.save_checkpoints_steps == 0:
        self.manager.save(checkpoint_number=step)
      if step % c.log_every_step == 0:
        logging.info("step %d/%d loss %.4f flow_loss %.4f (%.2f steps/s)", step, self.num_train_steps, loss,
                     flow_loss, len(losses) / (time.time() - began))
    if end == self.num_train_steps and end % c.save_checkpoints_steps:
      self.manager.save(checkpoint_number=end)
    seconds = time.time() - began
    return {"losses": losses, "flow_losses": flow_losses,
            "steps_per_second": len(losses) / seconds if losses else 0.0}

  # ---- inference ---------------------------------------------------------------------------------------------

  def infer(self, pair_sets, batch_size):
    """Runs both towers over every pair (no dropout). Returns dict of np arrays in pair order, padding dropped."""
    features = self.features(pair_sets)
    n = len(features["label"])
    features = siamese_data.pad_rows(features, batch_size)
    dataset = siamese_data.pair_dataset(features, batch_size, self.static_shapes)
    if self._eval_step is None:
      def replica_fn(batch):
        out = self.model(batch, training=False)
        if "logits" in out:
          out["prediction"] = tf.argmax(out.pop("logits"), -1, output_type=tf.int32)
        return out

      @tf.function  # takes the iterator, so batches of any length S share one trace
      def eval_step(iterator):
        return self.strategy.gather(self.strategy.run(replica_fn, args=(next(iterator),)), axis=0)
      self._eval_step = eval_step
    iterator = iter(self.strategy.experimental_distribute_dataset(dataset))
    parts = [self._eval_step(iterator) for _ in range(len(features["is_real"]) // batch_size)]
    return {k: np.concatenate([p[k].numpy() for p in parts])[:n] for k in parts[0]} | {
        "label": features["label"][:n]}

  def evaluate(self, pair_sets):
    """Dev metrics: loss; accuracy for NLI, Pearson and Spearman x100 of cos vs the scaled labels otherwise."""
    out = self.infer(pair_sets, self.config.eval_batch_size)
    result = {"num_pairs": int(len(out["label"])), "eval_loss": float(np.mean(out["per_example_loss"]))}
    if "prediction" in out:
      result["accuracy"] = float(np.mean(out["prediction"] == out["label"]))
    else:
      result["pearson_x100"] = metrics.pearson_x100(out["cos"], out["label"])
      result["spearman_x100"] = metrics.spearman_x100(out["cos"], out["label"])
    if "flow_nll_a" in out:
      result["eval_loss_flow"] = float(np.mean(out["flow_nll_a"] + out["flow_nll_b"]))
    return result

  def predict(self, pair_sets, pool):
    """Per-pair cosines (or, with `pool`, the pair embeddings) of the pairs, in order."""
    out = self.infer(pair_sets, self.config.predict_batch_size)
    return (out["embedding_a"], out["embedding_b"]) if pool else out["cos"]
