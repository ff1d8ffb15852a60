"""The flags of the `bert-flow-beam` command (`python -m bert_flow_tf.beam`), in the groups its --help shows
(names: docs/flags.md).

  beam_flags.define_flags()     # at the top of cli/beam.py; Beam's own options pass through (known_only)

The model, pooling, max_seq_length, cache folder and batch flags are run_flow.py's, under the same names and
aliases, so that one set of values fills the store here and finds it there.
"""
from absl import flags

from bert_flow_tf.cli import aliases
from bert_flow_tf.cli import model_flags
from bert_flow_tf.embedding import store_files

# alias -> canonical flag (run_flow.py's)
ALIASES = {"sentence_embedding_type": "pooling", "predict_batch_size": "encode_batch_sentences",
           "cached_dir": "cache_dir"}

GROUPS = (
    ("Input and output", ("input_pattern", "cache_dir")),
    ("Model and pooling", model_flags.FLAG_NAMES + ("max_seq_length", "pooling")),
    ("Workers and batches", ("num_workers", "intra_op_threads", "encode_batch_sentences",
                             "inference_batch_sentences", "shard_size")),
)


def define_flags(flag_values=flags.FLAGS):
  """Defines every flag of the Beam pipeline (GROUPS) and its ALIASES in `flag_values`; marks the required ones."""
  fv = flag_values
  model_flags.define_model_flags(fv)
  model_flags.define_max_seq_length(fv)
  flags.DEFINE_string("input_pattern", None, "Required. Sentence files, one sentence per line: a path or glob, local "
                      "or any filesystem Beam reads (gs://bucket/corpus/*.txt).", flag_values=fv)
  flags.DEFINE_string("cache_dir", None, "Required. The embedding store's folder, as run_flow.py --cache_dir.",
                      flag_values=fv)
  flags.DEFINE_list("pooling", [model_flags.DEFAULT_POOLING], "Poolings whose quantities are stored (run_flow.py's "
                    "names: last-avg, first-last-avg, emb-avg, cls, avg, avg-last-2, ...).", flag_values=fv)
  flags.DEFINE_integer("encode_batch_sentences", model_flags.DEFAULT_ENCODE_BATCH_SENTENCES,
                       "Sentences per encoder batch.", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("inference_batch_sentences", 2048, "Sentences per RunInference call (one length-bucketed "
                       "tf.data pipeline each; at least --encode_batch_sentences).", lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("shard_size", store_files.DEFAULT_SHARD_SIZE, "About this many sentences per store shard.",
                       lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("num_workers", 1, "Worker processes here (FnApi runner), or the runner's worker count.",
                       lower_bound=1, flag_values=fv)
  flags.DEFINE_integer("intra_op_threads", None, "TensorFlow intra-op threads per worker process; default here: "
                       "cores / --num_workers, elsewhere TensorFlow's default.", lower_bound=1, flag_values=fv)
  aliases.define_aliases(ALIASES, fv)
  flags.mark_flags_as_required(["input_pattern", "cache_dir"], flag_values=fv)
