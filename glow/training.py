"""The flow loss and its gradient step for a Glow: one batch (or one batch of pairs) in, the loss out.

BERT-flow's loss on a batch of sentence pairs is the mean NLL (bits/dim) of the `a` sentences plus the mean NLL
of the `b` sentences, through one shared flow (`nll_loss(nll_a, nll_b)`); on a plain batch it is the mean NLL.

  nll_loss             the loss from per-example NLLs
  loss_and_gradients   the loss of a batch and its gradients (the one gradient computation of the flow loss)
  make_train_step      a traced step: loss_and_gradients, then the optimizer's update
  ReusableTrainStep    one Glow, optimizer and traced pair step kept across fits, reset for each (no retrace)
  trace_settings       what a traced step fixes as constants (a reset must match them)

Legend: B batch (or pairs), D vector width.
"""
import tensorflow as tf

from glow.model import Glow


def nll_loss(*nlls, global_batch_size=None):
  """The flow loss: each batch's mean NLL, summed over the batches (one batch, or the two halves of pairs).

  Args:
    *nlls: float32 [B] tensors, per-example NLL in bits/dim (`Glow.nll` or `Glow.latent_nll`), one per batch:
      (x,) for a plain batch, (nll_a, nll_b) for a batch of pairs.
    global_batch_size: int or None. None: each mean is over its own [B]. Under tf.distribute, give the global
      batch: each replica then divides its sums by it, so that the replicas' losses add up to the global means.

  Returns:
    float32 scalar (bits/dim).
  """
  if global_batch_size is None:
    terms = [tf.reduce_mean(nll) for nll in nlls]
  else:
    terms = [tf.reduce_sum(nll) / float(global_batch_size) for nll in nlls]
  return tf.add_n(terms)


def loss_and_gradients(glow_model, batches, weight=None, global_batch_size=None):
  """`nll_loss` of `batches` through `glow_model` (training mode) and its gradients.

  Args:
    glow_model: Glow.
    batches: sequence of float32 [B, D]: (x,) or (a, b).
    weight: float32 [B] or None, per-row weight of the NLLs (0 drops a padding row).
    global_batch_size: int or None, as `nll_loss`.

  Returns:
    (loss float32 scalar in bits/dim, gradients: one per `glow_model.trainable_variables`).
  """
  with tf.GradientTape() as tape:
    nlls = [glow_model.nll(x, training=True) for x in batches]
    if weight is not None:
      nlls = [nll * weight for nll in nlls]
    loss = nll_loss(*nlls, global_batch_size=global_batch_size)
  return loss, tape.gradient(loss, glow_model.trainable_variables)


def make_train_step(glow_model, optimizer, pairs=False, jit_compile=False):
  """Returns a `tf.function` that takes one gradient step of `nll_loss` and returns the loss.

  The function is traced once: its input_signature is float32 [None, D] per input.

  Args:
    glow_model: Glow. For init="ddi", call `glow_model.data_init(first_batch)` (or restore an initialized
      checkpoint) before making the step.
    optimizer: a Keras optimizer, e.g. glow.AdamWeightDecay (which clips to global norm 1.0).
    pairs: bool. False: the step takes one batch x. True: it takes a batch of pairs (a, b), as BERT-flow's fit
      does, and the loss is mean NLL of a + mean NLL of b.
    jit_compile: bool. Compile the step with XLA.

  Returns:
    train_step(x float32 [B, D]) or train_step(a, b float32 [B, D]) -> loss float32 scalar (bits/dim, before
    the update).

  Raises:
    ValueError: if the flow's ActNorms still wait for data_init.
  """
  check_initialized(glow_model)
  variables = glow_model.trainable_variables
  optimizer.build(variables)
  spec = tf.TensorSpec([None, glow_model.dim], tf.float32)

  @tf.function(input_signature=[spec, spec] if pairs else [spec], jit_compile=jit_compile, autograph=False)
  def train_step(*batches):
    loss, grads = loss_and_gradients(glow_model, batches)
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  return train_step


def check_initialized(glow_model):
  """Raises ValueError if the Glow's ActNorms still wait for `data_init` (a step would train from zeros)."""
  if not bool(glow_model.initialized.numpy()):
    raise ValueError(f"Glow {glow_model.name!r} (init={glow_model.init!r}) is not initialized: call "
                     "glow_model.data_init(first_batch) before making the train step")


def trace_settings(glow_model, optimizer):
  """What a traced step of `glow_model` and `optimizer` fixes as constants: everything but their variables.

  That is the Glow's `get_config()` but its seed and name (the seed only draws initial variables) and the
  optimizer's but its name and a float learning rate (a variable the trace reads; a schedule is fixed in it).

  Returns:
    dict; two (Glow, optimizer) pairs whose settings are equal can share one trace.
  """
  return {"glow": glow_settings(glow_model), "optimizer": optimizer_settings(optimizer)}


