"""Where one encoder step spends its time, by TensorFlow op type, from the TF profiler's trace.

It embeds the first `--sentences` unique STS-B sentences once (traces), then profiles `--steps` calls of the same
replica function the product runs (`SentenceEmbedder.replica_function`, quantities of `--pooling`) on one batch of
`--batch_size` sentences of `--length` tokens, and sums the duration of every op event by op type (MatMul,
BatchMatMulV2, Mul, Transpose, ...) over the profiler's compute threads. Prints one JSON object: the step's wall
time under the profiler (which slows it), each op type's share of the summed op time, and the top op names.

Usage (from the repository root): python bench/op_profile.py [--length 15] [--steps 10]
"""
import argparse
import collections
import glob
import json
import os
import pathlib
import re
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf
from tensorflow.tsl.profiler.protobuf import xplane_pb2

from bert_flow_tf import loaders
from bert_flow_tf.embedding.embedder import SentenceEmbedder
from bert_flow_tf.modeling import pooling as pooling_lib
from bench.encode import DATA_DIR
from bench.encode import stsb_sentences


def op_seconds(log_dir):
  """{op name: seconds} summed over the compute threads' op events of the newest trace under log_dir."""
  path = sorted(glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "*.xplane.pb")))[-1]
  space = xplane_pb2.XSpace()
  with open(path, "rb") as f:
    space.ParseFromString(f.read())
  seconds = collections.Counter()
  for plane in space.planes:
    names = {key: meta.name for key, meta in plane.event_metadata.items()}
    for line in plane.lines:
      if not line.name.startswith("tf_Compute"):
        continue
      for event in line.events:
        name = names.get(event.metadata_id, "")
        if ":" in name and "::" not in name:  # "scope/op_name:OpType"; not "ExecutorState::Process" and the like
          seconds[name] += event.duration_ps * 1e-12
  return seconds


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model", default="all-minilm-l6-v2")
  parser.add_argument("--data_dir", default=DATA_DIR)
  parser.add_argument("--pooling", default="last-avg")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--length", type=int, default=15, help="tokens per sentence, [CLS] and [SEP] included")
  parser.add_argument("--steps", type=int, default=10)
  args = parser.parse_args()
  embedder = SentenceEmbedder(loaders.load_model(model_dir=args.model), args.pooling)
  names = pooling_lib.quantities(embedder.pooling_spec)
  pieces = embedder.tokenizer.tokenize_list(stsb_sentences(args.data_dir))          # ragged int32 [n, (pieces)]
  lengths = pieces.row_lengths().numpy() + 2                                        # with [CLS] and [SEP]
  chosen = np.flatnonzero(lengths == args.length)[:args.batch_size]
  if len(chosen) < args.batch_size:
    raise SystemExit(f"fewer than {args.batch_size} STS-B sentences have {args.length} tokens")
  batch = embedder.tokenizer.pack(tf.gather(pieces, chosen), args.length)          # dict of int32 [B, length]
  batch.update(example_id=tf.constant(chosen, tf.int64), valid=tf.ones([args.batch_size], tf.bool))
  step = embedder.replica_function(names)
  for _ in range(3):
    step(batch)[0][names[0]].numpy()                                                    # trace, warm up
  with tempfile.TemporaryDirectory() as log_dir:
    tf.profiler.experimental.start(log_dir)
    start = time.perf_counter()
    for _ in range(args.steps):
      step(batch)[0][names[0]].numpy()
    wall = (time.perf_counter() - start) / args.steps
    tf.profiler.experimental.stop()
    seconds = op_seconds(log_dir)
  total = sum(seconds.values())
  by_type = collections.Counter()
  for name, s in seconds.items():
    by_type[name.rsplit(":", 1)[1]] += s
  top = collections.Counter()
  for name, s in seconds.items():
    top[re.sub(r"layer_\d+", "layer_N", name)] += s
  print(json.dumps({"batch": [args.batch_size, args.length], "steps": args.steps,
                    "step_wall_ms_profiled": round(wall * 1e3, 1),
                    "op_share_by_type": {k: round(v / total, 3) for k, v in by_type.most_common(12)},
                    "top_ops_share": {k: round(v / total, 3) for k, v in top.most_common(10)},
                    "loadavg_after": list(os.getloadavg())}))


if __name__ == "__main__":
  main()
