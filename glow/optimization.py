"""BERT's optimization: AdamWeightDecay (Adam with decoupled weight decay), its warmup + linear-decay schedule.

  AdamWeightDecay      the optimizer, as BERT-flow trains its flow (constant learning rate) and BERT.
  WarmupLinearDecay    BERT's learning-rate schedule for fine-tuning.
  create_optimizer     the two together, as BERT's `optimization.create_optimizer` builds them.

Ported from the original's `optimization_bert_flow.py` (`AdamWeightDecayOptimizer`):
  m <- beta_1 m + (1 - beta_1) g,   v <- beta_2 v + (1 - beta_2) g^2,
  theta <- theta - lr * (m / (sqrt(v) + epsilon) + weight_decay_rate * theta)   [no bias correction]
where the decay term is skipped for variables whose name matches (re.search) any pattern of
`exclude_from_weight_decay`, and gradients are first clipped to global norm 1.0.

In the original none of the flow's variable names (b, logs, W, ...) matches "LayerNorm",
"layer_norm" or "bias", so every flow variable decays; ours are named the same way.

This is a `tf_keras` optimizer: the learning rate may be a float or a
`keras.optimizers.schedules.LearningRateSchedule` (evaluated at `iterations`, which
`apply_gradients` increments), and under `tf.distribute` (call `apply_gradients` inside
`strategy.run`) gradients are summed across replicas before clipping, as Keras does.
The original gave the encoder and the flow one optimizer each, so each clipped its own
gradients to norm 1.0: keep two AdamWeightDecay instances when training both.
"""
import re

import tensorflow as tf
import tf_keras as keras

from glow.config import DEFAULT_WEIGHT_DECAY_RATE

DEFAULT_EXCLUDE = ("LayerNorm", "layer_norm", "bias")


class AdamWeightDecay(keras.optimizers.Optimizer):
  """Adam without bias correction plus decoupled weight decay (BERT's AdamWeightDecayOptimizer).

  The decay is applied in `update_step` (not by Keras' separate `weight_decay` pass), with
  `exclude_from_weight_decay` matched against variable names as in the original.

  Args:
    learning_rate: float or `keras.optimizers.schedules.LearningRateSchedule`. The original's
      flow used a constant 1e-3 (`--flow_learning_rate`).
    weight_decay_rate: float. Decoupled decay rate; 0 disables it.
    beta_1: float. First-moment decay.
    beta_2: float. Second-moment decay.
    epsilon: float. Added to sqrt(v).
    exclude_from_weight_decay: sequence of str. Regex patterns; a variable whose name matches
      any of them is not decayed.
    global_clipnorm: float or None. Gradients are clipped to this global norm (None: no clip).
    name: str.
    **kwargs: other `keras.optimizers.Optimizer` arguments (e.g. jit_compile).
  """

  def __init__(self,
               learning_rate=1e-3,
               weight_decay_rate=DEFAULT_WEIGHT_DECAY_RATE,
               beta_1=0.9,
               beta_2=0.999,
               epsilon=1e-6,
               exclude_from_weight_decay=DEFAULT_EXCLUDE,
               global_clipnorm=1.0,
               name="AdamWeightDecay",
               **kwargs):
    kwargs.setdefault("jit_compile", False)
    super().__init__(name=name, global_clipnorm=global_clipnorm, **kwargs)
    self._learning_rate = self._build_learning_rate(learning_rate)
    self.weight_decay_rate = weight_decay_rate
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.exclude_patterns = tuple(exclude_from_weight_decay or ())

  def build(self, var_list):
    """Creates the first and second moments (m, v) of every variable, zero-initialised."""
    super().build(var_list)
    if getattr(self, "_built", False):
      return
    self._built = True
    self._m = [self.add_variable_from_reference(v, "adam_m") for v in var_list]
    self._v = [self.add_variable_from_reference(v, "adam_v") for v in var_list]

  def decays(self, variable):
    """Whether `variable` gets weight decay: a nonzero rate and no exclude pattern in its name."""
    if not self.weight_decay_rate:
      return False
    return not any(re.search(p, variable.name) for p in self.exclude_patterns)

  def update_step(self, gradient, variable):
    """theta -= lr * (m / (sqrt(v) + epsilon) + rate * theta), without bias correction.

    The Adam part is TF's fused ResourceApplyAdam with beta_1^t = beta_2^t = 0 given as the
    bias-correction powers, which makes its step size lr * sqrt(1 - 0) / (1 - 0) = lr: BERT's
    uncorrected update. The decay is applied first; the Adam step does not read theta, so the
    result equals the original's single update.
    """
    if isinstance(gradient, tf.IndexedSlices):
      # The original densified sparse gradients (tf.gradients + clip_by_global_norm) too.
      gradient = tf.convert_to_tensor(gradient)
    dtype = variable.dtype
    lr = tf.cast(self.learning_rate, dtype)
    if self.decays(variable):
      variable.assign_sub(lr * self.weight_decay_rate * variable)
    index = self._index_dict[self._var_key(variable)]
    zero = tf.constant(0.0, dtype)
    tf.raw_ops.ResourceApplyAdam(
        var=variable.handle, m=self._m[index].handle, v=self._v[index].handle,
        beta1_power=zero, beta2_power=zero, lr=lr, beta1=tf.constant(self.beta_1, dtype),
        beta2=tf.constant(self.beta_2, dtype), epsilon=tf.constant(self.epsilon, dtype),
        grad=gradient)

  def get_config(self):
    config = super().get_config()
    config.update(
        learning_rate=self._serialize_hyperparameter(self._learning_rate),
        weight_decay_rate=self.weight_decay_rate,
        beta_1=self.beta_1,
        beta_2=self.beta_2,
        epsilon=self.epsilon,
        exclude_from_weight_decay=list(self.exclude_patterns),
    )
    return config


class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
  """BERT's schedule: lr * step / warmup_steps while step < warmup_steps, then lr * (1 - step / total) >= 0.

  Args:
    learning_rate: float, the peak rate (reached at step num_warmup_steps).
    num_train_steps: int, the step where the rate reaches 0 (and stays).
    num_warmup_steps: int, 0 for no warmup.
  """

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


def create_optimizer(learning_rate, num_train_steps, num_warmup_steps, weight_decay_rate=0.01):
  """AdamWeightDecay on BERT's warmup + linear-decay schedule (BERT's fine-tuning optimizer).

  Args:
    learning_rate: float, the peak rate.
    num_train_steps: int, where the rate reaches 0.
    num_warmup_steps: int.
    weight_decay_rate: float.

  Returns:
    AdamWeightDecay.
  """
  return AdamWeightDecay(WarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps),
                         weight_decay_rate=weight_decay_rate)
