"""The model flags of every entry point (run_flow.py, run_siamese.py, `python -m bert_flow_tf.encode`).

A model is a directory or preset name (`--model_dir`), or the original's three TF1 files
(`--bert_config_file --vocab_file --init_checkpoint`, all three, and then no `--model_dir`).

  model_flags.define_model_flags()                       # in an entry point's define_flags, before app.run
  loaded = model_flags.load_model_from_flags(FLAGS)      # in main
"""
from absl import app
from absl import flags

from bert_flow_tf import loaders
from bert_flow_tf.loaders import presets

FLAG_NAMES = ("model_dir", "bert_config_file", "vocab_file", "init_checkpoint", "do_lower_case",
              "hub_preprocess_dir")
_TF1_FILES = ("bert_config_file", "vocab_file", "init_checkpoint")
# How every entry point embeds unless told otherwise (SentenceEncoder.from_pretrained too; docs/flags.md).
DEFAULT_POOLING = "last-avg"
DEFAULT_MAX_SEQ_LENGTH = 64
DEFAULT_ENCODE_BATCH_SENTENCES = 64


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
  """Defines --max_seq_length (DEFAULT_MAX_SEQ_LENGTH) in `flag_values`: run_flow, encode and beam's."""
  flags.DEFINE_integer("max_seq_length", DEFAULT_MAX_SEQ_LENGTH, "Tokens per sentence including [CLS] and [SEP].",
                       flag_values=flag_values)


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
  return loaders.load_model(**model_kwargs(flag_values))
