"""Where the work runs: the device flags shared by run_flow.py, run_siamese.py and `python -m bert_flow_tf.encode`.

  --tpu NAME | local          TPUStrategy (Colab TPU VMs: local); the original's --use_tpu --tpu_name --tpu_zone
                              --gcp_project --num_tpu_cores are accepted too
  --num_gpus N                one GPU, or MirroredStrategy over N
  --num_cpu_replicas N        MirroredStrategy over N logical CPU devices (tests the distributed path on a CPU)
  --use_xla, --static_shapes  XLA-compiled replica functions; every batch one of a few static shapes
"""
from absl import app
from absl import flags
from absl import logging
import tensorflow as tf

from bert_flow_tf.utils import distribute

flags.DEFINE_string("tpu", None, "Run on a TPU: its name or address for TPUClusterResolver, 'local' on a Colab "
                    "TPU VM ('' resolves it from the environment). Implies --static_shapes.")
flags.DEFINE_bool("use_tpu", False, "The original's switch: run on the TPU named by --tpu_name.")
flags.DEFINE_string("tpu_name", None, "The original's TPU name (with --use_tpu); same as --tpu.")
flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU (TPUClusterResolver); usually detected.")
flags.DEFINE_string("gcp_project", None, "GCP project of the TPU (TPUClusterResolver); usually detected.")
flags.DEFINE_integer("num_tpu_cores", None, "The original's TPU core count; when given, it must equal the "
                     "TPU's replica count.")
flags.DEFINE_integer("num_gpus", 0, "GPUs: 1 runs on /gpu:0, N > 1 under MirroredStrategy; 0 runs where "
                     "TensorFlow places ops.")
flags.DEFINE_integer("num_cpu_replicas", 0, "N > 1: MirroredStrategy over N logical CPU devices (how a CPU "
                     "machine tests the distributed path).")
flags.DEFINE_bool("use_xla", False, "Compile the replica functions with XLA (jit_compile); implies "
                  "--static_shapes.")
flags.DEFINE_bool("static_shapes", False, "Every batch has one of a few static shapes (the last one padded "
                  "with rows that are dropped afterwards); always on with --tpu or --use_xla.")
FLAGS = flags.FLAGS


def tpu_from_flags():
  """The TPU name from --tpu or the original's --use_tpu/--tpu_name, or None."""
  if FLAGS.tpu is not None and FLAGS.use_tpu and FLAGS.tpu_name not in (None, FLAGS.tpu):
    raise app.UsageError(f"--tpu={FLAGS.tpu!r} and --tpu_name={FLAGS.tpu_name!r} name different TPUs")
  if FLAGS.tpu is not None:
    return FLAGS.tpu
  if FLAGS.use_tpu:
    return FLAGS.tpu_name or ""
  return None


def strategy_from_flags():
  """The tf.distribute strategy the flags ask for (see `distribute.make_strategy`); logs what it got."""
  tpu = tpu_from_flags()
  try:
    strategy = distribute.make_strategy(tpu=tpu, num_gpus=FLAGS.num_gpus, num_cpu_replicas=FLAGS.num_cpu_replicas,
                                        tpu_zone=FLAGS.tpu_zone, gcp_project=FLAGS.gcp_project)
  except (ValueError, tf.errors.OpError) as e:  # no such device, or more than one kind asked for
    flag = "tpu" if tpu is not None else "num_gpus" if FLAGS.num_gpus else "num_cpu_replicas"
    message = e.message if isinstance(e, tf.errors.OpError) else str(e)
    raise app.UsageError(f"--{flag}={FLAGS[flag].value!r}: {message}") from e
  if FLAGS.num_tpu_cores is not None and distribute.is_tpu(strategy) and \
      strategy.num_replicas_in_sync != FLAGS.num_tpu_cores:
    raise app.UsageError(f"--num_tpu_cores={FLAGS.num_tpu_cores}, but the TPU has "
                         f"{strategy.num_replicas_in_sync} replicas")
  logging.info("embedding on %d replica(s) of %s; static shapes %s, XLA %s", strategy.num_replicas_in_sync,
               type(strategy).__name__, static_shapes_from_flags(strategy), FLAGS.use_xla)
  return strategy


def static_shapes_from_flags(strategy):
  """True when batches must have static shapes: --static_shapes, --use_xla or a TPU."""
  return bool(FLAGS.static_shapes or FLAGS.use_xla or distribute.is_tpu(strategy))
