"""EmbedIntoStore: sentence files -> the embedding store, on any Beam runner.

  ReadFromText(pattern)            lines of every file the glob matches (Beam filesystems: local, gs://, ...)
  -> drop empty lines              (and whitespace-only ones)
  -> (key, sentence)               key = the store's sentence key (`store.sentence_keys`: 16 bytes of sha256)
  -> CoGroupByKey with the keys the store already holds for every quantity asked for
                                   one sentence per key (duplicates dropped); a key stored in every quantity is
                                   skipped
  -> RunInference(QuantitiesHandler)   batched; the model loaded once per worker process
  -> GroupByKey(shard)             shard = key mod ceil(to embed / shard_size): the same keys land in the same
                                   shard on every try, whatever the bundles
  -> write_shard                   sorted keys, one file per quantity, named by a hash of the keys, atomically
                                   (`store_files.write_shard` through Beam's filesystems: `filesystem.BEAM_FILES`)

A bundle that fails and is retried writes the same shard names with the same contents, so it leaves no partial
and no duplicate shard. The counters (namespace "bert_flow_tf") say what happened: lines_read, empty_lines,
duplicates, already_stored, embedded, shards_written.

Legend: k = sentences in a shard, H = hidden size.
"""
import logging
import math
import zipfile

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import RunInference

from bert_flow_tf.beam import filesystem
from bert_flow_tf.beam import local_runner
from bert_flow_tf.beam import model_handler
from bert_flow_tf.embedding import settings
from bert_flow_tf.embedding import store_files

NAMESPACE = "bert_flow_tf"
COUNTERS = ("lines_read", "empty_lines", "duplicates", "already_stored", "embedded", "shards_written")


def _counter(name):
  return Metrics.counter(NAMESPACE, name)


def _keep_nonempty(line):
  _counter("lines_read").inc()
  if line.strip():
    return True
  _counter("empty_lines").inc()
  return False


def _keyed(sentence):
  return bytes(store_files.sentence_keys([sentence])[0]), sentence


def _stored_keys(quantity_and_path):
  """(key, quantity) per key of a stored shard; none for an unreadable shard (its sentences are embedded again,
  and the store deletes it when it next opens the quantity)."""
  quantity, path = quantity_and_path
  try:
    keys = store_files.read_keys(path, filesystem.BEAM_FILES)
  except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
    logging.warning("store shard %s is unreadable (%s); its sentences count as missing", path, e)
    return []
  return [(bytes(key), quantity) for key in keys]


def _to_embed(key_and_groups, names):
  """One (key, sentence) per key not stored in every quantity of `names`."""
  key, groups = key_and_groups
  sentences = list(groups["sentence"])
  if not sentences:
    return
  _counter("duplicates").inc(len(sentences) - 1)
  if set(names) <= set(groups["stored"]):
    _counter("already_stored").inc()
    return
  yield key, min(sentences)


def shard_of(key, total, shard_size):
  """The shard index of a key: its first 8 bytes mod ceil(total / shard_size) (at least 1 shard)."""
  return int.from_bytes(key[:8], "big") % max(1, math.ceil(total / shard_size))


def _assign_shard(key_and_values, total, size):
  return shard_of(key_and_values[0], total, size), key_and_values


def _write(shard_and_rows, folder, names):
  _, rows = shard_and_rows
  rows = sorted(rows, key=lambda row: row[0])
  keys = np.array([key for key, _ in rows], dtype=f"S{store_files.KEY_BYTES}")
  for name in names:
    vectors = np.stack([quantities[name] for _, quantities in rows]).astype(np.float32)
    store_files.write_shard(folder, name, keys, vectors, filesystem.BEAM_FILES)
  _counter("embedded").inc(len(rows))
  _counter("shards_written").inc()
  return store_files.shard_name(keys), len(rows)


