"""Siamese BERT fine-tuning (NLI classification or STS regression) with an optional jointly trained flow.

The paper's supervised setting ("BERT-NLI-flow", Table 3): each sentence of a pair is encoded alone by the same
BERT and pooled to u, v [B, D]; with `flow`, a Glow maps the pooled vectors to z and u, v are the flow's outputs.

Objectives (the original `run_siamese.py`):
  NLI (3 classes)  softmax cross-entropy of logits = [u, v, |u - v|] W^T, W [num_labels, 3D] drawn
                   truncated-normal(0.02), no bias.
  regression       (cos(u, v) - y')^2, y' = (y - label_min) / (label_max - label_min) in [0, 1].
  num_examples     0: no supervised loss at all; N > 0: only N labelled pairs (drawn by seed), the rest count
                   as zero; -1: every pair labelled. The mean always runs over the whole batch, as the original.
  l2_penalty > 0   adds l2_penalty * (|u| + |v|) per pair.
  low_dim > 0      u, v become the means of low_dim equal chunks of their D dims: [B, low_dim].
  dupe_factor k    every training pair also appears k - 1 more times, each time with one random word piece of
                   each sentence replaced by [MASK]. Training steps are still counted from the pairs before
                   duplication: int(N * num_train_epochs / train_batch_size), as the original.
  flow loss        the flow's NLL of the pooled vectors in bits/dim, mean over a plus mean over b.

With `flow` and `flow_loss` (the original's `--flow=1 --flow_loss=1`) there are two optimizers: BERT's
(AdamWeightDecay, linear warmup then linear decay to 0) applies the gradients of the supervised loss to the
encoder and classifier variables, the flow's (AdamWeightDecay at a constant `flow_learning_rate`) the gradients of
the flow loss to the flow variables; variables are split by module (`encoder.trainable_variables`,
`flow.trainable_variables`). With `flow` alone the flow is one more layer trained by the supervised loss.

Training runs a custom loop (`strategy.run` inside a `tf.function`) on any tf.distribute strategy. Each replica
scales its loss by 1 / global batch; the optimizers sum gradients across replicas (then clip to global norm 1).
The data order is fixed by `seed` (a permutation per epoch), so a run restarted from its latest checkpoint
continues exactly where it stopped.

Files under `output_dir`:
  checkpoints/ckpt-<step>      tf.train.CheckpointManager (model, both optimizers, step).
  export/encoder/              the fine-tuned encoder in HF format (config.json, tokenizer_config.json,
                               vocab.txt, model.safetensors), read by `loaders.load_model` and so by run_flow.py;
                               a TF-Hub SavedModel instead when the encoder came from TF-Hub.
  eval_results.json/.txt       `do_eval`: dev split metrics.
  test_results.tsv             `do_predict`: one cosine per test pair.
  test_pooled.jsonl            `do_predict` with `predict_pool`: {"embedding_a": [...], "embedding_b": [...]}.

Legend: B = batch (pairs), S = sequence length, H = hidden size, D = pooled width, C = num_labels.
"""
import dataclasses
import json
import os
import time

import numpy as np
import tensorflow as tf
import tf_keras as keras
from absl import logging

import glow
from bert_flow_tf import data as data_lib
from bert_flow_tf.utils import distribute
from bert_flow_tf import evaluation
from bert_flow_tf.utils import io_utils
from bert_flow_tf import loaders
from bert_flow_tf.data import order as order_lib
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.siamese import data as siamese_data
from bert_flow_tf.modeling.bert_encoder import BertEncoder
from bert_flow_tf.loaders import safetensors as hf_loader
from bert_flow_tf.loaders import tfhub
from bert_flow_tf.modeling.tokenizer import BertTokenizer



