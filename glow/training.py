"""A compiled training step for a Glow: one batch in, the mean loss in bits/dim out."""
import tensorflow as tf


def make_train_step(flow, optimizer, jit_compile=False):
  """Returns a `tf.function` that takes one gradient step on a batch and returns its loss.

  The loss is mean over the batch of `flow.nll(x, training=True)` (bits/dim), the original's
  flow loss. The function is traced once: its input_signature is float32 [None, D].

  Args:
    flow: Glow. For init="ddi", call `flow.data_init(first_batch)` (or restore an initialized
      checkpoint) before making the step.
    optimizer: a Keras optimizer, e.g. glow.AdamWeightDecay (which clips to global norm 1.0).
    jit_compile: bool. Compile the step with XLA.

  Returns:
    train_step(x float32 [B, D]) -> loss float32 scalar (bits/dim, before the update).

  Raises:
    ValueError: if the flow's ActNorms still wait for data_init.
  """
  if not bool(flow.initialized.numpy()):
    raise ValueError(f"Glow {flow.name!r} (init={flow.init!r}) is not initialized: call "
                     "flow.data_init(first_batch) before making the train step")
  variables = flow.trainable_variables
  optimizer.build(variables)

  @tf.function(input_signature=[tf.TensorSpec([None, flow.dim], tf.float32)],
               jit_compile=jit_compile, autograph=False)
  def train_step(x):
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(flow.nll(x, training=True))
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))
    return loss

  return train_step
