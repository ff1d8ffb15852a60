"""Encodes a file of sentences (one per line) into a float32 .npy matrix [n, D], in input order (the
`bert-flow-encode` command).

  python -m bert_flow_tf.encode --model_dir all-minilm-l6-v2 --pooling last-avg \\
      --input_file sentences.txt --output_file emb.npy

With a calibration fitted once: `--flow_checkpoint FLOW_DIR` (a fitted-flow directory from run_flow.py) maps the
embeddings through the flow; `--exported_model EXPORT_DIR/text/1` encodes through an exported text SavedModel
instead (it already fixes the model, pooling, max_seq_length and flow). The vectors are `encode`'s: unit length when
the model ends with a Normalize (the preset does), as SentenceEncoder and ExportedEncoder return them. Its
--max_seq_length is 64 by default, not the model's own as SentenceEncoder's: it is the flag run_flow.py and the Beam
pipeline share, so the command reads their embedding store and encodes as the flow they fitted was fitted (pass
--max_seq_length=256 for the preset's own). A SavedModel is a program: --exported_model
loads and runs the graph it names because the caller named it, so give it only exports you trust
(docs/security.md).
"""
import os

# This process uses Keras 2 only (tf_keras): TensorFlow then skips importing Keras 3 (~1.5 s of start-up).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import time  # pylint: disable=g-import-not-at-top

from absl import app
from absl import flags
from absl import logging
import numpy as np

from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import encode_flags
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.cli import outputs
from bert_flow_tf.embedding import settings
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils
from bert_flow_tf.utils import logs

# Every flag, in the groups --help shows: bert_flow_tf/cli/encode_flags.py (names: docs/flags.md).
encode_flags.define_flags()
FLAGS = flags.FLAGS


def _exported_encoder(text_model):
  """ExportedEncoder of `<export_dir>/text/<version>`, or app.UsageError naming --exported_model."""
  from bert_flow_tf.exported_encoder import ExportedEncoder  # pylint: disable=g-import-not-at-top
  version = os.path.basename(os.path.normpath(text_model))
  export_dir = os.path.dirname(os.path.dirname(os.path.normpath(text_model)))
  if not version.isdigit() or os.path.basename(os.path.dirname(os.path.normpath(text_model))) != "text":
    raise app.UsageError(f"--exported_model={text_model}: not <export_dir>/text/<version>")
  return ExportedEncoder(export_dir, int(version))


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  if FLAGS.exported_model:
    clashes = [f"--{aliases.given_name(FLAGS, name)}" for name in encode_flags.FIXED_BY_EXPORT
               if FLAGS[name].present]
    if clashes:
      raise app.UsageError(f"--exported_model cannot be combined with {', '.join(clashes)}: the exported model "
                           "already fixes the model, pooling, max_seq_length and flow")
  outputs.check_writable(os.path.dirname(FLAGS.output_file) or ".", "the --output_file folder")
  with logs.tensorflow_startup(FLAGS.verbosity >= 1):  # the flags were read without TensorFlow: --help is quick
    # pylint: disable=g-import-not-at-top
    from bert_flow_tf.embedding.embedder import SentenceEmbedder
    from bert_flow_tf.sentence_encoder import SentenceEncoder
    from bert_flow_tf.utils import distribute
  if FLAGS.exported_model:
    encoder, what = _exported_encoder(FLAGS.exported_model), f"exported model {FLAGS.exported_model}"
  else:
    strategy = engine_flags.strategy_from_flags()
    with distribute.variable_scope(strategy):
      model = model_flags.load_model_from_flags(FLAGS)
    model_flags.check_max_seq_length(FLAGS, model)
    embedder = SentenceEmbedder(model, FLAGS.pooling, FLAGS.max_seq_length, strategy=strategy,
                                static_shapes=engine_flags.static_shapes_from_flags(strategy),
                                use_xla=FLAGS.use_xla)
    encoder = SentenceEncoder(embedder, batch_size=FLAGS.encode_batch_sentences)  # with the model's Normalize
    what = embedder.pooling_spec.describe()
    if FLAGS.flow_checkpoint:
      try:
        encoder.load_flow(FLAGS.flow_checkpoint)
      except errors.UserError:
        raise  # names its own file
      except ValueError as e:
        raise app.UsageError(f"--flow_checkpoint={FLAGS.flow_checkpoint} does not fit: {e}") from e
      what += f", then the flow in {FLAGS.flow_checkpoint}"
  encode_file(FLAGS.input_file, FLAGS.output_file, encoder, FLAGS.encode_batch_sentences, what, FLAGS.progress)


def encode_file(input_file, output_file, encoder, batch_size=settings.BATCH_SENTENCES,
                what="sentence vectors", show_progress_bar=None):
  """Encodes a UTF-8 file of sentences (one per line) into a float32 .npy [n, D], in input order, atomically.

  Args:
    input_file: str. UTF-8 text, one sentence per line (empty lines included).
    output_file: str. Where the float32 [n, D] .npy goes.
    encoder: a SentenceEncoder (with its calibration, if any) or an ExportedEncoder.
    batch_size: int. Sentences per batch.
    what: str, how the vectors were made, for the log line.
    show_progress_bar: True, False or None (auto), the progress line (utils.progress).

  Returns:
    np.float32 [n, D], as written.

  Raises:
    FileNotFoundError / ValueError from `io_utils.read_lines` for a missing or non-UTF-8 input file.
  """
  sentences = io_utils.read_lines(input_file)
  with io_utils.atomic_path(output_file) as tmp:  # an unwritable output fails here, before the encoding
    start = time.perf_counter()
    embeddings = encoder.encode(sentences, batch_size=batch_size, show_progress_bar=show_progress_bar)
    seconds = time.perf_counter() - start
    with open(tmp, "wb") as f:
      np.save(f, embeddings)
  logging.info("wrote %s: %d x %d float32 (%s) in %.1f s, %.0f sentences/s", output_file, *embeddings.shape,
               what, seconds, len(sentences) / max(seconds, 1e-9))
  return embeddings


def run():
  """The `bert-flow-encode` command: parses the flags and runs `main`, with one-line errors."""
  one_line_errors.run(main, help_groups=encode_flags.GROUPS, doc=__doc__)


if __name__ == "__main__":
  run()
