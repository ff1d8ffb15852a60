"""The binary search SavedModel's inverted-file index against its exact scan and faiss, at 100k and 1M vectors.

Vectors as bench/quantized.py's scale part: all-MiniLM-L6-v2 `last-avg`, whitening fitted on the 15,487 STS-B
sentences, its first --dim dimensions; the corpus is the 63,294 distinct evaluation-set sentences padded to each
of --sizes with draws from the Gaussian fitted to their whitened vectors (`quantized.padded`'s draws, made a block
at a time); --queries of them (`quantized.py`'s seed-0 draw) are the queries, each leaving itself out.
For each size:
  * recall@10 against exact fp32 cosine search at the same width, of: the exact binary scan with int8 rescoring of
    --candidates (`hamming_search.search_codes`), the inverted-file index (`ivf_index`, its default lists) at each
    nprobe of --nprobe_fractions x L with the same candidates, faiss IndexBinaryFlat and IndexBinaryIVF (same lists
    count, trained on the same codes) at the same nprobe over the same sign bits (the corpus's words, turned by its
    sign rotation: `quantized.search_bits`), their Hamming candidates rescored with the same int8 codes;
  * the index build (`ivf_index.build` from the codes alone) in seconds;
  * search only (no BERT): one-query p50/p99 ms and queries/s at batch 64 of the graph's index (`BinaryIndex`,
    `ivf_probe.IvfBinaryIndex`, in a tf.function) and of faiss (one thread for one query, all cores for a batch);
  * whole request (BERT + search) through the TF1 session loader, as TF Serving runs the export: p50/p99 ms, and
    queries/s at batch 64; the export's size on disk and its load time (exact export and index export).
The settings take turns request by request so that a change of load hits them alike; the load average is printed
before and after. Then the index on the 63,294 real sentences alone (no padding: their own lists).

--search_only keeps the recall and search-only parts with faiss IndexBinaryFlat alone as the reference (no faiss
IVF, no exports, no whole requests, no real-only table): a few minutes at 1M.

Usage: python bench/ivf_search.py [--sizes 100000,1000000] [--queries 200] [--search_only] [--json_out out.json]
Needs faiss-cpu in the same venv (bench only: `uv pip install faiss-cpu`).
"""
import argparse
import json
import os
import pathlib
import sys
import tempfile
import time

import faiss
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
# pylint: disable=wrong-import-position
import tensorflow as tf
import quantized
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import ivf_index
from bert_flow_tf.quantization import ivf_probe
from bert_flow_tf.sentence_encoder import SentenceEncoder
from bert_flow_tf.serving import graph_calibration
from bert_flow_tf.serving import session_loader
# pylint: enable=wrong-import-position

PAD_ROWS = 65536


def padded_cut(x, size, dim, seed=0):
  """`quantized.padded(x, size)[:, :dim]` drawn PAD_ROWS at a time (the same draws: the generator's normals are
  taken in the same order), so the full-width float64 padding is never held whole."""
  rng = np.random.default_rng(seed)
  mean, cov = x.mean(0), np.cov(x, rowvar=False)
  parts = [x[:, :dim]]
  for start in range(len(x), size, PAD_ROWS):
    draw = rng.multivariate_normal(mean, cov, size=min(PAD_ROWS, size - start), method="cholesky")
    parts.append(draw[:, :dim].astype(np.float32))
  return np.concatenate(parts)


def recall_of(ids, want, query_ids):
  return quantized.recall(quantized.drop_self(np.asarray(ids), query_ids, 10), want)


def rescored(q, cand, codes, ranges):
  """faiss's Hamming candidates int64 [n, C] (-1: none) rescored with the int8 codes: corpus ids [n, 11]."""
  out = []
  for row_q, row in zip(q, cand):
    row = row[row >= 0]
    order, _ = hamming_search.rescore_codes(row_q[None], codes[row][None], ranges, 11)
    out.append(row[order[0]])
  return out


def timed(settings, requests, batch):
  """settings: {name: (one(i), many(i0, i1))}, one-request and batch callables. p50/p99 ms of `requests` one-query
  calls and queries/s of 4 batches, the settings taking turns. Returns {name: {p50_ms, p99_ms, queries_per_s}}."""
  for one, _ in settings.values():
    for i in range(3):
      one(i)
  latency = {name: [] for name in settings}
  for i in range(requests):
    for name, (one, _) in settings.items():
      start = time.perf_counter()
      one(i)
      latency[name].append(time.perf_counter() - start)
  seconds = {name: 0. for name in settings}
  for b in range(4):
    for name, (_, many) in settings.items():
      start = time.perf_counter()
      many(b * batch, (b + 1) * batch)
      seconds[name] += time.perf_counter() - start
  return {name: {"p50_ms": float(np.percentile(latency[name], 50) * 1e3),
                 "p99_ms": float(np.percentile(latency[name], 99) * 1e3),
                 "queries_per_s_batch64": 4 * batch / seconds[name]} for name in settings}


