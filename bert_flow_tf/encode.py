"""Encodes a file of sentences (one per line) into a float32 .npy matrix [n, D], in input order (the
`bert-flow-encode` command).

  python -m bert_flow_tf.encode --model_dir all-minilm-l6-v2 --pooling last-avg \
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

from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import encode_flags
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.embedding import encode_file
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling import pooling
from bert_flow_tf.utils import distribute

# Every flag, in the groups --help shows: bert_flow_tf/cli/encode_flags.py (names: docs/flags.md).
encode_flags.define_flags()
FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  embedder = None
  if FLAGS.exported_model:
    clashes = [f"--{aliases.given_name(FLAGS, name)}" for name in encode_flags.FIXED_BY_EXPORT
               if FLAGS[name].present]
    if clashes:
      raise app.UsageError(f"--exported_model cannot be combined with {', '.join(clashes)}: the exported model "
                           "already fixes the model, pooling, max_seq_length and flow")
  else:
    try:
      pooling.check_name(FLAGS.pooling)
    except ValueError as e:
      raise app.UsageError(f"--{aliases.given_name(FLAGS, 'pooling')}: {e}") from e
    strategy = engine_flags.strategy_from_flags()
    with distribute.variable_scope(strategy):
      model = model_flags.load_model_from_flags(FLAGS)
    embedder = SentenceEmbedder(model, FLAGS.pooling, FLAGS.max_seq_length, strategy=strategy,
                                static_shapes=engine_flags.static_shapes_from_flags(strategy),
                                use_xla=FLAGS.use_xla)
    if FLAGS.flow_checkpoint:
      try:
        fitted_flow.check(FLAGS.flow_checkpoint, dim=embedder.dim, provenance={
            "sentence_embedding_type": embedder.pooling.name, "max_seq_length": embedder.max_seq_length})
      except ValueError as e:
        raise app.UsageError(f"--flow_checkpoint={FLAGS.flow_checkpoint} does not fit: {e}") from e
  encode_file.encode_file(FLAGS.input_file, FLAGS.output_file, embedder=embedder, flow_dir=FLAGS.flow_checkpoint,
                          exported_model=FLAGS.exported_model, batch_size=FLAGS.encode_batch_sentences)


def run():
  """The `bert-flow-encode` command: parses the flags and runs `main`, with one-line errors."""
  one_line_errors.run(main, help_groups=encode_flags.GROUPS, doc=__doc__)


if __name__ == "__main__":
  run()
