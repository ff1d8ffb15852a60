"""Encodes a file of sentences (one per line) into a float32 .npy matrix [n, D], in input order (the
`bert-flow-encode` command).

  python -m bert_flow_tf.encode --model_dir all-minilm-l6-v2 --pooling last-avg \
      --input_file sentences.txt --output_file emb.npy

With a calibration fitted once: `--flow_checkpoint FLOW_DIR` (a fitted-flow directory from run_flow.py) maps the
embeddings through the flow; `--exported_model EXPORT_DIR/text/1` encodes through an exported text SavedModel
instead (it already fixes the model, pooling, max_seq_length and flow). A SavedModel is a program: --exported_model
loads and runs the graph it names because the caller named it, so give it only exports you trust
(docs/security.md).
"""
import os

# TF's C++ start-up lines (CUDA probing on CPU machines, oneDNN notes) drown the output; errors still raise.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# This process uses Keras 2 only (tf_keras): TensorFlow then skips importing Keras 3 (~1.5 s of start-up).
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import time  # pylint: disable=g-import-not-at-top

from absl import app
from absl import flags
from absl import logging
import numpy as np

import glow

from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import encode_flags
from bert_flow_tf.cli import engine_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.modeling import pooling
from bert_flow_tf.serving import export
from bert_flow_tf.utils import distribute
from bert_flow_tf.utils import io_utils

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
  encode_file(FLAGS.input_file, FLAGS.output_file, embedder=embedder, flow_dir=FLAGS.flow_checkpoint,
              exported_model=FLAGS.exported_model, batch_size=FLAGS.encode_batch_sentences)


def encode_file(input_file, output_file, embedder=None, flow_dir=None, exported_model=None, batch_size=64):
  """Encodes a UTF-8 file of sentences (one per line) into a float32 .npy [n, D], in input order, atomically.

  Args:
    input_file: str. UTF-8 text, one sentence per line (empty lines included).
    output_file: str. Where the float32 [n, D] .npy goes.
    embedder: SentenceEmbedder, or None with `exported_model`.
    flow_dir: str or None. A fitted-flow directory (flow.json + checkpoint, as `flow_fitting.fit_flow` writes it):
      the output is the flow's calibrated z of the embedder's vectors.
    exported_model: str or None. A text SavedModel (<export_dir>/text/<version>) to encode through instead of
      `embedder`; it already fixes the model, pooling, max_seq_length and flow.
    batch_size: int. Sentences per batch.

  Returns:
    np.float32 [n, D], as written.

  Raises:
    ValueError: not exactly one of `embedder` / `exported_model`, or `flow_dir` with `exported_model`.
    FileNotFoundError / ValueError from `io_utils.read_lines` for a missing or non-UTF-8 input file.
  """
  if (embedder is None) == (exported_model is None):
    raise ValueError(f"give an embedder or an exported_model, not both or neither (exported_model="
                     f"{exported_model!r})")
  if exported_model is not None and flow_dir is not None:
    raise ValueError(f"flow_dir={flow_dir!r}: the exported model {exported_model} already fixes its flow")
  sentences = io_utils.read_lines(input_file)
  with io_utils.atomic_path(output_file) as tmp:  # an unwritable output fails here, before the encoding
    start = time.perf_counter()
    if exported_model is not None:
      embeddings = export.encode_with_saved_model(exported_model, sentences, batch_size)
      what = f"exported model {exported_model}"
    else:
      flow = fitted_flow.load(flow_dir) if flow_dir is not None else None
      # An in-memory store: each distinct line is encoded once.
      store = EmbeddingStore(embedder, root=None, batch_size=batch_size)
      embeddings = store.vectors(sentences, embedder.pooling)
      what = embedder.pooling.describe()
      if flow is not None:
        embeddings = glow.transform(flow, embeddings)
        what += f", then the flow in {flow_dir}"
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
