"""Serving speed: the exported text SavedModel against the in-process SentenceEmbedder; prints one JSON object.

Exports `--model` (default all-minilm-l6-v2) with `--pooling` and max_seq_length 64, plus a `config_l3_d3_w32`
Glow whose ActNorms are data-initialized on the timed sentences (`--no_flow` leaves it out), to a temporary
directory.
The sentences are the unique STS-B sentences (train + dev + test, first-seen order; `$BERT_FLOW_DATA` or
../shared/data). Three ways to embed them are timed, side by side, in this process:
  * `saved_model`: the text SavedModel's `serving_default`, loaded with tf.saved_model.load (TF2 call);
  * `session`: the same SavedModel through the TF1 session loader, fed by signature tensor names, the way the
    TF Serving model server runs it (bert_flow_tf.serving.session_loader);
  * `in_process`: what `SentenceEncoder.encode` runs on new sentences (a fresh in-memory `EmbeddingStore.vectors`
    over the SentenceEmbedder: its tf.data pipeline and replica function), then the flow.
It reports, for each:
  * single-sentence latency: p50 and p99 in ms over `--latency_requests` requests of one sentence each, the
    three ways interleaved request by request (so drift in the machine's load hits all alike), after
    `--warmup` untimed requests;
  * batch-64 throughput: the first `--throughput_sentences` sentences sent as requests of `--batch_size`
    sentences in input order, in sentences/s (best of `--repeats` passes, passes interleaved);
  * the largest |difference| of the embeddings against in_process;
and, for in_process, also one `encode` over all those sentences at once (its pipeline buckets them by length),
the product's bulk path. Ratios: each way's throughput over in_process's per-request throughput.
Also recorded: the 1/5/15-minute load average before and after (note it next to the numbers).

The search model (export_dir/search/1, `search_model.export_search_model`) is timed for each of `--search_corpus_sizes`
(default 10,000 and 100,000 vectors) through the TF1 session loader: single-query latency p50/p99 (k =
`--search_k`, queries from the latency sentences) and queries/s for requests of `--batch_size` queries. Its corpus
is RANDOM: standard-normal vectors of width D, what a flow's calibrated vectors follow by construction, with the
sentences "corpus sentence <i>"; the timing does not depend on their content (matmul [B, D] x [D, M], top-k).
Each query still runs the real tokenizer, BERT and flow.

Usage (from the repository root, on a quiet machine):
  python bench/serve.py [--latency_requests 500] [--throughput_sentences 4096] [--pooling P] [--no_flow]
      [--parts embed,search] [--search_corpus_sizes 10000,100000] [--search_k 10]
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# pylint: disable=wrong-import-position
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.embedding.store import EmbeddingStore
from bert_flow_tf.loaders import presets
from bert_flow_tf import exported_encoder
from bert_flow_tf.serving import export
from bert_flow_tf.serving import search_model
from bert_flow_tf.serving import session_loader
from bench.encode import stsb_sentences
import glow
# pylint: enable=wrong-import-position

MAX_SEQ_LENGTH = 64


def percentile_ms(seconds, q):
  return round(float(np.percentile(seconds, q)) * 1e3, 2)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", default=presets.DEFAULT)
  parser.add_argument("--pooling", default="first-last-avg")
  parser.add_argument("--no_flow", action="store_true", help="export and embed without a flow")
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--latency_requests", type=int, default=500)
  parser.add_argument("--throughput_sentences", type=int, default=4096)
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--warmup", type=int, default=20)
  parser.add_argument("--parts", default="embed,search", help="what to time: embed, search or both")
  parser.add_argument("--search_corpus_sizes", default="10000,100000")
  parser.add_argument("--search_k", type=int, default=10)
  args = parser.parse_args()
  parts = set(args.parts.split(","))
  load_before = os.getloadavg()

  sentences = stsb_sentences(args.data_dir)
  bulk = sentences[:args.throughput_sentences]
  single = sentences[-args.latency_requests:]  # other sentences than the bulk's, when there are enough
  embedder = SentenceEmbedder(loaders.load_model(args.model), args.pooling, max_seq_length=MAX_SEQ_LENGTH)
  flow = None
  if not args.no_flow:
    flow = glow.Glow.from_config("config_l3_d3_w32", dim=embedder.dim, init="ddi", seed=0)
    flow.data_init(tf.constant(EmbeddingStore(embedder).vectors(bulk, embedder.pooling_spec, show_progress=False)))
  workdir = tempfile.TemporaryDirectory()
  result = {"model": args.model, "pooling": args.pooling, "max_seq_length": MAX_SEQ_LENGTH, "flow": flow is not None}
  if "embed" in parts:
    result.update(time_embedding(args, embedder, flow, bulk, single, workdir.name))
  if "search" in parts:
    result["search"] = [time_search(args, embedder, flow, single, int(size), workdir.name)
                        for size in args.search_corpus_sizes.split(",")]
  workdir.cleanup()
  result.update({"tf_version": tf.__version__, "loadavg_before": [round(x, 2) for x in load_before],
                 "loadavg_after": [round(x, 2) for x in os.getloadavg()]})
  print(json.dumps(result))


def time_search(args, embedder, flow, queries, size, workdir):
  """The search SavedModel over a random corpus of `size` vectors (see the module notes), via the session loader."""
  rng = np.random.default_rng(0)
  corpus = rng.standard_normal([size, embedder.dim], dtype=np.float32)
  start = time.perf_counter()
  path = search_model.export_search_model(embedder, flow, corpus, [f"corpus sentence {i}" for i in range(size)],
                                    os.path.join(workdir, f"search{size}"))
  export_s = time.perf_counter() - start
  session = session_loader.SessionModel(path)
  search = lambda batch: session.run("serving_default", {"queries": batch, "k": args.search_k})
  for i in range(args.warmup):
    search([queries[i % len(queries)]])
  latency = []
  for query in queries:
    start = time.perf_counter()
    search([query])
    latency.append(time.perf_counter() - start)
  chunks = [queries[i:i + args.batch_size] for i in range(0, len(queries), args.batch_size)]
  best = float("inf")
  for _ in range(args.repeats):
    start = time.perf_counter()
    for chunk in chunks:
      search(chunk)
    best = min(best, time.perf_counter() - start)
  session.close()
  return {"corpus_vectors": size, "corpus": "random standard-normal vectors (not real sentences)",
          "k": args.search_k, "export_s": round(export_s, 1), "latency_requests": len(queries),
          "latency_ms": {"p50": percentile_ms(latency, 50), "p99": percentile_ms(latency, 99)},
          "batch_size": args.batch_size, "queries_per_s": round(len(queries) / best, 1)}


def time_embedding(args, embedder, flow, bulk, single, workdir):
  """The text SavedModel (tf.saved_model.load and session loader) against in-process encoding."""
  start = time.perf_counter()
  paths = export.export_models(embedder, flow, os.path.join(workdir, "export"))
  export_s = time.perf_counter() - start
  text_dir = paths["text"]

  def in_process(batch):
    # What SentenceEncoder.encode runs on new sentences.
    x = EmbeddingStore(embedder, batch_size=args.batch_size).vectors(batch, embedder.pooling_spec, show_progress=False)
    return x if flow is None else glow.transform(flow, x)

  serve = exported_encoder.load_text_model(text_dir).signatures["serving_default"]
  session = session_loader.SessionModel(text_dir)
  ways = {
      "saved_model": lambda batch: serve(sentences=tf.constant(batch))["embeddings"].numpy(),
      "session": lambda batch: session.run("serving_default", {"sentences": batch})["embeddings"],
      "in_process": in_process,
  }
  first_call_s = {}
  for name, embed in ways.items():
    start = time.perf_counter()
    embed(single[:1])
    first_call_s[name] = round(time.perf_counter() - start, 3)
  for i in range(args.warmup):
    for embed in ways.values():
      embed([single[i % len(single)]])

  latency = {name: [] for name in ways}
  for i, sentence in enumerate(single):
    names = list(ways)
    for name in names[i % 3:] + names[:i % 3]:  # rotate the order
      start = time.perf_counter()
      ways[name]([sentence])
      latency[name].append(time.perf_counter() - start)

  chunks = [bulk[i:i + args.batch_size] for i in range(0, len(bulk), args.batch_size)]
  best = {name: float("inf") for name in ways}
  outputs = {}
  for _ in range(args.repeats):
    for name, embed in ways.items():
      start = time.perf_counter()
      outputs[name] = np.concatenate([embed(chunk) for chunk in chunks])
      best[name] = min(best[name], time.perf_counter() - start)
  bulk_best = float("inf")
  for _ in range(args.repeats):
    start = time.perf_counter()
    in_process(bulk)
    bulk_best = min(bulk_best, time.perf_counter() - start)
  session.close()

  throughput = {name: round(len(bulk) / seconds, 1) for name, seconds in best.items()}
  return {
      "export_s": round(export_s, 1),
      "first_call_s": first_call_s,
      "latency_requests": len(single),
      "latency_ms": {name: {"p50": percentile_ms(s, 50), "p99": percentile_ms(s, 99)} for name, s in latency.items()},
      "throughput_sentences": len(bulk), "batch_size": args.batch_size,
      "sentences_per_s": throughput,
      "in_process_bulk_sentences_per_s": round(len(bulk) / bulk_best, 1),
      "throughput_ratio_vs_in_process": {name: round(throughput[name] / throughput["in_process"], 3)
                                         for name in ways},
      "max_abs_diff_vs_in_process": {name: float(np.abs(outputs[name] - outputs["in_process"]).max())
                                     for name in ways},
  }




if __name__ == "__main__":
  main()
