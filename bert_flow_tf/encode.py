"""Encodes a file of sentences (one per line) into a float32 .npy matrix [n, D], in input order.

  python -m bert_flow_tf.encode --model_dir all-minilm-l6-v2 --sentence_embedding_type last-avg \
      --input_file sentences.txt --output_file emb.npy
"""
import time

from absl import app
from absl import flags
from absl import logging

from bert_flow_tf import io_utils
from bert_flow_tf import loaders
from bert_flow_tf import presets
from bert_flow_tf.embed import SentenceEncoder

flags.DEFINE_string("model_dir", presets.DEFAULT,
                    "BERT directory (TF1 checkpoint, HF safetensors or TF-Hub SavedModel) or a preset name: "
                    f"{', '.join(presets.PRESETS)}.")
flags.DEFINE_string("sentence_embedding_type", "last-avg", "Pooling name (see bert_flow_tf/pooling.py).")
flags.DEFINE_string("input_file", None, "UTF-8 text, one sentence per line.")
flags.DEFINE_string("output_file", None, "Where to write the float32 [n, D] .npy (atomically).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence including [CLS] and [SEP].")
flags.DEFINE_integer("batch_size", 64, "Sentences per batch.")
flags.mark_flags_as_required(["input_file", "output_file"])
FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  sentences = io_utils.read_lines(FLAGS.input_file)
  model = loaders.load_model(FLAGS.model_dir)
  encoder = SentenceEncoder(model, FLAGS.sentence_embedding_type, FLAGS.max_seq_length)
  start = time.perf_counter()
  embeddings = encoder.encode(sentences, batch_size=FLAGS.batch_size)
  seconds = time.perf_counter() - start
  io_utils.save_npy(FLAGS.output_file, embeddings)
  logging.info("wrote %s: %d x %d float32 (%s) in %.1f s, %.0f sentences/s", FLAGS.output_file,
               *embeddings.shape, encoder.pooling.describe(), seconds, len(sentences) / max(seconds, 1e-9))


if __name__ == "__main__":
  app.run(main)
