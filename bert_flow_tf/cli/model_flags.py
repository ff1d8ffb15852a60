"""The model and embedding flags of every entry point (run_flow.py, run_siamese.py, `python -m bert_flow_tf.encode`,
the Beam pipeline): the model, --max_seq_length, --pooling, --encode_batch_sentences, with the library's defaults
and checks (bert_flow_tf/embedding/settings.py).

A model is a directory or preset name (`--model_dir`), or the original's three TF1 files
(`--bert_config_file --vocab_file --init_checkpoint`, all three, and then no `--model_dir`).

  model_flags.define_model_flags()                       # in an entry point's define_flags, before app.run
  loaded = model_flags.load_model_from_flags(FLAGS)      # in main
"""
from absl import app
from absl import flags

from bert_flow_tf.cli import config_flags
from bert_flow_tf.embedding import settings
from bert_flow_tf.loaders import presets
from bert_flow_tf.modeling import pooling
from bert_flow_tf.utils import checks

FLAG_NAMES = ("model_dir", "bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case",
              "hub_preprocess_dir")
_TF1_FILES = ("bert_config_file", "vocab_file", "init_checkpoint")
# How every entry point embeds unless told otherwise: the library's defaults (docs/flags.md).
DEFAULT_POOLING = settings.POOLING
DEFAULT_MAX_SEQ_LENGTH = settings.MAX_SEQ_LENGTH
DEFAULT_ENCODE_BATCH_SENTENCES = settings.BATCH_SENTENCES
# The --pooling help, from the pooling list.
POOLING_HELP = (f"Pooling: {', '.join(pooling.POOLING_NAMES)} (N = a block count; avg = last-avg, avg-last-2 = "
                "first-last-avg: see bert_flow_tf/modeling/pooling.py).")


def define_model_flags(flag_values=flags.FLAGS):
  """Defines --model_dir, --bert_config_file, --vocab_file, --init_checkpoint, --do_lower_case and
  --hub_preprocess_dir in `flag_values`."""
  flags.DEFINE_string("model_dir", presets.DEFAULT,
                      "BERT directory (TF1 checkpoint, HF safetensors, TF-Hub encoder SavedModel) or preset name "
                      f"({', '.join(presets.PRESETS)}). Not with --bert_config_file/--init_checkpoint.",
                      flag_values=flag_values)
  flags.DEFINE_string("bert_config_file", None, "TF1: bert_config.json (with --vocab_file and --init_checkpoint), "
                      "instead of --model_dir.", flag_values=flag_values)
  flags.DEFINE_string("vocab_file", None, "TF1: vocab.txt; elsewhere overrides the model's vocab.",
                      flag_values=flag_values)
  flags.DEFINE_string("init_checkpoint", None, "TF1: checkpoint prefix, e.g. .../bert_model.ckpt.",
                      flag_values=flag_values)
  flags.DEFINE_bool("do_lower_case", None, "Lower-case input; unset: what the model's files say, else True.",
                    flag_values=flag_values)
  flags.DEFINE_string("hub_preprocess_dir", None, "TF-Hub: a preprocess SavedModel holding the vocab.",
                      flag_values=flag_values)


def define_max_seq_length(flag_values=flags.FLAGS):
  """Defines --max_seq_length (DEFAULT_MAX_SEQ_LENGTH, checked) in `flag_values`: run_flow, encode and beam's."""
  flags.DEFINE_integer("max_seq_length", DEFAULT_MAX_SEQ_LENGTH, "Tokens per sentence including [CLS] and [SEP] "
                       f"(at least {settings.MIN_SEQ_LENGTH}, at most the model's max_position_embeddings).",
                       flag_values=flag_values)
  config_flags.check_flag(flag_values, "max_seq_length", settings.check_max_seq_length)


def check_max_seq_length(flag_values, loaded):
  """Raises app.UsageError when --max_seq_length exceeds the loaded model's max_position_embeddings."""
  if loaded.config is not None:
    try:
      settings.check_max_seq_length(None, flag_values.max_seq_length, loaded.config.max_position_embeddings)
    except ValueError as e:
      raise app.UsageError(f"--max_seq_length={flag_values.max_seq_length}: {e}") from e


def define_pooling(flag_values=flags.FLAGS, several=False):
  """Defines --pooling (DEFAULT_POOLING; with `several`, a comma-separated list), each name checked."""
  if several:
    flags.DEFINE_list("pooling", [DEFAULT_POOLING], POOLING_HELP + " A comma-separated list is computed in one BERT "
                      "pass; each pooling's outputs then go to <output_dir>/<pooling>/.", flag_values=flag_values)
    config_flags.check_flag(flag_values, "pooling", checks.each(lambda _, name: pooling.check_name(name)))
  else:
    flags.DEFINE_string("pooling", DEFAULT_POOLING, POOLING_HELP, flag_values=flag_values)
    config_flags.check_flag(flag_values, "pooling", lambda _, name: pooling.check_name(name))


def define_encode_batch_sentences(flag_values=flags.FLAGS):
  """Defines --encode_batch_sentences (DEFAULT_ENCODE_BATCH_SENTENCES, checked)."""
  flags.DEFINE_integer("encode_batch_sentences", DEFAULT_ENCODE_BATCH_SENTENCES, "Sentences per BERT encoding "
                       "batch (speed only; results do not depend on it).", flag_values=flag_values)
  config_flags.check_flag(flag_values, "encode_batch_sentences", settings.check_batch_sentences)


def model_kwargs(flag_values):
  """The model flags as keyword arguments of `loaders.load_model`, checked.

  Raises:
    app.UsageError naming the flags when the TF1 files are incomplete or come with an explicit --model_dir.
  """
  fv = flag_values
  tf1 = fv.bert_config_file is not None or fv.init_checkpoint is not None
  if tf1:
    missing = [f"--{name}" for name in _TF1_FILES if fv[name].value is None]
    if missing:
      raise app.UsageError(f"the TF1 files need all of --bert_config_file, --vocab_file and --init_checkpoint; "
                           f"missing: {', '.join(missing)}")
    if fv["model_dir"].present:
      raise app.UsageError(f"--model_dir={fv.model_dir!r} cannot be combined with the TF1 files "
                           "(--bert_config_file, --vocab_file, --init_checkpoint): give one model")
  return {"model_dir": None if tf1 else fv.model_dir, "bert_config_file": fv.bert_config_file,
          "vocab_file": fv.vocab_file, "init_checkpoint": fv.init_checkpoint, "do_lower_case": fv.do_lower_case,
          "preprocess_dir": fv.hub_preprocess_dir}


def load_model_from_flags(flag_values):
  """loaders.LoadedModel of the model the flags name (see `model_kwargs` for the checks)."""
  from bert_flow_tf import loaders  # pylint: disable=g-import-not-at-top,import-outside-toplevel  (TensorFlow)
  return loaders.load_model(**model_kwargs(flag_values))
