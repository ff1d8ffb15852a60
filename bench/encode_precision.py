"""Compute precision as a lever for encoding (issue 31): the same encode under Keras dtype policies, one process.

For each policy in `--policies` (default "float32,mixed_bfloat16", alternating for `--rounds` rounds) it loads
all-minilm-l6-v2 under that policy (mixed_bfloat16: float32 weights, every layer computing in bfloat16; LayerNorm
in float32, as Keras does), encodes the first 512 unique STS-B sentences once (traces), then times
`QuantityEncoder.encode_quantities` on every unique STS-B sentence (`mean-6`, i.e. last-avg; wall and CPU s). The
token mean runs in float32 under every policy (the bench casts the last block's output before it; the product's
`masked_mean` keeps its input's dtype). It prints one JSON object: per policy the loop's seconds (median of
rounds), STS-B test Spearman x100 of the cosine, and the largest difference of the normalized vectors from the
first policy's; and whether the CPU advertises bfloat16 instructions (avx512_bf16 / amx_bf16 in /proc/cpuinfo),
without which oneDNN has no fast bfloat16 matmul. The start-up (imports, load) is the same under every policy and is
not timed.

Usage (from the repository root): python bench/encode_precision.py [--policies float32,mixed_bfloat16]
    [--rounds 1]
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf
import tf_keras as keras
from scipy import stats

from bert_flow_tf.data import sts
from bert_flow_tf.embedding.embedder import QuantityEncoder
from bert_flow_tf.loaders import load_model
from bert_flow_tf.modeling import pooling_ops
from bench.encode import DATA_DIR
from bench.encode import stsb_sentences


def cpu_seconds():
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def bf16_flags():
  """The bfloat16 instruction flags this CPU advertises."""
  with open("/proc/cpuinfo") as f:
    flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
  return sorted(set(flags) & {"avx512_bf16", "amx_bf16"})


def encode(policy, sentences):
  """float32 [n, H] last-avg vectors, loop seconds, loop CPU seconds under the Keras dtype `policy`."""
  keras.mixed_precision.set_global_policy(policy)
  try:
    encoder = QuantityEncoder(load_model("all-minilm-l6-v2"))
    encoder.encode_quantities(sentences[:512], ["mean-6"])
    wall, cpu = time.perf_counter(), cpu_seconds()
    vectors = encoder.encode_quantities(sentences, ["mean-6"])["mean-6"]
    return vectors, time.perf_counter() - wall, cpu_seconds() - cpu
  finally:
    keras.mixed_precision.set_global_policy("float32")


def spearman(vectors, index, pairs):
  a = vectors[[index[s] for s in pairs.sentences_a]]
  b = vectors[[index[s] for s in pairs.sentences_b]]
  cosine = np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
  return round(100 * stats.spearmanr(cosine, pairs.labels).correlation, 2)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--policies", default="float32,mixed_bfloat16")
  parser.add_argument("--rounds", type=int, default=1)
  args = parser.parse_args()
  mean = pooling_ops.masked_mean
  pooling_ops.masked_mean = lambda hidden, mask: mean(tf.cast(hidden, tf.float32), mask)
  sentences = stsb_sentences(DATA_DIR)
  index = {s: i for i, s in enumerate(sentences)}
  test = sts.load_stsb(DATA_DIR)[2]
  policies = args.policies.split(",")
  runs = {p: [] for p in policies}
  vectors = {}
  for _ in range(args.rounds):
    for policy in policies:
      vectors[policy], wall, cpu = encode(policy, sentences)
      runs[policy].append((round(wall, 2), round(cpu, 2)))
  unit = {p: v / np.linalg.norm(v, axis=1, keepdims=True) for p, v in vectors.items()}
  result = {"sentences": len(sentences), "cpu_bf16_flags": bf16_flags(), "policies": {}}
  for policy in policies:
    result["policies"][policy] = {
        "loop_s": round(statistics.median(w for w, _ in runs[policy]), 2),
        "loop_cpu_s": round(statistics.median(c for _, c in runs[policy]), 2),
        "runs": runs[policy],
        "stsb_test_x100": spearman(vectors[policy], index, test),
        "max_diff_vs_" + policies[0]: float(np.abs(unit[policy] - unit[policies[0]]).max()),
    }
  result["loadavg_after"] = os.getloadavg()
  print(json.dumps(result))


if __name__ == "__main__":
  main()
