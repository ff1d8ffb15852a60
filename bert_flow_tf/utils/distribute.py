"""Picking a tf.distribute strategy and a mixed-precision policy: CPU, one or more GPUs, or a (Colab) TPU.

  TPU          TPUStrategy through `TPUClusterResolver(tpu)` ("" resolves a Colab TPU from its environment,
               "local" a TPU VM); bfloat16 under mixed precision; shapes must be static.
  GPUs         OneDeviceStrategy for one GPU, MirroredStrategy for several; float16 under mixed precision, with
               a LossScaleOptimizer around the optimizer that sees float16 gradients.
  otherwise    the default strategy (whatever device TF places ops on), float32.
"""
import contextlib

import tensorflow as tf
import tf_keras as keras
from absl import logging


def make_strategy(tpu=None, num_gpus=0, num_cpu_replicas=0, tpu_zone=None, gcp_project=None):
  """The strategy for the requested hardware.

  Args:
    tpu: str or None. None: no TPU. Otherwise the TPU name or address handed to TPUClusterResolver ("" on Colab,
      "local" on a TPU VM).
    num_gpus: int >= 0. GPUs to use when `tpu` is None; 0 means no GPU strategy.
    num_cpu_replicas: int >= 0. With no TPU and no GPU: N > 1 logical CPU devices under MirroredStrategy (how a
      CPU-only machine runs, and tests, the distributed path). Must be set before TensorFlow starts its devices,
      unless they already exist.
    tpu_zone, gcp_project: str or None, for TPUClusterResolver (the original's --tpu_zone, --gcp_project).

  Returns:
    tf.distribute.Strategy.

  Raises:
    ValueError: a negative count, more than one kind of device, or more GPUs or CPU replicas than can be had.
  """
  if num_gpus < 0 or num_cpu_replicas < 0:
    raise ValueError(f"num_gpus and num_cpu_replicas must be >= 0, got {num_gpus} and {num_cpu_replicas}")
  asked = [name for name, on in (("tpu", tpu is not None), ("num_gpus", num_gpus), ("num_cpu_replicas",
                                                                                    num_cpu_replicas > 1)) if on]
  if len(asked) > 1:
    raise ValueError(f"use one of tpu, num_gpus and num_cpu_replicas, not {' and '.join(asked)}")
  if tpu is not None:
    resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu, zone=tpu_zone, project=gcp_project)
    tf.config.experimental_connect_to_cluster(resolver)
    tf.tpu.experimental.initialize_tpu_system(resolver)
    strategy = tf.distribute.TPUStrategy(resolver)
  elif num_gpus:
    visible = len(tf.config.list_physical_devices("GPU"))
    if num_gpus > visible:
      raise ValueError(f"num_gpus={num_gpus} but TensorFlow sees {visible} GPU(s)")
    devices = [f"/gpu:{i}" for i in range(num_gpus)]
    strategy = (tf.distribute.OneDeviceStrategy(devices[0]) if num_gpus == 1
                else tf.distribute.MirroredStrategy(devices))
  elif num_cpu_replicas > 1:
    strategy = tf.distribute.MirroredStrategy(logical_cpus(num_cpu_replicas))
  else:
    strategy = tf.distribute.get_strategy()
  logging.info("strategy %s with %d replica(s)", type(strategy).__name__, strategy.num_replicas_in_sync)
  return strategy


def logical_cpus(n):
  """Names of n logical CPU devices, splitting the physical CPU if TensorFlow has not started its devices yet.

  Raises:
    ValueError: TensorFlow already runs with fewer logical CPUs than n.
  """
  cpu = tf.config.list_physical_devices("CPU")[0]
  try:
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
  except RuntimeError:  # devices already initialised: use what exists
    pass
  have = [d.name for d in tf.config.list_logical_devices("CPU")]
  if len(have) < n:
    raise ValueError(f"num_cpu_replicas={n}, but TensorFlow already started with {len(have)} logical CPU(s); "
                     "ask for the replicas before anything runs on TensorFlow")
  return have[:n]


def variable_scope(strategy):
  """Where a model's variables are made for `strategy`: its scope on TPUs and GPUs (each device holds a copy).

  Logical CPU replicas share one host memory: their variables stay plain (made outside the scope), which also
  keeps XLA-compiled replica functions working (XLA cannot read a variable copy placed on another logical CPU).
  """
  if isinstance(strategy, tf.distribute.MirroredStrategy) and all(
      "CPU" in d.upper() for d in strategy.extended.worker_devices):
    return contextlib.nullcontext()
  return strategy.scope()


def is_tpu(strategy):
  return isinstance(strategy, tf.distribute.TPUStrategy)


def needs_static_shapes(strategy, static_shapes=False, use_xla=False):
  """Whether every batch must have a static shape: when asked (`static_shapes`), under XLA or on a TPU."""
  return bool(static_shapes or use_xla or is_tpu(strategy))


def mixed_precision_policy(strategy, use_mixed_precision):
  """"mixed_bfloat16" on TPU, "mixed_float16" elsewhere when `use_mixed_precision`, else "float32"."""
  if not use_mixed_precision:
    return "float32"
  return "mixed_bfloat16" if is_tpu(strategy) else "mixed_float16"


@contextlib.contextmanager
def policy_scope(name):
  """Sets the global Keras dtype policy while layers are built inside the block, then restores the old one.

  Layers read the policy when they are constructed, so only what is built inside the block computes in it.
  """
  old = keras.mixed_precision.global_policy()
  keras.mixed_precision.set_global_policy(name)
  try:
    yield
  finally:
    keras.mixed_precision.set_global_policy(old)


def wrap_optimizer(optimizer, policy):
  """A LossScaleOptimizer around `optimizer` for "mixed_float16" (float16 gradients underflow), else itself."""
  if policy == "mixed_float16":
    return keras.mixed_precision.LossScaleOptimizer(optimizer)
  return optimizer
