"""Embeds sentence files on Apache Beam into the embedding store that run_flow.py --cache_dir reads.

  python -m bert_flow_tf.beam --input_pattern='corpus/*.txt' --cache_dir=exp/cache \\
      --model_dir=all-minilm-l6-v2 --pooling=first-last-avg --num_workers=2

The model, pooling, max_seq_length, cache folder and batch flags are run_flow.py's (bert_flow_tf/cli/beam_flags.py).
Without --runner the pipeline runs here on Beam's FnApi runner with --num_workers worker processes; any other Beam
pipeline option (--runner=DataflowRunner --project ... --region ... --temp_location ...) is passed to Beam as given,
and --num_workers goes to it too (Dataflow's worker count). Commands for Dataflow, Flink and Spark: docs/beam.md.
Prints one JSON line: the store folder, the quantities and the counters.
"""
import json
import logging
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from bert_flow_tf.cli import beam_flags
from bert_flow_tf.cli import model_flags

beam_flags.define_flags()
flags.adopt_module_key_flags(beam_flags)
flags.adopt_module_key_flags(model_flags)
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
      FLAGS.input_pattern, FLAGS.cache_dir, model_flags.model_kwargs(FLAGS), FLAGS.pooling,
      FLAGS.max_seq_length, FLAGS.encode_batch_sentences, FLAGS.shard_size, FLAGS.inference_batch_sentences,
      threads, options)
  print(json.dumps(summary, sort_keys=True))
  sys.stdout.flush()


if __name__ == "__main__":
  app.run(main, flags_parser=_parse)
