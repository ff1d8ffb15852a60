"""Where the work runs: the device flags shared by run_flow.py, run_siamese.py and `python -m bert_flow_tf.encode`.

  --tpu NAME | local          TPUStrategy (Colab TPU VMs: local); --tpu_zone, --gcp_project for the resolver
  --num_gpus N                one GPU, or MirroredStrategy over N
  --num_cpu_replicas N        MirroredStrategy over N logical CPU devices (tests the distributed path on a CPU)
  --use_xla, --static_shapes  XLA-compiled replica functions; every batch one of a few static shapes

One way to ask for a TPU: --tpu. The original's (google-research/bert's) --use_tpu --tpu_name --num_tpu_cores are
accepted for its scripts, and --help lists them apart (ORIGINAL_TPU_NAMES).

  engine_flags.define_engine_flags()           # at the entry point's top
  strategy = engine_flags.strategy_from_flags()   # in main

The flags are defined and checked without TensorFlow (so --help and a bad flag answer at once); the functions
that make or read a strategy import it.
"""
from absl import app
from absl import flags
from absl import logging

from bert_flow_tf.cli import config_flags
from bert_flow_tf.utils import checks

FLAG_NAMES = ("tpu", "tpu_zone", "gcp_project", "num_gpus", "num_cpu_replicas", "use_xla", "static_shapes")
ORIGINAL_TPU_NAMES = ("use_tpu", "tpu_name", "num_tpu_cores")


def help_groups(title, batch_flags):
  """The last two --help groups of a script: `title` with its `batch_flags` and FLAG_NAMES, then the original's."""
  return ((title, tuple(batch_flags) + FLAG_NAMES), ("The original's TPU flags (prefer --tpu)", ORIGINAL_TPU_NAMES))


FLAGS = flags.FLAGS


def define_engine_flags(flag_values=FLAGS):
  """Defines FLAG_NAMES and ORIGINAL_TPU_NAMES in `flag_values`."""
  fv = flag_values
  flags.DEFINE_string("tpu", None, "Run on a TPU: its name or address for TPUClusterResolver, 'local' on a Colab "
                      "TPU VM ('' resolves it from the environment); unset: no TPU. Implies --static_shapes.",
                      flag_values=fv)
  flags.DEFINE_string("tpu_zone", None, "GCE zone of the TPU (TPUClusterResolver); unset: detected.",
                      flag_values=fv)
  flags.DEFINE_string("gcp_project", None, "GCP project of the TPU (TPUClusterResolver); unset: detected.",
                      flag_values=fv)
  flags.DEFINE_integer("num_gpus", 0, "GPUs: 1 runs on /gpu:0, N > 1 under MirroredStrategy; 0 runs where "
                       "TensorFlow places ops.", flag_values=fv)
  flags.DEFINE_integer("num_cpu_replicas", 0, "N > 1: MirroredStrategy over N logical CPU devices (how a CPU "
                       "machine tests the distributed path).", flag_values=fv)
  flags.DEFINE_bool("use_xla", False, "Compile the replica functions with XLA (jit_compile); implies "
                    "--static_shapes.", flag_values=fv)
  flags.DEFINE_bool("static_shapes", False, "Every batch has one of a few static shapes (the last one padded "
                    "with rows that are dropped afterwards); always on with --tpu or --use_xla.", flag_values=fv)
  flags.DEFINE_bool("use_tpu", False, "The original's switch: run on the TPU named by --tpu_name (= --tpu).",
                    flag_values=fv)
  flags.DEFINE_string("tpu_name", None, "The original's TPU name, read with --use_tpu (= --tpu).", flag_values=fv)
  flags.DEFINE_integer("num_tpu_cores", None, "The original's TPU core count; when given, it must equal the "
                       "TPU's replica count.", flag_values=fv)
  config_flags.check_flag(fv, "num_gpus", checks.non_negative_int)
  config_flags.check_flag(fv, "num_cpu_replicas", checks.non_negative_int)
  config_flags.check_flag(fv, "num_tpu_cores", checks.positive_int)


def define_progress(flag_values=FLAGS):
  """Defines --[no]progress: the progress lines forced on or off (a show_progress_bar of True, False or None)."""
  flags.DEFINE_bool("progress", None, "--progress: always show the progress lines (encoding, flow fits); "
                    "--noprogress: never; unset: for long jobs only.", flag_values=flag_values)


def tpu_from_flags(flag_values=FLAGS):
  """The TPU name from --tpu or the original's --use_tpu/--tpu_name, or None."""
  fv = flag_values
  if fv.tpu is not None and fv.use_tpu and fv.tpu_name not in (None, fv.tpu):
    raise app.UsageError(f"--tpu={fv.tpu!r} and --tpu_name={fv.tpu_name!r} name different TPUs")
  if fv.tpu is not None:
    return fv.tpu
  if fv.use_tpu:
    return fv.tpu_name or ""
  return None


def strategy_from_flags(flag_values=FLAGS):
  """The tf.distribute strategy the flags ask for (see `distribute.make_strategy`); logs what it got."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from bert_flow_tf.utils import distribute  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  fv = flag_values
  tpu = tpu_from_flags(fv)
  try:
    strategy = distribute.make_strategy(tpu=tpu, num_gpus=fv.num_gpus, num_cpu_replicas=fv.num_cpu_replicas,
                                        tpu_zone=fv.tpu_zone, gcp_project=fv.gcp_project)
  except (ValueError, tf.errors.OpError) as e:  # no such device, or more than one kind asked for
    flag = "tpu" if tpu is not None else "num_gpus" if fv.num_gpus else "num_cpu_replicas"
    message = e.message if isinstance(e, tf.errors.OpError) else str(e)
    raise app.UsageError(f"--{flag}={fv[flag].value!r}: {message}") from e
  if fv.num_tpu_cores is not None and distribute.is_tpu(strategy) and \
      strategy.num_replicas_in_sync != fv.num_tpu_cores:
    raise app.UsageError(f"--num_tpu_cores={fv.num_tpu_cores}, but the TPU has "
                         f"{strategy.num_replicas_in_sync} replicas")
  logging.info("embedding on %d replica(s) of %s; static shapes %s, XLA %s", strategy.num_replicas_in_sync,
               type(strategy).__name__, static_shapes_from_flags(strategy, fv), fv.use_xla)
  return strategy


def static_shapes_from_flags(strategy, flag_values=FLAGS):
  """`distribute.needs_static_shapes` for --static_shapes, --use_xla and `strategy`."""
  from bert_flow_tf.utils import distribute  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  return distribute.needs_static_shapes(strategy, flag_values.static_shapes, flag_values.use_xla)
