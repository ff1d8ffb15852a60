"""Embeds sentence files on Apache Beam into the embedding store that run_flow.py --cache_dir reads (the
`bert-flow-beam` command; needs the beam extra: pip install "bert-flow-tf[beam]").

  python -m bert_flow_tf.beam --input_pattern='corpus/*.txt' --cache_dir=exp/cache \\
      --model_dir=all-minilm-l6-v2 --pooling=first-last-avg --num_workers=2

The model, pooling, max_seq_length, cache folder and batch flags are run_flow.py's (bert_flow_tf/cli/beam_flags.py).
Without --runner the pipeline runs here on Beam's FnApi runner with --num_workers worker processes; any other Beam
pipeline option (--runner=DataflowRunner --project ... --region ... --temp_location ...) is passed to Beam as given,
and --num_workers goes to it too (Dataflow's worker count). Commands for Dataflow, Flink and Spark: docs/beam.md.
Prints one JSON line: the store folder, the quantities and the counters. A SIGTERM stops the workers and exits
with status 143; no worker process outlives this one (docs/beam.md).
"""
import json
import logging
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import beam_flags
from bert_flow_tf.cli import model_flags
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.modeling import pooling as pooling_lib
from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

beam_flags.define_flags()
FLAGS = flags.FLAGS
INSTALL = 'pip install "bert-flow-tf[beam]" (in a clone: pip install -r requirements-beam.txt)'


def _import_beam():
  """The modules that need apache_beam; a one-line error saying what to install when it is missing."""
  try:
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=g-import-not-at-top
    from apache_beam.io.localfilesystem import LocalFileSystem  # pylint: disable=g-import-not-at-top
    from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
    from bert_flow_tf.beam import local_runner  # pylint: disable=g-import-not-at-top
    from bert_flow_tf.beam import pipeline  # pylint: disable=g-import-not-at-top
  except ModuleNotFoundError as e:
    if (e.name or "").split(".")[0] != "apache_beam":
      raise
    raise errors.UserError(f"the Beam command needs apache_beam, which is not installed: {INSTALL}") from e
  return FileSystems, LocalFileSystem, PipelineOptions, local_runner, pipeline


def check_inputs(pattern, file_systems, local_file_system):
  """The files `pattern` matches, each local one read once as UTF-8 text (io_utils.iter_lines: file:line errors);
  a remote corpus is decoded by the workers. Raises UserError naming --input_pattern when nothing matches."""
  try:
    paths = sorted(m.path for r in file_systems.match([pattern]) for m in r.metadata_list)
  except (OSError, ValueError) as e:
    raise errors.UserError(f"cannot list the files it names ({e})", f"--input_pattern={pattern}") from e
  if not paths:
    raise errors.UserError("no file matches this pattern", f"--input_pattern={pattern}")
  for path in paths:
    if isinstance(file_systems.get_filesystem(path), local_file_system):
      for _ in io_utils.iter_lines(path):
        pass
  return paths


def main(argv):
  file_systems, local_file_system, pipeline_options, local_runner, pipeline = _import_beam()
  for name in FLAGS.pooling:
    try:
      pooling_lib.check_name(name)
    except ValueError as e:
      raise app.UsageError(f"--{aliases.given_name(FLAGS, 'pooling')}: {e}") from e
  if FLAGS.inference_batch_sentences < FLAGS.encode_batch_sentences:
    raise app.UsageError(f"--inference_batch_sentences={FLAGS.inference_batch_sentences} must be at least "
                         f"--encode_batch_sentences={FLAGS.encode_batch_sentences}")
  check_inputs(FLAGS.input_pattern, file_systems, local_file_system)
  logging.getLogger("apache_beam").setLevel(logging.WARNING)  # per-bundle INFO lines from every worker
  beam_args = argv[1:]
  local = not any(a == "--runner" or a.startswith("--runner=") for a in beam_args)
  threads = FLAGS.intra_op_threads
  if local:
    # Worker processes start `python -m apache_beam...` in this directory: they import this package from here.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    options = local_runner.options(FLAGS.num_workers, beam_args)
    threads = threads or max(1, (os.cpu_count() or 1) // FLAGS.num_workers)
  else:
    options = pipeline_options(beam_args, num_workers=FLAGS.num_workers)
  try:
    summary = pipeline.embed_files(
        FLAGS.input_pattern, FLAGS.cache_dir, model_flags.model_kwargs(FLAGS), FLAGS.pooling,
        FLAGS.max_seq_length, FLAGS.encode_batch_sentences, FLAGS.shard_size, FLAGS.inference_batch_sentences,
        threads, options)
  except local_runner.Terminated:   # exits with status 143
    sys.stderr.write("error: stopped by SIGTERM; the worker processes were stopped. The shards written so far are "
                     "kept: run the same command again to embed the rest\n")
    raise
  print(json.dumps(summary, sort_keys=True))
  sys.stdout.flush()


def run():
  """The `bert-flow-beam` command: our flags parsed (every other --option is Beam's), one-line errors."""
  one_line_errors.run(main, help_groups=beam_flags.GROUPS, doc=__doc__, known_only=True)


if __name__ == "__main__":
  run()
