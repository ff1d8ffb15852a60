"""Encodes a file of sentences (one per line) into a float32 .npy matrix [n, D], in input order.

  python -m bert_flow_tf.encode --model_dir all-minilm-l6-v2 --sentence_embedding_type last-avg \
      --input_file sentences.txt --output_file emb.npy

With a calibration fitted once: `--flow_checkpoint FLOW_DIR` (a fitted-flow directory from run_flow.py) maps the
embeddings through the flow; `--exported_model EXPORT_DIR/text/1` encodes through an exported text SavedModel
instead (it already fixes the model, pooling, max_seq_length and flow).
"""
import os
import time

# TF's C++ start-up lines (CUDA probing on CPU machines, oneDNN notes) drown the output; errors still raise.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags
from absl import logging

from bert_flow_tf import export
from bert_flow_tf.calibration import fit_flow
from bert_flow_tf.utils import io_utils
from bert_flow_tf import loaders
from bert_flow_tf.modeling import presets
from bert_flow_tf.embedding.embedder import SentenceEmbedder

flags.DEFINE_string("model_dir", presets.DEFAULT,
                    "BERT directory (TF1 checkpoint, HF safetensors or TF-Hub SavedModel) or a preset name: "
                    f"{', '.join(presets.PRESETS)}.")
flags.DEFINE_string("sentence_embedding_type", "last-avg", "Pooling name (see bert_flow_tf/pooling.py).")
flags.DEFINE_string("input_file", None, "UTF-8 text, one sentence per line.")
flags.DEFINE_string("output_file", None, "Where to write the float32 [n, D] .npy (atomically).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence including [CLS] and [SEP].")
flags.DEFINE_integer("batch_size", 64, "Sentences per batch.")
flags.DEFINE_string("flow_checkpoint", None, "A fitted-flow directory (flow.json + checkpoint, as fit_flow writes "
                    "it): output the flow's calibrated z instead of the raw pooled vectors.")
flags.DEFINE_string("exported_model", None, "A text SavedModel (<export_dir>/text/<version>): encode through it "
                    "instead of building the encoder. Excludes --model_dir, --sentence_embedding_type, "
                    "--max_seq_length and --flow_checkpoint.")
flags.mark_flags_as_required(["input_file", "output_file"])
FLAGS = flags.FLAGS
_FIXED_BY_EXPORT = ("model_dir", "sentence_embedding_type", "max_seq_length", "flow_checkpoint")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  if FLAGS.exported_model:
    clashes = [f"--{name}" for name in _FIXED_BY_EXPORT if FLAGS[name].present]
    if clashes:
      raise app.UsageError(f"--exported_model cannot be combined with {', '.join(clashes)}: the exported model "
                           "already fixes the model, pooling, max_seq_length and flow")
  sentences = io_utils.read_lines(FLAGS.input_file)
  start = time.perf_counter()
  if FLAGS.exported_model:
    embeddings = export.encode_with_saved_model(FLAGS.exported_model, sentences, FLAGS.batch_size)
    what = f"exported model {FLAGS.exported_model}"
  else:
    model = loaders.load_model(FLAGS.model_dir)
    encoder = SentenceEmbedder(model, FLAGS.sentence_embedding_type, FLAGS.max_seq_length)
    if FLAGS.flow_checkpoint:
      try:
        fit_flow.check_fitted_flow(FLAGS.flow_checkpoint, dim=encoder.dim, provenance={
            "sentence_embedding_type": encoder.pooling.name, "max_seq_length": encoder.max_seq_length})
      except ValueError as e:
        raise app.UsageError(f"--flow_checkpoint={FLAGS.flow_checkpoint} does not fit: {e}") from e
    embeddings = encoder.encode(sentences, batch_size=FLAGS.batch_size)
    what = encoder.pooling.describe()
    if FLAGS.flow_checkpoint:
      embeddings = fit_flow.transform(fit_flow.load_fitted_flow(FLAGS.flow_checkpoint), embeddings)
      what += f", then the flow in {FLAGS.flow_checkpoint}"
  seconds = time.perf_counter() - start
  io_utils.save_npy(FLAGS.output_file, embeddings)
  logging.info("wrote %s: %d x %d float32 (%s) in %.1f s, %.0f sentences/s", FLAGS.output_file,
               *embeddings.shape, what, seconds, len(sentences) / max(seconds, 1e-9))


if __name__ == "__main__":
  app.run(main)
