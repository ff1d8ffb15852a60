"""Serves an export over HTTP: OpenAI's /v1/embeddings, /v1/search, /health, /metrics (the `bert-flow-serve`
command; docs/serving.md).

  bert-flow-serve --export_dir=EXPORT_DIR [--port=8000]
  python -m bert_flow_tf.server --export_dir=EXPORT_DIR

The export's SavedModels run in this process (bert_flow_tf.server); SIGTERM or Ctrl-C stops accepting and answers
the requests in flight, then exits with status 0; those still in flight after --shutdown_timeout_s are answered 503
and the exit status is 75 (server.shutdown).
"""
import os

# Keras 2 only: TensorFlow skips importing Keras 3.
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import signal  # pylint: disable=g-import-not-at-top
import time  # pylint: disable=g-import-not-at-top

from absl import app
from absl import flags
from absl import logging

from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.cli import serve_flags
from bert_flow_tf.utils import logs

serve_flags.define_flags()
FLAGS = flags.FLAGS


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  if not os.path.isdir(FLAGS.export_dir):
    raise app.UsageError(f"--export_dir={FLAGS.export_dir}: no such folder")
  with logs.tensorflow_startup(FLAGS.verbosity >= 1):  # the flags were read without TensorFlow: --help is quick
    # pylint: disable=g-import-not-at-top
    import uvicorn
    from bert_flow_tf.server import app as app_lib
    from bert_flow_tf.server import batcher
    from bert_flow_tf.server import limits
    from bert_flow_tf.server import metrics as metrics_lib
    from bert_flow_tf.server import served_export
    from bert_flow_tf.server import shutdown
    # pylint: enable=g-import-not-at-top
  logs.quiet_tensorflow()
  began = time.monotonic()
  served = served_export.ServedExport(FLAGS.export_dir, FLAGS.model_name)
  metrics = metrics_lib.Metrics()
  work = batcher.Batcher(served, metrics, FLAGS.max_batch_sentences, FLAGS.max_batch_tokens,
                         FLAGS.max_queue_sentences, FLAGS.batch_wait_ms / 1e3)
  request_limits = limits.Limits(FLAGS.max_inputs, FLAGS.max_chars, FLAGS.max_body_bytes)
  stop = shutdown.Shutdown(work, FLAGS.shutdown_timeout_s)
  application = app_lib.create_app(served, work, metrics, request_limits, stop)
  config = uvicorn.Config(application, host=FLAGS.host, port=FLAGS.port, log_level="warning", access_log=False,
                          timeout_graceful_shutdown=FLAGS.shutdown_timeout_s + shutdown.GRACE_S, lifespan="on")
  server = shutdown.Server(config, stop)
  logging.info("serving %r (D=%d, precisions %s, search %s) from %s on http://%s:%d, loaded in %.1f s",
               served.name, served.dim, ",".join(served.precisions), ",".join(served.search_precisions) or "none",
               FLAGS.export_dir, FLAGS.host, FLAGS.port, time.monotonic() - began)
  # uvicorn drains on SIGTERM / SIGINT, then raises the signal again to the handler it found: this one, so that the
  # exit status is the stop's (and a signal before uvicorn takes over still stops it).
  for stop_signal in (signal.SIGTERM, signal.SIGINT):
    signal.signal(stop_signal, lambda *_: setattr(server, "should_exit", True))
  server.run()
  return stop.report()


def run():
  """The `bert-flow-serve` command: parses the flags and runs `main`, with one-line errors."""
  one_line_errors.run(main, help_groups=serve_flags.GROUPS, doc=__doc__)


if __name__ == "__main__":
  run()