@dataclasses.dataclass(frozen=True)
class SiameseConfig:
  """Everything one `run` needs (run_siamese.py builds it from flags).

  Attributes:
    task_name: str. A task of `bert_flow_tf.data.load_task` ("allnli", "snli", "sts-b", ...).
    data_dir: str. The data root (as /work/shared/data).
    output_dir: str. Checkpoints, export and results go here.
    model: str or None. A model directory (TF1, HF or TF-Hub) or preset name; None with `bert_config_file`.
    bert_config_file, vocab_file, init_checkpoint: str or None. The original's TF1 flags (all three, or none).
    do_lower_case: bool or None. None reads it from the model files.
    train_splits: tuple of str from siamese_data.SPLITS, the task's splits to train on (("dev", "test") for
      SNLI here).
    sentence_embedding_type: str. A pooling name of `bert_flow_tf.modeling.pooling` ("avg" = "last-avg").
    max_seq_length: int. Tokens per sentence with [CLS] and [SEP].
    do_train, do_eval, do_predict, predict_pool: bool.
    train_batch_size, eval_batch_size, predict_batch_size: int. Global batch sizes (pairs).
    learning_rate: float. BERT's peak learning rate.
    num_train_epochs: float.
    warmup_proportion: float in [0, 1]. Share of the steps with linear warmup.
    seed: int. Data order, label dropping, [MASK] positions and fresh weights.
    save_checkpoints_steps, keep_checkpoint_max, log_every_step: int.
    flow, flow_loss: bool. A Glow on the pooled vectors; train it on its own NLL with its own optimizer.
    flow_learning_rate: float.
    flow_model_config: str. A glow/configs name or JSON path.
    num_examples: int. -1 all labelled, 0 none, N the first N (after a seeded shuffle).
    dupe_factor: int >= 1.
    l2_penalty: float. > 0 enables the penalty.
    low_dim: int. > 0 averages the D dims down to low_dim chunks (D must be a multiple).
    tpu: str or None. See `distribute.make_strategy`.
    num_gpus: int.
    use_mixed_precision, use_xla, static_shapes: bool. Static shapes pad every batch to max_seq_length
      (forced on TPU); otherwise each batch is cut to its longest sentence. Mixed precision builds the encoder
      under a mixed policy (the flow and the losses stay float32).
  """
  task_name: str
  data_dir: str
  output_dir: str
  model: str = None
  bert_config_file: str = None
  vocab_file: str = None
  init_checkpoint: str = None
  do_lower_case: bool = None
  train_splits: tuple = ("train",)
  sentence_embedding_type: str = "avg"
  max_seq_length: int = 64
  do_train: bool = True
  do_eval: bool = False
  do_predict: bool = False
  predict_pool: bool = False
  train_batch_size: int = 16
  eval_batch_size: int = 64
  predict_batch_size: int = 64
  learning_rate: float = 2e-5
  num_train_epochs: float = 1.0
  warmup_proportion: float = 0.1
  seed: int = 1234
  save_checkpoints_steps: int = 1000
  keep_checkpoint_max: int = 3
  log_every_step: int = 10
  flow: bool = False
  flow_loss: bool = False
  flow_learning_rate: float = 1e-3
  flow_model_config: str = "config_l3_d3_w32"
  num_examples: int = -1
  dupe_factor: int = 1
  l2_penalty: float = 0.0
  low_dim: int = 0
  tpu: str = None
  num_gpus: int = 0
  use_mixed_precision: bool = False
  use_xla: bool = False
  static_shapes: bool = False

  def __post_init__(self):
    tf1 = (self.bert_config_file, self.vocab_file, self.init_checkpoint)
    if self.model is None and None in tf1:
      raise ValueError("give a model (directory or preset) or all of bert_config_file, vocab_file and "
                       f"init_checkpoint; got bert_config_file={tf1[0]!r} vocab_file={tf1[1]!r} "
                       f"init_checkpoint={tf1[2]!r}")
    if self.model is not None and self.bert_config_file is not None:
      raise ValueError(f"give either model ({self.model!r}) or bert_config_file ({self.bert_config_file!r})")
    bad = [s for s in self.train_splits if s not in siamese_data.SPLITS]
    if bad or not self.train_splits:
      raise ValueError(f"train_splits {self.train_splits!r}: each must be one of {siamese_data.SPLITS}")
    if not (self.do_train or self.do_eval or self.do_predict):
      raise ValueError("nothing to do: set at least one of do_train, do_eval, do_predict")
    for name in ("train_batch_size", "eval_batch_size", "predict_batch_size", "max_seq_length",
                 "save_checkpoints_steps", "keep_checkpoint_max", "log_every_step", "dupe_factor"):
      if getattr(self, name) < 1:
        raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
    if self.max_seq_length < 3:
      raise ValueError(f"max_seq_length must be >= 3 ([CLS], a piece, [SEP]), got {self.max_seq_length}")
    if not 0.0 <= self.warmup_proportion <= 1.0:
      raise ValueError(f"warmup_proportion must be in [0, 1], got {self.warmup_proportion}")
    if self.num_train_epochs <= 0:
      raise ValueError(f"num_train_epochs must be > 0, got {self.num_train_epochs}")
    if self.num_examples < -1:
      raise ValueError(f"num_examples must be -1 (all), 0 (none) or a count, got {self.num_examples}")
    if self.flow_loss and not self.flow:
      raise ValueError("flow_loss needs flow")
    if self.predict_pool and not self.do_predict:
      raise ValueError("predict_pool needs do_predict")


