"""faiss-cpu's IndexBinaryFlat over sign codes, for bench/quantized.py (run by it in a venv with numpy + faiss-cpu).

Usage: python bench/quantized_faiss.py WORKDIR CANDIDATES LATENCY_REQUESTS
Reads WORKDIR/codes.npy (uint8 [M, D/8], sentence-transformers' ubinary) and WORKDIR/queries.npy (uint8 [n, D/8]);
writes WORKDIR/candidates.npy (int64 [n, CANDIDATES], Hamming-nearest first) and prints one JSON object: one-query
latency p50/p99 in ms and queries/s at batch 64 (the search alone: no query embedding).
"""
import json
import os
import sys
import time

import faiss
import numpy as np


def main():
  workdir, candidates, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
  codes, queries = np.load(os.path.join(workdir, "codes.npy")), np.load(os.path.join(workdir, "queries.npy"))
  index = faiss.IndexBinaryFlat(codes.shape[1] * 8)
  index.add(codes)
  for query in queries[:5]:
    index.search(query[None], candidates)
  faiss.omp_set_num_threads(1)  # one query on one thread: on a small shared CPU more threads only wait
  latency = []
  for query in queries[:requests]:
    start = time.perf_counter()
    index.search(query[None], candidates)
    latency.append(time.perf_counter() - start)
  faiss.omp_set_num_threads(os.cpu_count())
  batches = [queries[i:i + 64] for i in range(0, min(len(queries), 256), 64)]
  start = time.perf_counter()
  for batch in batches:
    index.search(batch, candidates)
  qps = sum(map(len, batches)) / (time.perf_counter() - start)
  _, ids = index.search(queries, candidates)
  np.save(os.path.join(workdir, "candidates.npy"), ids)
  print(json.dumps({"faiss": faiss.__version__, "p50_ms": float(np.percentile(latency, 50) * 1e3),
                    "p99_ms": float(np.percentile(latency, 99) * 1e3), "queries_per_s_batch64": qps}))


if __name__ == "__main__":
  main()