def graph_settings(exact, ivf, q, args, probes):
  """Search-only tf.functions of the exact index and of the index at each nprobe."""
  k, c = tf.constant(11), tf.constant(args.candidates)
  scan = tf.function(lambda v: exact.search_vectors(v, k, c))
  probe = tf.function(lambda v, n: ivf.search_vectors(v, k, c, n))
  twice = tf.concat([q, q], 0)                          # a batch of 64 from any start
  out = {"exact scan": (lambda i: scan(q[i % len(q)][None]), lambda a, b: scan(twice[a % len(q):][:b - a]))}
  for n in probes:
    n_t = tf.constant(n)
    out[f"index nprobe {n}"] = (lambda i, n_t=n_t: probe(q[i % len(q)][None], n_t),
                                lambda a, b, n_t=n_t: probe(twice[a % len(q):][:b - a], n_t))
  return out


def faiss_settings(flat, ivf, qb, args, probes):
  def searcher(index, n=None):
    def one(i):
      if n is not None:
        ivf.nprobe = n
      faiss.omp_set_num_threads(1)   # one query on one thread: on a small shared CPU more threads only wait
      index.search(qb[i % len(qb)][None], args.candidates)

    def many(a, b):
      if n is not None:
        ivf.nprobe = n
      faiss.omp_set_num_threads(os.cpu_count())
      index.search(np.concatenate([qb, qb])[a % len(qb):][:b - a], args.candidates)
    return one, many
  return {"faiss IndexBinaryFlat": searcher(flat), **{f"faiss IndexBinaryIVF nprobe {n}": searcher(ivf, n)
                                                      for n in probes}}


def session_settings(sessions, queries, args, probes):
  def run(session, signature, extra):
    def one(i):
      session.run(signature, {"queries": [queries[i % len(queries)]], "k": 10, "candidates": args.candidates,
                              **extra})

    def many(a, b):
      session.run(signature, {"queries": (queries * 2)[a % len(queries):][:b - a], "k": 10,
                              "candidates": args.candidates, **extra})
    return one, many
  out = {"exact scan": run(sessions["exact"], "serving_default", {})}
  out.update({f"index nprobe {n}": run(sessions["index"], "search_probe", {"nprobe": n}) for n in probes})
  return out


def one_size(args, enc, affine, x_full, ranges, corpus, query_ids, size, workdir):
  big = padded_cut(x_full, size, args.dim)
  q = big[query_ids]
  want = np.concatenate([quantized.exact_top(q[i:i + 50], big, 10, query_ids[i:i + 50]) for i in range(0, len(q), 50)])
  codes = corpus_codes.CorpusCodes.of(big, ranges)
  lists = ivf_index.suggested_num_lists(size)
  start = time.perf_counter()
  index = ivf_index.build(codes, lists)
  row = {"size": size, "lists": lists, "build_s": time.perf_counter() - start}
  probes = sorted({max(1, int(round(f * lists))) for f in args.nprobe_fractions})
  recall = {"exact scan": recall_of(_ids(hamming_search.search_codes(q, codes, 11, args.candidates)), want,
                                    query_ids)}
  for n in probes:
    recall[f"index nprobe {n}"] = recall_of(_ids(ivf_index.search_index(q, index, 11, args.candidates, n)), want,
                                            query_ids)
  ub, qb = quantized.search_bits(codes, q)
  flat = faiss.IndexBinaryFlat(args.dim)
  flat.add(ub)
  recall["faiss IndexBinaryFlat"] = recall_of(rescored(q, flat.search(qb, args.candidates)[1], codes.codes, ranges),
                                              want, query_ids)
  exact_index, graph_index = binary_search_model.BinaryIndex(codes), ivf_probe.IvfBinaryIndex(index)
  qt = tf.constant(q)
  if args.search_only:
    row["recall@10"] = recall
    row["search_only"] = timed({**graph_settings(exact_index, graph_index, qt, args, probes),
                                **faiss_settings(flat, None, qb, args, [])}, args.latency_requests, 64)
    print(f"  {size}: {json.dumps(row)}", file=sys.stderr, flush=True)
    return row
  start = time.perf_counter()
  fivf = faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(args.dim), args.dim, lists)
  fivf.train(ub[np.random.default_rng(0).choice(size, min(size, 64 * lists), replace=False)])
  fivf.add(ub)
  row["faiss_ivf_build_s"] = time.perf_counter() - start
  for n in probes:
    fivf.nprobe = n
    recall[f"faiss IndexBinaryIVF nprobe {n}"] = recall_of(
        rescored(q, fivf.search(qb, args.candidates)[1], codes.codes, ranges), want, query_ids)
  row["recall@10"] = recall
  print(f"  {size}: build {row['build_s']:.1f} s, recall {json.dumps(recall)}", file=sys.stderr, flush=True)
  row["search_only"] = timed({**graph_settings(exact_index, graph_index, qt, args, probes),
                              **faiss_settings(flat, fivf, qb, args, probes)}, args.latency_requests, 64)
  del exact_index, graph_index, flat, fivf, index
  sentences = corpus + [f"synthetic vector {i}" for i in range(len(corpus), size)]
  sessions, row["export"] = {}, {}
  for name, num_lists in (("exact", 0), ("index", lists)):
    blocks = ((sentences[s:s + PAD_ROWS], big[s:s + PAD_ROWS]) for s in range(0, size, PAD_ROWS))
    start = time.perf_counter()
    path = binary_search_model.export_binary_search(enc.embedder, affine, blocks, size, ranges,
                                                    os.path.join(workdir, f"{name}-{size}"), num_lists=num_lists)
    export_s = time.perf_counter() - start
    start = time.perf_counter()
    sessions[name] = session_loader.SessionModel(path)
    row["export"][name] = {"export_s": export_s, "mb": quantized.dir_mb(path), "load_s": time.perf_counter() - start}
  row["whole_request"] = timed(session_settings(sessions, [corpus[i] for i in query_ids], args, probes),
                               args.latency_requests, 64)
  for session in sessions.values():
    session.close()
  print(f"  {size}: {json.dumps(row)}", file=sys.stderr, flush=True)
  return row


