"""The flow loss and a compiled training step for a Glow: one batch (or one batch of pairs) in, the loss out.

BERT-flow's loss on a batch of sentence pairs is the mean NLL (bits/dim) of the `a` sentences plus the mean NLL
of the `b` sentences, through one shared flow (`nll_loss(nll_a, nll_b)`); on a plain batch it is the mean NLL.
"""
import tensorflow as tf


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


def make_train_step(flow, optimizer, pairs=False, jit_compile=False):
  """Returns a `tf.function` that takes one gradient step of `nll_loss` and returns the loss.

  The function is traced once: its input_signature is float32 [None, D] per input.

  Args:
    flow: Glow. For init="ddi", call `flow.data_init(first_batch)` (or restore an initialized
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
  if not bool(flow.initialized.numpy()):
    raise ValueError(f"Glow {flow.name!r} (init={flow.init!r}) is not initialized: call "
                     "flow.data_init(first_batch) before making the train step")
  variables = flow.trainable_variables
  optimizer.build(variables)
  spec = tf.TensorSpec([None, flow.dim], tf.float32)

  @tf.function(input_signature=[spec, spec] if pairs else [spec], jit_compile=jit_compile, autograph=False)
  def train_step(*batches):
    with tf.GradientTape() as tape:
      loss = nll_loss(*[flow.nll(x, training=True) for x in batches])
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  return train_step