class EmbedIntoStore(beam.PTransform):
  """Lines (a PCollection of str) -> shards in the store folder; outputs (shard name, k) per shard written.

  Args:
    folder: str, the store folder <cache_dir>/<model key> (`store_files.model_folder`).
    handler: a QuantitiesHandler (its quantity names are the ones written).
    names: tuple of quantity names, those of `handler`.
    shard_size: int, sentences per shard (about; keys are spread over ceil(n / shard_size) shards by hash).
  """

  def __init__(self, folder, handler, names, shard_size=store_files.DEFAULT_SHARD_SIZE):
    super().__init__()
    if shard_size < 1:
      raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    self.folder, self.handler, self.names, self.shard_size = folder, handler, tuple(sorted(names)), shard_size

  def expand(self, lines):
    # The shards present now (listed once, at pipeline construction); their keys are read by the workers.
    existing = [(name, path) for name in self.names
                for path in store_files.shard_paths(self.folder, name, filesystem.BEAM_FILES)]
    stored = (lines.pipeline | "ListStoredShards" >> beam.Create(existing)
              | "ReadStoredKeys" >> beam.FlatMap(_stored_keys))
    keyed = (lines | "DropEmpty" >> beam.Filter(_keep_nonempty)
             | "Key" >> beam.Map(_keyed))
    todo = ({"sentence": keyed, "stored": stored} | "JoinStored" >> beam.CoGroupByKey()
            | "DistinctUnstored" >> beam.FlatMap(_to_embed, names=self.names))
    total = todo | "Count" >> beam.combiners.Count.Globally()
    return (todo | "Embed" >> RunInference(self.handler)
            | "AssignShard" >> beam.Map(_assign_shard, total=beam.pvalue.AsSingleton(total), size=self.shard_size)
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShards" >> beam.Map(_write, folder=self.folder, names=self.names))


def counters(result):
  """dict counter name -> int, from a finished PipelineResult (0 for a counter never incremented)."""
  out = dict.fromkeys(COUNTERS, 0)
  for counter in result.metrics().query(beam.metrics.MetricsFilter().with_namespace(NAMESPACE))["counters"]:
    out[counter.key.metric.name] = out.get(counter.key.metric.name, 0) + counter.committed
  return out


def embed_files(input_pattern, cache_dir, model_kwargs, poolings, max_seq_length=settings.MAX_SEQ_LENGTH,
                batch_size=settings.BATCH_SENTENCES, shard_size=store_files.DEFAULT_SHARD_SIZE,
                inference_batch_size=None, intra_op_threads=None, options=None):
  """Embeds the distinct sentences of the files `input_pattern` matches into the store under `cache_dir`.

  Loads the model here too (the store key hashes its files; the quantities depend on its depth), then runs the
  pipeline (`local_runner.run`: a lost worker process ends it with `local_runner.LostWorker`, a SIGTERM with
  `local_runner.Terminated`) and waits for it. Before and after the run it removes the temporary files that killed
  writers on this host left in the store (`BeamFiles.sweep_stale`).

  Args:
    input_pattern: str, a file or glob, any filesystem Beam knows (gs://bucket/corpus/*.txt); UTF-8 text.
    cache_dir: str, the embedding store's folder (run_flow.py --cache_dir).
    model_kwargs: dict, keyword arguments of `loaders.load_model` (`model_flags.model_kwargs`).
    poolings: list of pooling names (run_flow.py --pooling); their quantities are stored.
    max_seq_length: int, tokens per sentence including [CLS] and [SEP].
    batch_size: int, sentences per encoder batch (run_flow.py --encode_batch_sentences).
    shard_size: int, about this many sentences per shard.
    inference_batch_size: int or None, sentences per RunInference call (None: model_handler's default).
    intra_op_threads: int or None, TF intra-op threads per worker process.
    options: PipelineOptions, or None for `local_runner.options(1)`.

  Returns:
    dict: the store `folder`, the quantity `names` and the pipeline's counters (`COUNTERS`).
  """
  from bert_flow_tf import loaders  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.embedding.embedder import QuantityEncoder  # pylint: disable=g-import-not-at-top
  from bert_flow_tf.modeling import pooling as pooling_lib  # pylint: disable=g-import-not-at-top
  if not poolings:
    raise ValueError("poolings: no pooling named (e.g. ['last-avg'])")
  model = loaders.load_model(**model_kwargs)
  embedder = QuantityEncoder(model, max_seq_length=max_seq_length)
  names = tuple(sorted({q for p in poolings for q in pooling_lib.quantities(
      pooling_lib.resolve(p, model.num_layers))}))
  folder = store_files.model_folder(cache_dir, store_files.describe_model(embedder), filesystem.BEAM_FILES)
  handler = model_handler.QuantitiesHandler(
      model_kwargs, names, max_seq_length, batch_size,
      inference_batch_size or max(batch_size, model_handler.DEFAULT_INFERENCE_BATCH), intra_op_threads)
  p = beam.Pipeline(options=options or local_runner.options(1))
  _ = (p | "Read" >> beam.io.ReadFromText(input_pattern)
       | "EmbedIntoStore" >> EmbedIntoStore(folder, handler, names, shard_size))
  _sweep_stale(folder, names)   # what killed runs on this host left
  try:
    result = local_runner.run(p)
  finally:   # what this run's killed workers left (a lost worker, a stop)
    _sweep_stale(folder, names)
  return {"folder": folder, "names": list(names), **counters(result)}


def _sweep_stale(folder, names):
  for name in names:
    filesystem.BEAM_FILES.sweep_stale(filesystem.BEAM_FILES.join(folder, name))
