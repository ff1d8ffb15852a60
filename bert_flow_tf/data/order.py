"""Step counts and seeded training orders, shared by flow fitting and siamese training."""
import math

import numpy as np


def num_train_steps(num_examples, batch_size, num_train_epochs):
  """BERT's step count, int(num_examples / batch_size * num_train_epochs): a final partial batch is dropped."""
  return int(num_examples / batch_size * num_train_epochs)


def batch_order(num_rows, batch_size, num_steps, seed):
  """Row indices of every step, int64 [num_steps, batch_size].

  A fresh seeded permutation of all rows per epoch, epochs back to back, so a final partial batch of one epoch
  continues into the next. The same arguments give the same order, which is what lets a run restarted from a
  checkpoint at step k continue with exactly the batches an uninterrupted run would have seen.
  """
  rng = np.random.default_rng(seed)
  needed = num_steps * batch_size
  epochs = [rng.permutation(num_rows) for _ in range(math.ceil(needed / max(num_rows, 1)))]
  stream = np.concatenate(epochs) if epochs else np.zeros([0], np.int64)
  return stream[:needed].reshape(num_steps, batch_size)