class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
  """BERT's schedule: lr * step / warmup_steps while step < warmup_steps, then lr * (1 - step / total) >= 0."""

  def __init__(self, learning_rate, num_train_steps, num_warmup_steps):
    super().__init__()
    self.learning_rate = learning_rate
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    total = float(max(self.num_train_steps, 1))
    decayed = self.learning_rate * (1.0 - tf.minimum(step, total) / total)
    if not self.num_warmup_steps:
      return decayed
    warmup = self.learning_rate * step / float(self.num_warmup_steps)
    return tf.where(step < float(self.num_warmup_steps), warmup, decayed)

  def get_config(self):
    return {"learning_rate": self.learning_rate, "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps}


class SiameseModel(tf.Module):
  """Encoder + pooling (+ Glow) shared by both sentences, and the NLI classifier.

  Args:
    loaded: loaders.LoadedModel.
    sentence_embedding_type: str, a pooling name.
    num_labels: int C; > 1 adds the classifier W [C, 3D].
    flow_model_config: str or None. A Glow config name; None for no flow.
    low_dim: int, 0 for none.
    seed: int, for W's initializer and the Glow's rotations.
  """

  def __init__(self, loaded, sentence_embedding_type, num_labels, flow_model_config=None, low_dim=0, seed=0):
    super().__init__(name="siamese")
    self.encoder = loaded.encoder
    self.pooling = pooling_lib.resolve(sentence_embedding_type, loaded.num_layers)
    self.dim = self.pooling.output_dim(loaded.hidden_size)
    self.flow = None
    if flow_model_config is not None:
      with distribute.policy_scope("float32"):  # the flow's log-determinants need float32
        self.flow = glow.Glow.from_config(flow_model_config, dim=self.dim, seed=seed)
    if low_dim and self.dim % low_dim:
      raise ValueError(f"low_dim={low_dim} must divide the embedding width D={self.dim}")
    self.low_dim = low_dim
    self.out_dim = low_dim or self.dim
    self.output_weights = None
    if num_labels > 1:
      init = keras.initializers.TruncatedNormal(stddev=0.02, seed=seed)
      self.output_weights = tf.Variable(init([num_labels, 3 * self.out_dim]), name="output_weights")

  def bert_variables(self, include_flow):
    """What BERT's optimizer updates: the encoder, the classifier, and the flow when it has no own loss."""
    variables = list(self.encoder.trainable_variables)
    if self.output_weights is not None:
      variables.append(self.output_weights)
    if include_flow and self.flow is not None:
      variables += self.flow.trainable_variables
    return variables

  def embed(self, ids, mask, training):
    """int32 [B, S] ids and mask -> (embedding float32 [B, D'], flow NLL float32 [B] bits/dim or None)."""
    inputs = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": tf.zeros_like(ids)}
    pooled = tf.cast(pooling_lib.pool(self.pooling, self.encoder(inputs, training=training), mask),
                     tf.float32)                                                     # [B, D]
    nll = None
    if self.flow is not None:
      z, logdet = self.flow(pooled, training=training)                              # [B, D], [B]
      nll = self.flow.latent_nll(z, logdet)                                         # [B] bits/dim
      pooled = z
    if self.low_dim:
      pooled = tf.reduce_mean(tf.reshape(pooled, [-1, self.low_dim, self.dim // self.low_dim]), axis=-1)
    return pooled, nll

  def __call__(self, batch, training=False):
    """Both towers and the per-pair supervised loss.

    Args:
      batch: dict with int32 `ids_a`, `mask_a`, `ids_b`, `mask_b` [B, S]; `label` (int32 class ids, or float32
        targets already scaled to [0, 1]) [B]; `labeled` float32 [B] (0 drops the pair's supervised loss).
      training: bool, dropout.

    Returns:
      dict: embedding_a, embedding_b [B, D'], cos [B], logits [B, C] (NLI only), per_example_loss [B] (zeros
      where unlabelled), flow_nll [B] (nll_a + nll_b, only with a flow).
    """
    emb_a, nll_a = self.embed(batch["ids_a"], batch["mask_a"], training)
    emb_b, nll_b = self.embed(batch["ids_b"], batch["mask_b"], training)
    cos = tf.reduce_sum(tf.math.l2_normalize(emb_a, -1) * tf.math.l2_normalize(emb_b, -1), -1)  # [B]
    out = {"embedding_a": emb_a, "embedding_b": emb_b, "cos": cos}
    if self.output_weights is None:
      loss = tf.square(cos - tf.cast(batch["label"], tf.float32))
    else:
      features = tf.concat([emb_a, emb_b, tf.abs(emb_a - emb_b)], -1)              # [B, 3D']
      logits = tf.matmul(features, self.output_weights, transpose_b=True)          # [B, C]
      loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=batch["label"], logits=logits)
      out["logits"] = logits
    out["per_example_loss"] = loss * batch["labeled"]
    if self.flow is not None:
      out["flow_nll"] = nll_a + nll_b
    return out


def supervised_loss(out, l2_penalty):
  """Per-pair loss with the optional L2 penalty on |u| + |v| (float32 [B])."""
  loss = out["per_example_loss"]
  if l2_penalty > 0:
    loss += l2_penalty * (tf.norm(out["embedding_a"], axis=-1) + tf.norm(out["embedding_b"], axis=-1))
  return loss


# ---- model building and export ---------------------------------------------------------------------------------

def load_encoder(config):
  """loaders.LoadedModel from the config's model directory / preset, or from the three TF1 files."""
  if config.bert_config_file is not None:
    return loaders.load_tf1_files(config.bert_config_file, config.vocab_file, config.init_checkpoint,
                                  True if config.do_lower_case is None else config.do_lower_case)
  return loaders.load_model(config.model, do_lower_case=config.do_lower_case, vocab_file=config.vocab_file)


def export_encoder(loaded, out_dir):
  """Writes the (fine-tuned) encoder where `loaders.load_model(out_dir)` reads it: HF format for a BertEncoder,
  a TF-Hub SavedModel for a TF-Hub encoder. Returns out_dir."""
  if isinstance(loaded.encoder, BertEncoder):
    hf_loader.save_hf_encoder(loaded.encoder, loaded.config, out_dir, loaded.vocab_file, loaded.do_lower_case)
  else:
    tfhub.save_hub_encoder(loaded.encoder, out_dir, loaded.vocab_file, loaded.do_lower_case)
  return out_dir


# ---- training --------------------------------------------------------------------------------------------------

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
    self.static_shapes = config.static_shapes or distribute.is_tpu(strategy)
    self.policy = distribute.mixed_precision_policy(strategy, config.use_mixed_precision)
    keras.utils.set_random_seed(config.seed)
    with strategy.scope():
      with distribute.policy_scope(self.policy):
        self.loaded = load_encoder(config)
      if self.loaded.config is not None and config.max_seq_length > self.loaded.config.max_position_embeddings:
        raise ValueError(f"max_seq_length {config.max_seq_length} > the model's max_position_embeddings "
                         f"{self.loaded.config.max_position_embeddings}")
      self.model = SiameseModel(self.loaded, config.sentence_embedding_type, task.num_labels,
                                config.flow_model_config if config.flow else None, config.low_dim, config.seed)
      warmup = int(num_train_steps * config.warmup_proportion)
      self.optimizer = distribute.wrap_optimizer(glow.AdamWeightDecay(
          WarmupLinearDecay(config.learning_rate, num_train_steps, warmup), weight_decay_rate=0.01), self.policy)
      self.bert_vars = self.model.bert_variables(include_flow=not config.flow_loss)
      getattr(self.optimizer, "inner_optimizer", self.optimizer).build(self.bert_vars)
      self.flow_optimizer = None
      if config.flow_loss:
        self.flow_optimizer = glow.AdamWeightDecay(config.flow_learning_rate, weight_decay_rate=0.01)
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
        per_example = supervised_loss(out, c.l2_penalty)
        loss = tf.reduce_sum(per_example) / global_batch
        if c.num_examples == 0:
          loss = tf.zeros_like(loss)
        if self.flow_optimizer is not None:
          flow_loss = tf.reduce_sum(out["flow_nll"]) / global_batch
        else:
          flow_loss = tf.zeros([], tf.float32)
        scaled = self.optimizer.get_scaled_loss(loss) if self.policy == "mixed_float16" else loss
      grads = tape.gradient(scaled, self.bert_vars, unconnected_gradients=tf.UnconnectedGradients.ZERO)
      flow_grads = tape.gradient(flow_loss, flow_vars) if flow_vars else []
      return loss, flow_loss, grads, flow_grads

    if c.use_xla:
      gradients = tf.function(gradients, jit_compile=True)
    loss, flow_loss, grads, flow_grads = gradients(batch)
    if self.policy == "mixed_float16":
      grads = self.optimizer.get_unscaled_gradients(grads)
    self.optimizer.apply_gradients(zip(grads, self.bert_vars))
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
    dataset = siamese_data.make_dataset(features, c.train_batch_size, self.static_shapes, order)
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
    dataset = siamese_data.make_dataset(features, batch_size, self.static_shapes)
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
      result["pearson_x100"] = evaluation.pearson_x100(out["cos"], out["label"])
      result["spearman_x100"] = evaluation.spearman_x100(out["cos"], out["label"])
    if "flow_nll" in out:
      result["eval_loss_flow"] = float(np.mean(out["flow_nll"]))
    return result

  def predict(self, pair_sets, pool):
    """Per-pair cosines (or, with `pool`, the pair embeddings) of the pairs, in order."""
    out = self.infer(pair_sets, self.config.predict_batch_size)
    return (out["embedding_a"], out["embedding_b"]) if pool else out["cos"]


# ---- the whole run -------------------------------------------------------------------------------------------

def num_train_steps(num_pairs, config):
  return int(num_pairs / config.train_batch_size * config.num_train_epochs)


def run(config, strategy=None, stop_at_step=None):
  """Trains, evaluates and predicts as `config` says; writes the files listed in the module notes.

  Args:
    config: SiameseConfig.
    strategy: tf.distribute.Strategy or None (None: `distribute.make_strategy(config.tpu, config.num_gpus)`).
    stop_at_step: int or None. Stop training at this step (a simulated interruption; rerun to resume).

  Returns:
    dict: "train" (see Trainer.train), "eval" (see Trainer.evaluate), "export_dir", "predictions" (path).
  """
  strategy = strategy or distribute.make_strategy(config.tpu, config.num_gpus)
  task = data_lib.load_task(config.task_name, config.data_dir)
  train_sets = siamese_data.split_sets(task, config.train_splits) if config.do_train else []
  steps = num_train_steps(sum(len(ps) for ps in train_sets), config)
  if config.do_train and steps < 1:
    raise ValueError(f"{sum(len(ps) for ps in train_sets)} training pairs make no step of batch "
                     f"{config.train_batch_size}")
  os.makedirs(config.output_dir, exist_ok=True)
  trainer = Trainer(config, task, strategy, steps)
  result = {}
  if config.do_train:
    result["train"] = trainer.train(train_sets, stop_at_step)
    if int(trainer.step.numpy()) < steps:
      logging.info("stopped at step %d of %d; rerun to resume", int(trainer.step.numpy()), steps)
      return result
    result["export_dir"] = export_encoder(trainer.loaded, os.path.join(config.output_dir, "export", "encoder"))
    logging.info("fine-tuned encoder written to %s", result["export_dir"])
  if config.do_eval:
    metrics = trainer.evaluate(siamese_data.split_sets(task, ["dev"]))
    result["eval"] = metrics
    io_utils.write_text(os.path.join(config.output_dir, "eval_results.json"),
                        json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    io_utils.write_text(os.path.join(config.output_dir, "eval_results.txt"),
                        "".join(f"{k} = {v}\n" for k, v in sorted(metrics.items())))
    logging.info("eval: %s", metrics)
  if config.do_predict:
    test_sets = siamese_data.split_sets(task, ["test"])
    if config.predict_pool:
      emb_a, emb_b = trainer.predict(test_sets, pool=True)
      path = os.path.join(config.output_dir, "test_pooled.jsonl")
      text = "".join(json.dumps({"embedding_a": [round(float(x), 6) for x in a],
                                 "embedding_b": [round(float(x), 6) for x in b]}) + "\n"
                     for a, b in zip(emb_a, emb_b))
    else:
      path = os.path.join(config.output_dir, "test_results.tsv")
      text = "".join(f"{float(c):.6f}\n" for c in trainer.predict(test_sets, pool=False))
    io_utils.write_text(path, text)
    result["predictions"] = path
  return result