def _ids(hits):
  return [[h["corpus_id"] for h in row] for row in hits]


def real_only(args, x_full, ranges, query_ids):
  """The index on the real sentences alone: recall@10 at each nprobe and candidates, against exact fp32."""
  x = x_full[:, :args.dim]
  q = x[query_ids]
  want = quantized.exact_top(q, x, 10, query_ids)
  codes = corpus_codes.CorpusCodes.of(x, ranges)
  lists = ivf_index.suggested_num_lists(len(x))
  index = ivf_index.build(codes, lists)
  out = {"size": len(x), "lists": lists, "recall@10": {}}
  for c in (200, 1000, args.candidates):
    out["recall@10"][f"exact scan, {c} candidates"] = recall_of(_ids(hamming_search.search_codes(q, codes, 11, c)),
                                                                want, query_ids)
    for f in args.nprobe_fractions:
      n = max(1, int(round(f * lists)))
      out["recall@10"][f"index nprobe {n}, {c} candidates"] = recall_of(
          _ids(ivf_index.search_index(q, index, 11, c, n)), want, query_ids)
  return out


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--cache_dir", default=str(REPO / "exp" / "store"))
  parser.add_argument("--sizes", default="100000,1000000")
  parser.add_argument("--dim", type=int, default=128)
  parser.add_argument("--candidates", type=int, default=4000)
  parser.add_argument("--nprobe_fractions", default="0.0625,0.125,0.25,0.375,0.5")
  parser.add_argument("--queries", type=int, default=200)
  parser.add_argument("--latency_requests", type=int, default=100)
  parser.add_argument("--search_only", action="store_true")
  parser.add_argument("--json_out", default=None)
  args = parser.parse_args()
  args.nprobe_fractions = [float(f) for f in args.nprobe_fractions.split(",")]
  load_before = os.getloadavg()
  corpus = quantized.task_sentences(args.data_dir, quantized.CORPUS_TASKS)
  fit_sentences = quantized.task_sentences(args.data_dir, ("sts-b",))
  wanted = set(quantized.task_sentences(args.data_dir, quantized.QUERY_TASKS))
  pool = [i for i, s in enumerate(corpus) if s in wanted]
  query_ids = np.random.default_rng(0).choice(pool, size=300, replace=False)[:args.queries]
  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg", cache_dir=args.cache_dir)
  cal = calibrator.fit("whitening", enc.encode_raw(fit_sentences))
  x_full = cal.transform(enc.encode_raw(corpus))
  affine, ranges = graph_calibration.Affine(cal.method, *cal.affine()), cal.int8_ranges[:, :args.dim]
  out = {} if args.search_only else {"real_only": real_only(args, x_full, ranges, query_ids)}
  print(f"  real only: {json.dumps(out.get('real_only'))}", file=sys.stderr, flush=True)
  with tempfile.TemporaryDirectory() as workdir:
    out["sizes"] = [one_size(args, enc, affine, x_full, ranges, corpus, query_ids, int(size), workdir)
                    for size in args.sizes.split(",")]
  out["loadavg"] = [load_before, os.getloadavg()]
  out["versions"] = {"tensorflow": tf.__version__, "faiss": faiss.__version__}
  print(json.dumps(out, indent=1))
  if args.json_out:
    with open(args.json_out, "w", encoding="utf-8") as f:
      json.dump(out, f, indent=1)


if __name__ == "__main__":
  main()
