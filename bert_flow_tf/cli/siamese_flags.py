"""The flags of run_siamese.py, in the groups its --help shows (names: docs/flags.md).

Every SiameseConfig field that the model and engine flags do not fill is a flag: of the field's name, or of the
name in RENAMES (the config keeps the original's field names; the flags say pairs, pooling and use_flow). The
original's names are ALIASES.

  siamese_flags.define_flags()                                  # at the script's top
  config = siamese_flags.config_from_flags(FLAGS, model=...)    # in main
"""
import os

from absl import app
from absl import flags

from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import config_flags
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.siamese import config as siamese_config

# Config fields that the model and engine flags fill.
MODEL_FIELDS = ("model", "bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case")
ENGINE_FIELDS = ("tpu", "num_gpus", "use_xla", "static_shapes")
# SiameseConfig field -> its flag, where the two differ.
RENAMES = {"sentence_embedding_type": "pooling", "train_batch_size": "train_batch_pairs",
           "eval_batch_size": "eval_batch_pairs", "predict_batch_size": "predict_batch_pairs",
           "flow": "use_flow"}
# alias -> canonical flag: the config's field names are the original's flag names.
ALIASES = dict(RENAMES)

GROUPS = (
    ("Task and data", ("task_name", "data_dir", "train_splits", "num_examples", "dupe_factor")),
    ("Model and pooling", model_flags.FLAG_NAMES + ("max_seq_length", "pooling", "low_dim")),
    ("What to run", ("do_train", "do_eval", "do_predict", "predict_pool")),
    ("Training", ("train_batch_pairs", "learning_rate", "num_train_epochs", "warmup_proportion", "l2_penalty",
                  "seed", "use_mixed_precision")),
    ("Flow (trained jointly)", ("use_flow", "flow_loss", "flow_learning_rate", "flow_model_config")),
    ("Outputs and checkpoints", ("output_dir", "output_parent_dir", "exp_name", "save_checkpoints_steps",
                                 "keep_checkpoint_max", "log_every_step")),
    *engine_flags.help_groups("Evaluation and devices", ["eval_batch_pairs", "predict_batch_pairs"]),
)
REQUIRED = ("task_name", "data_dir")
# What --help shows (--helpfull: every flag).
KEY_FLAGS = ("task_name", "data_dir", "train_splits", "model_dir", "max_seq_length", "pooling", "do_train", "do_eval",
             "do_predict", "train_batch_pairs", "learning_rate", "num_train_epochs", "use_flow", "flow_loss",
             "output_dir", "tpu", "num_gpus")


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of run_siamese.py (GROUPS) and its ALIASES in `flag_values`."""
  fv = flag_values
  model_flags.define_model_flags(fv)
  engine_flags.define_engine_flags(fv)
  # --do_train stays off unless given (the original's default).
  config_flags.define_config_flags(siamese_config.SiameseConfig, skip=MODEL_FIELDS + ENGINE_FIELDS,
                                   defaults={"do_train": False}, names=RENAMES, flag_values=fv)
  fv["output_dir"].help += " Required, unless the original's --output_parent_dir and --exp_name are given."
  flags.DEFINE_string("output_parent_dir", None, "The original's way to name the output folder: "
                      "<output_parent_dir>/<exp_name>, used when --output_dir is unset.", flag_values=fv)
  flags.DEFINE_string("exp_name", None, "The output folder's name under --output_parent_dir.", flag_values=fv)
  for name in REQUIRED:
    fv[name].help = "Required. " + fv[name].help
  fv["pooling"].help = model_flags.POOLING_HELP  # from the pooling list, as every entry point's
  aliases.define_aliases(ALIASES, fv)


def output_dir_from_flags(flag_values=flags.FLAGS):
  """--output_dir if given (it wins over --output_parent_dir/--exp_name), else the original's
  <output_parent_dir>/<exp_name>.

  Raises:
    app.UsageError when neither is given.
  """
  fv = flag_values
  if fv.output_dir is not None:
    return fv.output_dir
  if fv.output_parent_dir is None or fv.exp_name is None:
    raise app.UsageError("no output folder: give --output_dir (or the original's --output_parent_dir with "
                         "--exp_name)")
  return os.path.join(fv.output_parent_dir, fv.exp_name)


def config_from_flags(flag_values=flags.FLAGS, **values):
  """The SiameseConfig of the flags, with `values` (the model fields, ...) given by the caller."""
  return config_flags.config_from_flags(siamese_config.SiameseConfig, flag_values, names=RENAMES,
                                        output_dir=output_dir_from_flags(flag_values), **values)
