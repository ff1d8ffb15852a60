"""The tf.data options every dataset of this project runs with.

Autotuning is off. Its model thread sleeps up to a minute between tuning rounds, and with TF 2.21 deleting a
finished iterator waits for that sleep: a `python -m bert_flow_tf.encode` run stalled 20-30 s with no CPU after its
last batch in about half the runs (gdb: the main thread in `~RootDataset::Iterator`, waiting on
`Model::OptimizeLoop`). Our pipelines are cheap (tokenizing and packing 15k sentences costs ~1 CPU-s), so there is
nothing to tune: a `num_parallel_calls=tf.data.AUTOTUNE` then means min(16, cores), fixed, and prefetch buffers are
given explicitly.
"""
import tensorflow as tf


def untuned(dataset):
  """`dataset` with autotuning off (see the module notes)."""
  options = tf.data.Options()
  options.autotune.enabled = False
  return dataset.with_options(options)
