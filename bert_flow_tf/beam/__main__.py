"""Embeds sentence files on Apache Beam into the embedding store that run_flow.py --cached_dir reads.

  python -m bert_flow_tf.beam --input_pattern='corpus/*.txt' --cached_dir=exp/cache \\
      --model_dir=all-minilm-l6-v2 --sentence_embedding_type=first-last-avg --num_workers=2

The model, pooling, max_seq_length, cache folder and batch flags are run_flow.py's. Without --runner the pipeline
runs here on Beam's FnApi runner with --num_workers worker processes; any other Beam pipeline option
(--runner=DataflowRunner --project ... --region ... --temp_location ...) is passed to Beam as given, and
--num_workers goes to it too (Dataflow's worker count). Commands for Dataflow, Flink and Spark: docs/beam.md.
Prints one JSON line: the store folder, the quantities and the counters.
"""
import json
import logging
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from bert_flow_tf.cli import model_flags

model_flags.define_model_flags()
flags.adopt_module_key_flags(model_flags)
flags.DEFINE_string("input_pattern", None, "Sentence files, one sentence per line: a path or glob, local or any "
                    "filesystem Beam reads (gs://bucket/corpus/*.txt).")
flags.DEFINE_string("cached_dir", None, "The embedding store's root, as run_flow.py --cached_dir.")
flags.DEFINE_list("sentence_embedding_type", ["avg"], "Poolings whose quantities are stored (run_flow.py's names: "
                  "last-avg, first-last-avg, emb-avg, cls, avg, avg-last-2, ...).")
flags.DEFINE_integer("max_seq_length", 64, "Tokens per sentence including [CLS] and [SEP].")
flags.DEFINE_integer("predict_batch_size", 64, "Sentences per encoder batch.")
flags.DEFINE_integer("inference_batch_size", 2048, "Sentences per RunInference call (one length-bucketed "
                     "tf.data pipeline each).")
flags.DEFINE_integer("shard_size", 16384, "About this many sentences per store shard.")
flags.DEFINE_integer("num_workers", 1, "Worker processes here (FnApi runner), or the runner's worker count.")
flags.DEFINE_integer("intra_op_threads", None, "TensorFlow intra-op threads per worker process; default here: "
                     "cores / --num_workers, elsewhere TensorFlow's default.")
flags.mark_flags_as_required(["input_pattern", "cached_dir"])
FLAGS = flags.FLAGS


def _parse(argv):
  """absl parses our flags; every other --option is a Beam pipeline option."""
  return FLAGS(argv, known_only=True)


def main(argv):
  # Imported here: apache_beam is an optional extra (requirements-beam.txt), and --help should work without it.
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.beam import pipeline  # pylint: disable=g-import-not-at-top
  if FLAGS.num_workers < 1:
    raise app.UsageError(f"--num_workers must be >= 1, got {FLAGS.num_workers}")
  logging.getLogger("apache_beam").setLevel(logging.WARNING)  # per-bundle INFO lines from every worker
  beam_args = argv[1:]
  local = not any(a == "--runner" or a.startswith("--runner=") for a in beam_args)
  threads = FLAGS.intra_op_threads
  if local:
    # Worker processes start `python -m apache_beam...` in this directory: they import this package from here.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    options = pipeline.local_options(FLAGS.num_workers, beam_args)
    threads = threads or max(1, (os.cpu_count() or 1) // FLAGS.num_workers)
  else:
    options = PipelineOptions(beam_args, num_workers=FLAGS.num_workers)
  summary = pipeline.embed_files(
      FLAGS.input_pattern, FLAGS.cached_dir, model_flags.model_kwargs(FLAGS), FLAGS.sentence_embedding_type,
      FLAGS.max_seq_length, FLAGS.predict_batch_size, FLAGS.shard_size, FLAGS.inference_batch_size, threads,
      options)
  print(json.dumps(summary, sort_keys=True))
  sys.stdout.flush()


if __name__ == "__main__":
  app.run(main, flags_parser=_parse)
