"""Serving speed: the exported text SavedModel against the in-process SentenceEmbedder; prints one JSON object.

Exports `--model` (default all-minilm-l6-v2) with `--pooling` and max_seq_length 64, plus a `config_l3_d3_w32`
Glow whose ActNorms are data-initialized on the timed sentences (`--no_flow` leaves it out), to a temporary
directory.
The sentences are the unique STS-B sentences (train + dev + test, first-seen order; `$BERT_FLOW_DATA` or
../shared/data). Three ways to embed them are timed, side by side, in this process:
  * `saved_model`: the text SavedModel's `serving_default`, loaded with tf.saved_model.load (TF2 call);
  * `session`: the same SavedModel through the TF1 session loader, fed by signature tensor names, the way the
    TF Serving model server runs it (bert_flow_tf.serving.session_loader);
  * `in_process`: `SentenceEmbedder.encode` (its tf.data pipeline and replica function) then the flow.
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

Usage (from the repository root, on a quiet machine):
  python bench/serve.py [--latency_requests 500] [--throughput_sentences 4096] [--pooling P] [--no_flow]
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
from bert_flow_tf.calibration import fit_flow
from bert_flow_tf import export
from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling import presets
from bert_flow_tf.serving import session_loader
from bench.encode import stsb_sentences
from glow.model import Glow
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
  args = parser.parse_args()
  load_before = os.getloadavg()

  sentences = stsb_sentences(args.data_dir)
  bulk = sentences[:args.throughput_sentences]
  single = sentences[-args.latency_requests:]  # other sentences than the bulk's, when there are enough
  embedder = SentenceEmbedder(loaders.load_model(args.model), args.pooling, max_seq_length=MAX_SEQ_LENGTH)
  flow = None
  if not args.no_flow:
    flow = Glow.from_config("config_l3_d3_w32", dim=embedder.dim, init="ddi", seed=0)
    flow.data_init(tf.constant(embedder.encode(bulk, show_progress=False)))
  workdir = tempfile.TemporaryDirectory()
  start = time.perf_counter()
  paths = export.export_models(embedder, flow, os.path.join(workdir.name, "export"))
  export_s = time.perf_counter() - start
  text_dir = paths["text"]

  def in_process(batch):
    x = embedder.encode(batch, batch_size=args.batch_size, show_progress=False)
    return x if flow is None else fit_flow.transform(flow, x)

  serve = export.load_text_model(text_dir).signatures["serving_default"]
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
  workdir.cleanup()

  throughput = {name: round(len(bulk) / seconds, 1) for name, seconds in best.items()}
  result = {
      "model": args.model, "pooling": args.pooling, "max_seq_length": MAX_SEQ_LENGTH, "flow": flow is not None,
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
      "tf_version": tf.__version__,
      "loadavg_before": [round(x, 2) for x in load_before],
      "loadavg_after": [round(x, 2) for x in os.getloadavg()],
  }
  print(json.dumps(result))


if __name__ == "__main__":
  main()
