"""Encodes a file of sentences (one per line) into a float32 .npy matrix [n, D], in input order.

The `bert-flow-encode` command, also `python -m bert_flow_tf.encode`:

  python -m bert_flow_tf.encode --model_dir all-minilm-l6-v2 --sentence_embedding_type last-avg \
      --input_file sentences.txt --output_file emb.npy

With a calibration fitted once: `--flow_checkpoint FLOW_DIR` (a fitted-flow directory from run_flow.py) maps the
embeddings through the flow; `--exported_model EXPORT_DIR/text/1` encodes through an exported text SavedModel
instead (it already fixes the model, pooling, max_seq_length and flow).
"""
import os

# TF's C++ start-up lines (CUDA probing on CPU machines, oneDNN notes) drown the output; errors still raise.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# This process uses Keras 2 only (tf_keras): TensorFlow then skips importing Keras 3 (~1.5 s of start-up).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from bert_flow_tf.calibration import fit_flow
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.embedding import encode_file
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling import pooling
from bert_flow_tf.utils import distribute

model_flags.define_model_flags()
flags.adopt_module_key_flags(model_flags)
flags.adopt_module_key_flags(engine_flags)
flags.DEFINE_string("sentence_embedding_type", "last-avg", "Pooling name (see bert_flow_tf/modeling/pooling.py).")
flags.DEFINE_string("input_file", None, "UTF-8 text, one sentence per line.")
flags.DEFINE_string("output_file", None, "Where to write the float32 [n, D] .npy (atomically).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence including [CLS] and [SEP].")
flags.DEFINE_integer("batch_size", 64, "Sentences per batch.")
flags.DEFINE_string("flow_checkpoint", None, "A fitted-flow directory (flow.json + checkpoint, as fit_flow writes "
                    "it): output the flow's calibrated z instead of the raw pooled vectors.")
flags.DEFINE_string("exported_model", None, "A text SavedModel (<export_dir>/text/<version>): encode through it "
                    "instead of building the encoder. Excludes the model flags (--model_dir, ...), "
                    "--sentence_embedding_type, --max_seq_length and --flow_checkpoint.")
flags.mark_flags_as_required(["input_file", "output_file"])
FLAGS = flags.FLAGS
_FIXED_BY_EXPORT = model_flags.NAMES + ("sentence_embedding_type", "max_seq_length", "flow_checkpoint")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  embedder = None
  if FLAGS.exported_model:
    clashes = [f"--{name}" for name in _FIXED_BY_EXPORT if FLAGS[name].present]
    if clashes:
      raise app.UsageError(f"--exported_model cannot be combined with {', '.join(clashes)}: the exported model "
                           "already fixes the model, pooling, max_seq_length and flow")
  else:
    try:
      pooling.check_name(FLAGS.sentence_embedding_type)
    except ValueError as e:
      raise app.UsageError(f"--sentence_embedding_type: {e}") from e
    strategy = engine_flags.strategy_from_flags()
    with distribute.variable_scope(strategy):
      model = model_flags.load_model_from_flags(FLAGS)
    embedder = SentenceEmbedder(model, FLAGS.sentence_embedding_type, FLAGS.max_seq_length, strategy=strategy,
                                static_shapes=engine_flags.static_shapes_from_flags(strategy),
                                use_xla=FLAGS.use_xla)
    if FLAGS.flow_checkpoint:
      try:
        fit_flow.check_fitted_flow(FLAGS.flow_checkpoint, dim=embedder.dim, provenance={
            "sentence_embedding_type": embedder.pooling.name, "max_seq_length": embedder.max_seq_length})
      except ValueError as e:
        raise app.UsageError(f"--flow_checkpoint={FLAGS.flow_checkpoint} does not fit: {e}") from e
  encode_file.encode_file(FLAGS.input_file, FLAGS.output_file, embedder=embedder, flow_dir=FLAGS.flow_checkpoint,
                          exported_model=FLAGS.exported_model, batch_size=FLAGS.batch_size)


def run():
  """The `bert-flow-encode` command: parses the flags and runs `main`, with one-line errors."""
  one_line_errors.run(main, flags_module=__name__)


if __name__ == "__main__":
  run()
