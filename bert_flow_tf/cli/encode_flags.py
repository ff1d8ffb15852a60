"""The flags of `python -m bert_flow_tf.encode`, in the groups its --help shows (names: docs/flags.md).

  encode_flags.define_flags()     # at the module's top; then one_line_errors.run(main, help_groups=GROUPS)
"""
from absl import flags

from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags

# alias -> canonical flag
ALIASES = {"sentence_embedding_type": "pooling", "batch_size": "encode_batch_sentences"}
# What an exported model already fixes (excluded with --exported_model).
FIXED_BY_EXPORT = model_flags.FLAG_NAMES + ("pooling", "max_seq_length", "flow_checkpoint")


GROUPS = (
    ("Input and output", ("input_file", "output_file")),
    ("Model and pooling", model_flags.FLAG_NAMES + ("max_seq_length", "pooling")),
    ("Calibration", ("flow_checkpoint", "exported_model")),
    *engine_flags.help_groups("Encoding and devices", ["encode_batch_sentences", "progress"]),
)


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of encode (GROUPS) and its ALIASES in `flag_values`; marks the required ones."""
  fv = flag_values
  model_flags.define_model_flags(fv)
  engine_flags.define_engine_flags(fv)
  flags.DEFINE_string("input_file", None, "Required. UTF-8 text, one sentence per line.", flag_values=fv)
  flags.DEFINE_string("output_file", None, "Required. Where to write the float32 [n, D] .npy (atomically).",
                      flag_values=fv)
  model_flags.define_max_seq_length(fv)
  model_flags.define_pooling(fv)
  flags.DEFINE_string("flow_checkpoint", None, "A fitted-flow directory (flow.json + checkpoint, as run_flow.py "
                      "writes it under <output_dir>/flows/): output the flow's calibrated z instead of the raw "
                      "pooled vectors; unset: no flow.", flag_values=fv)
  flags.DEFINE_string("exported_model", None, "A text SavedModel (<export_dir>/text/<version>): encode through it "
                      "instead of building the encoder. Excludes the model flags (--model_dir, ...), --pooling, "
                      "--max_seq_length and --flow_checkpoint.", flag_values=fv)
  model_flags.define_encode_batch_sentences(fv)
  engine_flags.define_progress(fv)
  aliases.define_aliases(ALIASES, fv)
  flags.mark_flags_as_required(["input_file", "output_file"], flag_values=fv)