def glow_settings(glow_model):
  """The Glow's part of `trace_settings`: its `get_config()` but its seed and name."""
  return {k: v for k, v in glow_model.get_config().items() if k not in ("name", "seed")}


def optimizer_settings(optimizer):
  """The optimizer's part of `trace_settings`: its class and config but its name and a float learning rate."""
  fixed = {k: v for k, v in optimizer.get_config().items()
           if k != "name" and not (k == "learning_rate" and not isinstance(v, dict))}
  return {"class": type(optimizer).__name__, **fixed}


def _differences(want, got, prefix=""):
  """The dotted names whose values differ between two nested dicts, with both values."""
  out = []
  for key in sorted(set(want) | set(got)):
    a, b = want.get(key), got.get(key)
    if isinstance(a, dict) and isinstance(b, dict):
      out += _differences(a, b, f"{prefix}{key}.")
    elif a != b:
      out.append(f"{prefix}{key}={b!r} (the trace has {a!r})")
  return out


class ReusableTrainStep:
  """One Glow, one optimizer and their traced pair step (`make_train_step(pairs=True)`), kept across fits.

  Tracing the step costs seconds (`bench/flow.py`: trace_s), a step milliseconds. Instead of a new trace per fit,
  `reset(glow_model, optimizer)` takes the fit's new Glow and optimizer (made as a fit without reuse would make them)
  and puts their state into the kept ones, the learning rate included: the next steps compute what a new step of
  `glow_model` and `optimizer` would, on the same trace. `reset` refuses (ValueError) what it cannot make
  exact: a Glow or optimizer that differs in what the trace fixes as constants (`trace_settings`), and a second
  fit of a flow with coupling dropout (the trace's random ops would go on with the previous fit's draws).

  Args:
    config: GlowConfig; dim: int, D; init: str, the ActNorm init ("original" or "ddi"): the fits' Glow.
    optimizer: a tf_keras optimizer (AdamWeightDecay) of the fits' settings; this step keeps a copy of it.
  """

  def __init__(self, config, dim, init, optimizer):
    self.glow_model = Glow(config, dim, init=init)
    self.optimizer = type(optimizer).from_config(optimizer.get_config())
    self.optimizer.build(self.glow_model.trainable_variables)
    self.settings = trace_settings(self.glow_model, self.optimizer)
    self._step = self._concrete = None

  def reset(self, glow_model, optimizer):
    """Starts a new fit from the variables of `glow_model` and a new `optimizer` (not built: its moments are the zeros
    its build would make, `add_variable_from_reference`; its iteration count and learning rate are copied).

    Raises:
      ValueError naming each setting that differs from the trace's, a coupling dropout once the step ran, or an
      optimizer already built.
    """
    differences = _differences(self.settings, trace_settings(glow_model, optimizer))
    if self._step is not None and glow_model.config.coupling_dropout:
      differences.append(f"config.coupling_dropout={glow_model.config.coupling_dropout} (the trace's dropout draws "
                         "would continue from the previous fit)")
    if optimizer.variables[1:]:
      differences.append("the optimizer is built (it has moments of its own; give a new one)")
    if differences:
      raise ValueError(f"this traced step cannot run that fit exactly: {'; '.join(differences)}")
    copy_variables(glow_model, self.glow_model)
    self.optimizer.iterations.assign(optimizer.iterations)
    for moment in self.optimizer.variables[1:]:                # m and v
      moment.assign(tf.zeros_like(moment))
    if not isinstance(optimizer.get_config()["learning_rate"], dict):  # a schedule is part of the trace
      self.optimizer.learning_rate = optimizer.learning_rate

  def __call__(self, a, b):
    """One step on the pairs a, b float32 [B, D]; returns the loss (bits/dim, before the update)."""
    if self._step is None:
      self._step = make_train_step(self.glow_model, self.optimizer, pairs=True)
      # Called directly, the traced graph skips tf.function's per-call signature lookup (same graph, same numbers).
      self._concrete = self._step.get_concrete_function()
    return self._concrete(a, b)

  def tracing_count(self):
    """How many times the step was traced (1 after the first call, whatever the number of fits)."""
    return 0 if self._step is None else self._step.experimental_get_tracing_count()


def copy_variables(source, target):
  """Assigns every variable of Glow `source` to the matching one of Glow `target` (same config, width, init)."""
  if len(source.variables) != len(target.variables):
    raise ValueError(f"Glow {source.name!r} has {len(source.variables)} variables, {target.name!r} "
                     f"{len(target.variables)}: not the same config")
  for theirs, ours in zip(source.variables, target.variables):
    ours.assign(theirs)
