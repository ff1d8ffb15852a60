"""The binary search's scan of one query over M corpus vectors, two ways of taking its candidates, interleaved.

For each number of 64-bit words W (--words) and of candidates C (--candidates), one tf.function per way over the
same random corpus words int64 [W, M] (M = --corpus): xor + popcount per word, summed as the SavedModel sums them
(`quantization.binary_search_model`), then
  top_k     tf.math.top_k(-distance, C) over all M (the search model before the histogram select)
  count     `binary_search_model.nearest_by_count` (a histogram threshold, then a top_k over those under it)
The two are checked to give the same indices; then each runs --rounds times, the ways taking turns, and the median
and minimum milliseconds of each are printed (with the load average: on a shared machine compare the ways only
within one run).

Usage: python bench/hamming_scan.py [--corpus 1000000] [--words 2,6] [--candidates 1000,4000] [--rounds 15]
"""
import argparse
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
import tensorflow as tf
from bert_flow_tf.quantization import binary_search_model
# pylint: enable=wrong-import-position


def scan(words, c, way):
  """tf.function: query words int64 [W] -> int32 [c] candidate indices."""
  num_words = words.shape[0]

  @tf.function(input_signature=[tf.TensorSpec([num_words], tf.int64)])
  def run(query):
    counts = [tf.raw_ops.PopulationCount(x=tf.bitwise.bitwise_xor(words[w], query[w])) for w in range(num_words)]
    distance = tf.add_n([tf.cast(tf.add_n(counts[g:g + 3]), tf.int32) for g in range(0, num_words, 3)])
    if way == "top_k":
      return tf.math.top_k(-distance, k=c).indices
    return binary_search_model.nearest_by_count(distance, c, num_words * 64)
  return run


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--corpus", type=int, default=1_000_000)
  parser.add_argument("--words", default="2,6")
  parser.add_argument("--candidates", default="1000,4000")
  parser.add_argument("--rounds", type=int, default=15)
  args = parser.parse_args()
  rng = np.random.default_rng(0)
  all_words = rng.integers(-2**63, 2**63 - 1, size=[max(map(int, args.words.split(","))), args.corpus],
                           dtype=np.int64)
  query = rng.integers(-2**63, 2**63 - 1, size=[all_words.shape[0]], dtype=np.int64)
  runs = {}
  for w in map(int, args.words.split(",")):
    words = tf.constant(all_words[:w])
    for c in map(int, args.candidates.split(",")):
      runs[(w, c, "top_k")], runs[(w, c, "count")] = scan(words, c, "top_k"), scan(words, c, "count")
      q = tf.constant(query[:w])
      np.testing.assert_array_equal(runs[(w, c, "top_k")](q).numpy(), runs[(w, c, "count")](q).numpy())
  times = {key: [] for key in runs}
  load_before = os.getloadavg()
  for _ in range(args.rounds):
    for (w, c, way), run in runs.items():
      q = tf.constant(query[:w])
      start = time.perf_counter()
      run(q).numpy()
      times[(w, c, way)].append((time.perf_counter() - start) * 1e3)
  print(f"| words | candidates | way | median ms | min ms |  (M = {args.corpus:,})\n|---|---|---|---|---|")
  for (w, c, way), t in times.items():
    print(f"| {w} | {c} | {way} | {np.median(t):.2f} | {np.min(t):.2f} |")
  print(f"load average before {load_before}, after {os.getloadavg()}; TF {tf.__version__}")


if __name__ == "__main__":
  main()
