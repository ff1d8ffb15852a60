"""The flags of `bert-flow-serve` (`python -m bert_flow_tf.server`), in the groups its --help shows.

  serve_flags.define_flags()     # at the module's top; then one_line_errors.run(main, help_groups=GROUPS)
"""
from absl import flags

from bert_flow_tf.server import limits

GROUPS = (
    ("Model", ("export_dir", "model_name")),
    ("Address", ("host", "port")),
    ("Batching", ("max_batch_sentences", "max_batch_tokens", "max_queue_sentences", "batch_wait_ms")),
    ("Limits", ("max_inputs", "max_chars", "max_body_bytes", "shutdown_timeout_s")),
)
_DEFAULTS = limits.Limits()


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of the server (GROUPS) in `flag_values`; marks the required ones."""
  fv = flag_values
  flags.DEFINE_string("export_dir", None, "Required. An export (SentenceEncoder.export, run_flow.py --export_dir): "
                      "its text model is served, and its search model when it has one. A SavedModel is a program: "
                      "serve only exports you trust.", flag_values=fv)
  flags.DEFINE_string("model_name", None, "The name clients send as `model` (GET /v1/models); default: the "
                      "export folder's name.", flag_values=fv)
  flags.DEFINE_string("host", "127.0.0.1", "Address to listen on (0.0.0.0: every interface, e.g. in a container).",
                      flag_values=fv)
  flags.DEFINE_integer("port", 8000, "TCP port to listen on.", lower_bound=0, upper_bound=65535, flag_values=fv)
  flags.DEFINE_integer("max_batch_sentences", 64, "Sentences per model call, across requests.", lower_bound=1,
                       flag_values=fv)
  flags.DEFINE_integer("max_batch_tokens", 16384, "Padded tokens per model call (sentences x the longest one's "
                       "tokens).", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("max_queue_sentences", 4096, "Sentences waiting for the model at most; a request that "
                       "does not fit is answered 429 with Retry-After.", lower_bound=1, flag_values=fv)
  flags.DEFINE_float("batch_wait_ms", 0., "Milliseconds to wait for more requests once one is taken (0: take "
                     "what is queued; under load the queue fills while a batch runs).", lower_bound=0.,
                     flag_values=fv)
  flags.DEFINE_integer("max_inputs", _DEFAULTS.max_inputs, "Strings per request.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("max_chars", _DEFAULTS.max_chars, "Characters per string.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("max_body_bytes", _DEFAULTS.max_body_bytes, "Bytes per request body (413 over it).",
                       lower_bound=1, flag_values=fv)
  flags.DEFINE_float("shutdown_timeout_s", 30., "On SIGTERM, seconds the requests in flight get to finish; "
                     "those still unanswered then get a 503 and the exit status is 75.", lower_bound=0.,
                     flag_values=fv)
  flags.mark_flags_as_required(["export_dir"], flag_values=fv)
