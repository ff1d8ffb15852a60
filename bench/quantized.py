"""Quantized and truncated embeddings of all-MiniLM-L6-v2: quality, recall and the binary search SavedModel at 1M.

Prints one markdown table (and writes the numbers as JSON with --json_out). Vectors:
  * the corpus: every distinct sentence of the evaluation sets (STS-B, SICK-R, STS12-16, SNLI dev+test, QNLI dev;
    63,294 sentences), embedded once into the store under --cache_dir (`last-avg` and `emb-avg` of one BERT pass);
  * spaces: raw; whitening and flow (config_l3_d3_w32, the paper's target schedule) fitted on the 15,487 distinct
    STS-B sentences (train + dev + test, no labels: the paper's target setting). The int8 ranges are fitted on the
    same sentences after the calibration (`calibration.int8_ranges`, mean +- 3.9 std, one width for the flow's axes:
    `quantization.int8_ranges`; raw: the same per-dimension rule on the raw vectors); "int8 (ST ranges)" uses
    sentence-transformers' rule instead: each dimension's min and max over those sentences (`quantize_embeddings(...,
    calibration_embeddings=)`). Nothing is fitted on STS-B test labels.
  * widths: full, and the first k = 128 and 64 dimensions after the calibration, what truncate_dim keeps (whitening:
    its top-k principal directions, = whitening-k; the flow: z's top-k principal axes over the fit set,
    `quantization.truncation`).

Quality: STS-B test Spearman x100 of the cosine of the codes as integers (int8), of 1 - 2 hamming / D (binary).
Recall@10: --queries sentences drawn (seed 0) from the STS-B, SICK and SNLI sentences, searched in the 63,294-sentence
corpus (itself left out), against exact fp32 cosine search of the same vectors at the same width.
Scale (last-avg, whitening, the first k of --scale_dims dimensions): the corpus padded to --sizes vectors with draws
from the Gaussian fitted to the corpus's calibrated vectors (at full width, then cut to k); recall@10 of binary +
int8 rescoring (each of --scale_candidates) against exact fp32 search at width k over the padded corpus, for
--scale_queries queries; the
binary search SavedModel (real BERT + whitening, `quantization.binary_search_model`) exported, its size on disk (and the
corpus's own: words, codes and sentences) and load time, one-query latency p50/p99 and queries/s at batch 64
through the TF1 session loader (as TF Serving runs it); beside it the exact fp32 search model (`search/1`) at the
smallest size and full width, and faiss-cpu's IndexBinaryFlat over the same codes (in a separate venv:
--faiss_python, numpy + faiss-cpu; skipped without one).
sentence-transformers' `quantize_embeddings` needs torch, not installed here: its layouts are those of
`bert_flow_tf.quantization` (which mirrors it, tests/quantization_test.py), so its rows are computed with that.

Usage (from the repository root; minutes on a quiet 2-core CPU, the first run embeds the corpus):
  python bench/quantized.py [--quick] [--cache_dir exp/store] [--sizes 100000,1000000] [--json_out out.json]
--quick: 300 queries, widths full and 128, scale at 100,000 and k = 128 only, 100 queries there, 30 latency
requests. --parts quality or scale runs one half (scale fits the calibrations it needs first).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# pylint: disable=wrong-import-position
import tensorflow as tf
from bert_flow_tf import search
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.data import tasks
from bert_flow_tf.evaluation import metrics
from bert_flow_tf.quantization import binary_search_model
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.sentence_encoder import SentenceEncoder
from bert_flow_tf.serving import graph_calibration
from bert_flow_tf.serving import search_model
from bert_flow_tf.serving import session_loader
# pylint: enable=wrong-import-position

CORPUS_TASKS = ("sts-b", "sick-r", "sts-12", "sts-13", "sts-14", "sts-15", "sts-16", "snli", "qnli")
QUERY_TASKS = ("sts-b", "sick-r", "snli")
POOLINGS = ("last-avg", "emb-avg")
FAISS_SCRIPT = REPO / "bench" / "quantized_faiss.py"


def task_sentences(data_dir, names):
  """Distinct sentences of the tasks' splits, first-seen order."""
  seen = {}
  for name in names:
    task = tasks.load_task(name, data_dir)
    for split in (task.train, task.dev, task.test):
      for pairs in split:
        for sentence in list(pairs.sentences_a) + list(pairs.sentences_b):
          seen.setdefault(sentence, None)
  return list(seen)


def pair_score(a, b, precision):
  """Cosine of rows a[i], b[i] of `encode`'s output: float vectors or integer codes, or for packed sign bits
  (binary, ubinary) 1 - 2 hamming / D', the cosine of the +-1 sign vectors."""
  if precision in ("binary", "ubinary"):
    return 1 - 2 * (np.unpackbits(a.view(np.uint8), axis=1) != np.unpackbits(b.view(np.uint8), axis=1)).mean(axis=1)
  return int_cosine(a, b)


def stsb_through_encode(enc, fit_sentences, stsb_test, width):
  """STS-B test Spearman x100 of what the public `enc.encode(..., precision=, truncate_dim=width)` returns:
  {"float32", "int8", "int8 (ST ranges)", "binary"}. int8: the calibration's saved ranges (`sentence_codes`); for an
  encoder without one, the gaussian rule fitted on encode's vectors of the fit sentences, passed as `ranges=`.
  ST ranges: sentence-transformers' `calibration_embeddings=`, encode's vectors of the fit sentences."""
  a, b, gold = list(stsb_test.sentences_a), list(stsb_test.sentences_b), stsb_test.labels
  fit = enc.encode(fit_sentences, truncate_dim=width)
  own = {} if enc.int8_ranges is not None else {"ranges": int8_ranges.fit_ranges(fit)}
  score = lambda precision, **kw: metrics.spearman_x100(pair_score(
      enc.encode(a, precision=precision, truncate_dim=width, **kw),
      enc.encode(b, precision=precision, truncate_dim=width, **kw), precision), gold)
  return {"float32": score("float32"), "int8": score("int8", **own),
          "int8 (ST ranges)": score("int8", calibration_embeddings=fit), "binary": score("binary")}


def int_cosine(codes_a, codes_b):
  return search.cosine(codes_a.astype(np.float64), codes_b.astype(np.float64))


def sign_score(a, b):
  """1 - 2 hamming / D of the sign bits of float rows a, b [n, D]."""
  return 1 - 2 * ((a > 0) != (b > 0)).mean(axis=1)


def exact_top(q, x, k, self_ids):
  """Indices [n, k] of exact cosine top-k of q in x, each query's own row left out."""
  scores = search.normalize(q) @ search.normalize(x).T
  scores[np.arange(len(q)), self_ids] = -np.inf
  return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def recall(got, want):
  return float(np.mean([len(set(g) & set(w)) / len(w) for g, w in zip(got, want)]))


def search_bits(corpus, q):
  """The sign bits the binary search compares (a finished `corpus_codes.CorpusCodes`'s words and the float queries
  [n, D'] centred and turned as they are), as sentence-transformers' ubinary bytes for faiss: (uint8 [M, D'/8],
  uint8 [n, D'/8]); D' a multiple of 8."""
  as_bytes = lambda words: words.astype(">i8").view(np.uint8).reshape(len(words), -1)[:, :corpus.dim // 8]
  return as_bytes(corpus.words), as_bytes(corpus_codes.sign_words(q, corpus.centre, corpus.rotation))


def drop_self(ids, self_ids, k):
  return np.array([[i for i in row if i != s][:k] for row, s in zip(ids, self_ids)])


def space_rows(args, name, x_fit, x_all, stsb, query_ids, widths, own_ranges, through_encode=None):
  """Rows for one pooling and space: {width: {precision: (spearman, recall)}}; x_* calibrated float32; own_ranges
  float32 [2, D'], the int8 ranges (a calibration's own; raw: `int8_ranges.fit_ranges` of x_fit).
  through_encode: None, or width label -> `stsb_through_encode`'s scores, which replace the STS-B numbers (the
  widths a user's `encode` gives); the recalls are always those of the vectors x_*."""
  a_ids, b_ids, gold = stsb
  naive = np.stack([x_fit.min(0), x_fit.max(0)])  # sentence-transformers' ranges from calibration embeddings
  rows = {}
  for label, cut in widths:
    x, r_ours, r_naive = x_all[:, cut], own_ranges[:, cut], naive[:, cut]
    q = x[query_ids]
    want = exact_top(q, x, 10, query_ids)
    out = {"float32": (metrics.spearman_x100(search.cosine(x[a_ids], x[b_ids]), gold), 1.0)}
    for tag, ranges in (("int8", r_ours), ("int8 (ST ranges)", r_naive)):
      codes = st_layouts.quantize_embeddings(x, "int8", ranges=ranges)
      got = exact_top(codes[query_ids].astype(np.float32), codes.astype(np.float32), 10, query_ids)
      out[tag] = (metrics.spearman_x100(int_cosine(codes[a_ids], codes[b_ids]), gold), recall(got, want))
    corpus = corpus_codes.CorpusCodes.of(x, r_ours)
    query_words = corpus_codes.sign_words(q, corpus.centre, corpus.rotation)
    binary = hamming_search.nearest(hamming_search.hamming(query_words, corpus.words), 11)
    out["binary"] = (metrics.spearman_x100(sign_score(x[a_ids], x[b_ids]), gold),
                     recall(drop_self(binary, query_ids, 10), want))
    hits = hamming_search.search_codes(q, corpus, top_k=11, candidates=args.candidates)
    out[f"binary + int8 rescoring ({args.candidates})"] = (
        None, recall(drop_self(np.array([[h["corpus_id"] for h in row] for row in hits]), query_ids, 10), want))
    for column, value in (through_encode or {}).get(label, {}).items():
      out[column] = (value, out[column][1])
    rows[label] = out
    print(f"  {name} {label}: " + ", ".join(f"{p} {v[0] if v[0] is None else round(v[0], 2)}/{v[1]:.3f}"
                                             for p, v in out.items()), file=sys.stderr, flush=True)
  return rows


def quality(args, corpus, fit_sentences, stsb_test, query_ids):
  index = {s: i for i, s in enumerate(corpus)}
  stsb = ([index[s] for s in stsb_test.sentences_a], [index[s] for s in stsb_test.sentences_b], stsb_test.labels)
  results, calibrations = {}, {}
  for pooling in POOLINGS:
    enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling=pooling, cache_dir=args.cache_dir)
    raw_all, raw_fit = enc.encode_raw(corpus), enc.encode_raw(fit_sentences)
    spaces = {"raw": (raw_fit, raw_all)}
    for method in ("whitening", "flow"):
      start = time.perf_counter()
      cal = calibrator.fit(method, raw_fit)
      print(f"{pooling} {method} fitted in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
      calibrations[(pooling, method)] = cal
      spaces[method] = (cal.transform(raw_fit), cal.transform(raw_all))
    for space, (x_fit, x_all) in spaces.items():
      dim = x_all.shape[1]
      widths = [("full", slice(None))] + [(f"k={k}", slice(0, k)) for k in args.widths if k != dim]  # the top k
      user = SentenceEncoder(enc.embedder, calibration=calibrations.get((pooling, space)), cache_dir=args.cache_dir)
      through_encode = {label: stsb_through_encode(user, fit_sentences, stsb_test,
                                                   None if label == "full" else int(label[2:]))
                        for label, _ in widths}
      cal = calibrations.get((pooling, space))
      own_ranges = int8_ranges.fit_ranges(x_fit) if cal is None else cal.int8_ranges
      results[(pooling, space)] = space_rows(args, f"{pooling} {space}", x_fit, x_all, stsb, query_ids, widths,
                                             own_ranges, through_encode)
  return results, calibrations


def padded(x, size, seed=0):
  """x [m, D] followed by size - m draws from N(mean(x), cov(x)), float32 [size, D]."""
  rng = np.random.default_rng(seed)
  extra = rng.multivariate_normal(x.mean(0), np.cov(x, rowvar=False), size=size - len(x), method="cholesky")
  return np.concatenate([x, extra.astype(np.float32)])


def time_session(session, queries, k, candidates, batch, latency_requests):
  """Latency p50/p99 (ms) and batch throughput of each of `candidates` (a list; [None]: a model without that input),
  the settings taking turns request by request (and chunk by chunk), so that a load change hits them alike.
  Returns {candidates: {"p50_ms", "p99_ms", "queries_per_s_batch64"}}."""
  inputs = lambda qs, c: {"queries": qs, "k": k, **({} if c is None else {"candidates": c})}
  for query in queries[:5]:
    for c in candidates:
      session.run("serving_default", inputs([query], c))
  latency, seconds = {c: [] for c in candidates}, {c: 0. for c in candidates}
  for query in queries[:latency_requests]:
    for c in candidates:
      start = time.perf_counter()
      session.run("serving_default", inputs([query], c))
      latency[c].append(time.perf_counter() - start)
  chunks = [queries[i:i + batch] for i in range(0, min(len(queries), 4 * batch), batch)]
  for chunk in chunks:
    for c in candidates:
      start = time.perf_counter()
      session.run("serving_default", inputs(chunk, c))
      seconds[c] += time.perf_counter() - start
  return {c: {"p50_ms": float(np.percentile(latency[c], 50) * 1e3),
              "p99_ms": float(np.percentile(latency[c], 99) * 1e3),
              "queries_per_s_batch64": sum(map(len, chunks)) / seconds[c]} for c in candidates}


def dir_mb(path):
  return sum(f.stat().st_size for f in pathlib.Path(path).rglob("*") if f.is_file()) / 1e6


def scale(args, corpus, calibrations, query_ids, workdir):
  """Recall, size, load time and latency of the binary search at each size and widths (last-avg, whitening)."""
  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg", cache_dir=args.cache_dir)
  cal = calibrations[("last-avg", "whitening")]
  x_full = cal.transform(enc.encode_raw(corpus))
  affine = graph_calibration.Affine(cal.method, *cal.affine())
  query_ids = query_ids[:args.scale_queries]
  queries = [corpus[i] for i in query_ids]
  out = []
  for size in args.sizes:
    padded_full = padded(x_full, size)
    sentences = corpus + [f"synthetic vector {i}" for i in range(len(corpus), size)]
    for dim in args.scale_dims:
      big, ranges = padded_full[:, :dim], cal.int8_ranges[:, :dim]
      q = big[query_ids]
      want = np.concatenate([exact_top(q[i:i + 50], big, 10, query_ids[i:i + 50]) for i in range(0, len(q), 50)])
      blocks = ((sentences[s:s + 65536], big[s:s + 65536]) for s in range(0, size, 65536))
      start = time.perf_counter()
      path = binary_search_model.export_binary_search(enc.embedder, affine, blocks, size, ranges,
                                                      os.path.join(workdir, f"bin{dim}-{size}"), num_lists=0)  # exact
      row = {"dim": dim, "size": size, "export_s": time.perf_counter() - start, "export_mb": dir_mb(path),
             "corpus_mb": (size * (8 * corpus_codes.num_words(dim) + dim)
                           + sum(len(t.encode("utf-8")) for t in sentences)) / 1e6}
      start = time.perf_counter()
      session = session_loader.SessionModel(path)
      row["load_s"] = time.perf_counter() - start
      codes = corpus_codes.CorpusCodes.of(big, ranges)
      index = binary_search_model.BinaryIndex(codes)
      row["candidates"] = time_session(session, queries, 10, args.scale_candidates, 64, args.latency_requests)
      for c in args.scale_candidates:
        got = np.concatenate([index.search_vectors(tf.constant(q[i:i + 50]), tf.constant(11), tf.constant(c))[0]
                              .numpy() for i in range(0, len(q), 50)])
        row["candidates"][c]["recall@10"] = recall(drop_self(got, query_ids, 10), want)
      session.close()
      del index
      if size == args.sizes[0] and dim == x_full.shape[1]:  # the exact model searches the text model's width
        exact = search_model.export_search_model(enc.embedder, affine, big, sentences,
                                                 os.path.join(workdir, f"fp{size}"))
        row["fp32_export_mb"] = dir_mb(exact)
        session = session_loader.SessionModel(exact)
        row["fp32"] = time_session(session, queries, 10, [None], 64, args.latency_requests)[None]
        session.close()
      row["faiss"] = faiss_row(args, codes, q, query_ids, want, workdir)
      del codes
      out.append(row)
      print(f"  scale {dim} {size}: {json.dumps(row)}", file=sys.stderr, flush=True)
    del padded_full
  return out


def faiss_row(args, codes, q, query_ids, want, workdir):
  """faiss IndexBinaryFlat over the same sign bits (`search_bits` of the finished CorpusCodes; a subprocess of
  --faiss_python): its latency, and the recall of its Hamming candidates rescored here with the int8 codes."""
  if not args.faiss_python or not os.path.exists(args.faiss_python):
    return None
  corpus_bits, query_bits = search_bits(codes, q)
  np.save(os.path.join(workdir, "codes.npy"), corpus_bits)
  np.save(os.path.join(workdir, "queries.npy"), query_bits)
  result = subprocess.run([args.faiss_python, str(FAISS_SCRIPT), workdir, str(args.scale_candidates[-1]),
                           str(args.latency_requests)], capture_output=True, text=True, check=True)
  row = json.loads(result.stdout)
  cand = np.load(os.path.join(workdir, "candidates.npy"))                            # [n, C]
  back = search.normalize(corpus_codes.dequantize(codes.codes, codes.ranges))
  scores = np.einsum("nd,ncd->nc", search.normalize(q), back[cand])
  got = np.take_along_axis(cand, np.argsort(-scores, axis=1, kind="stable")[:, :11], axis=1)
  row["recall@10"] = recall(drop_self(got, query_ids, 10), want)
  return row


def table(args, results, scale_rows):
  """The markdown table and the target rows."""
  lines = ["| pooling | space | width | precision | STS-B test x100 | recall@10 vs fp32 (same width) |",
           "|---|---|---|---|---|---|"]
  for (pooling, space), widths in results.items():
    for width, precisions in widths.items():
      for precision, (rho, rec) in precisions.items():
        lines.append(f"| {pooling} | {space} | {width} | {precision} | {'' if rho is None else f'{rho:.2f}'} | "
                     f"{rec:.3f} |")
  lines += ["", "| search, last-avg whitening | export MB (corpus) | load s | recall@10 vs fp32 at k | p50 ms | p99 ms "
            "| queries/s, batch 64 |", "|---|---|---|---|---|---|---|"]
  for row in scale_rows:
    where = f"{row['size']:,} vectors, k={row['dim']}"
    for c, r in row["candidates"].items():
      lines.append(f"| binary_search, {where}, {c} candidates | {row['export_mb']:.0f} ({row['corpus_mb']:.0f}) | "
                   f"{row['load_s']:.1f} | "
                   f"{r['recall@10']:.3f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {r['queries_per_s_batch64']:.0f} |")
    if "fp32" in row:
      f = row["fp32"]
      lines.append(f"| exact fp32 search/1, {where} | {row['fp32_export_mb']:.0f} | | 1.000 | "
                   f"{f['p50_ms']:.1f} | {f['p99_ms']:.1f} | {f['queries_per_s_batch64']:.0f} |")
    if row.get("faiss"):
      f = row["faiss"]
      lines.append(f"| faiss IndexBinaryFlat (search only, no BERT), {where}, {args.scale_candidates[-1]} "
                   f"candidates rescored with int8 | | | {f['recall@10']:.3f} | {f['p50_ms']:.2f} | "
                   f"{f['p99_ms']:.2f} | {f['queries_per_s_batch64']:.0f} |")
  lines += ["", "| target | measured | met |", "|---|---|---|"]
  for (pooling, space), widths in results.items():
    for width, p in widths.items():
      gap = p["int8"][0] - p["float32"][0]
      why = "the int8 buckets are too coarse for this space's spread"
      lines.append(f"| int8 >= fp32 - 0.3: {pooling} {space} {width} | {gap:+.2f} | "
                   f"{'yes' if gap >= -0.3 else f'no, by {-0.3 - gap:.2f}: {why}'} |")
  for space in ("whitening", "flow") if results else ():
    cut = results[("last-avg", space)]["k=128"]["int8"][0]
    if cut is not None:
      full = results[("last-avg", space)]["full"]["float32"][0]
      why = f"fp32 itself loses {full - results[('last-avg', space)]['k=128']['float32'][0]:.2f} at k=128"
      lines.append(f"| int8 k=128 >= fp32 full - 0.5: last-avg {space} | {cut - full:+.2f} | "
                   f"{'yes' if cut - full >= -0.5 else f'no, by {-0.5 - (cut - full):.2f}: {why}'} |")
  for row in scale_rows:
    where = f"{row['size']:,} vectors, k={row['dim']}"
    for c, r in row["candidates"].items():
      rec, p50 = r["recall@10"], r["p50_ms"]
      lines.append(f"| recall@10 >= 0.95 (vs exact fp32 at k={row['dim']}): {where}, {c} candidates | {rec:.3f} | "
                   f"{'yes' if rec >= 0.95 else f'no, by {0.95 - rec:.3f}: true neighbours lie beyond the {c} '}"
                   f"{'' if rec >= 0.95 else 'Hamming-nearest; more candidates'} |")
      lines.append(f"| one-query p50 <= 25 ms: {where}, {c} candidates | {p50:.1f} ms | "
                   f"{'yes' if p50 <= 25 else f'no, by {p50 - 25:.1f} ms: the query BERT + scan on this load'} |")
    mb = row["corpus_mb"]
    lines.append(f"| corpus < 200 MB beside BERT: {where} | {mb:.0f} MB (whole export {row['export_mb']:.0f} MB) | "
                 f"{'yes' if mb < 200 else f'no, by {mb - 200:.0f} MB: 8 ceil(k / 64) + k bytes a vector'} |")
  return "\n".join(lines)


def data_parser(doc):
  """An argparse parser with --data_dir and --cache_dir (the store), described by doc's first line."""
  parser = argparse.ArgumentParser(description=doc.split("\n")[0])
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--cache_dir", default=str(REPO / "exp" / "store"))
  return parser


def main():
  parser = data_parser(__doc__)
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--queries", type=int, default=1000)
  parser.add_argument("--widths", default="128,64", help="truncated widths besides the full one")
  parser.add_argument("--candidates", type=int, default=100)
  parser.add_argument("--sizes", default="100000,1000000")
  parser.add_argument("--scale_dims", default="128,384", help="widths of the search exports")
  parser.add_argument("--scale_candidates", default="1000,4000", help="Hamming candidates rescored")
  parser.add_argument("--scale_queries", type=int, default=300, help="queries of the recall and latency at scale")
  parser.add_argument("--latency_requests", type=int, default=200)
  parser.add_argument("--faiss_python", default="/tmp/qvenv/bin/python")
  parser.add_argument("--json_out", default=None)
  parser.add_argument("--parts", default="quality,scale")
  args = parser.parse_args()
  args.widths = (128,) if args.quick else tuple(int(k) for k in args.widths.split(","))
  args.sizes = [100000] if args.quick else [int(s) for s in args.sizes.split(",")]
  args.scale_dims = [128] if args.quick else [int(d) for d in args.scale_dims.split(",")]
  args.scale_candidates = [int(c) for c in args.scale_candidates.split(",")]
  if args.quick:
    args.queries, args.latency_requests, args.scale_queries = 300, 30, 100
  load_before = os.getloadavg()
  corpus = task_sentences(args.data_dir, CORPUS_TASKS)
  fit_sentences = task_sentences(args.data_dir, ("sts-b",))
  wanted = set(task_sentences(args.data_dir, QUERY_TASKS))
  pool = [i for i, s in enumerate(corpus) if s in wanted]
  query_ids = np.random.default_rng(0).choice(pool, size=args.queries, replace=False)
  stsb_test = tasks.load_task("sts-b", args.data_dir).test[0]
  print(f"corpus {len(corpus)} sentences, fit set {len(fit_sentences)}, {len(query_ids)} queries",
        file=sys.stderr, flush=True)
  parts = args.parts.split(",")
  if "quality" in parts:
    results, calibrations = quality(args, corpus, fit_sentences, stsb_test, query_ids)
  else:
    results, calibrations = {}, {("last-avg", "whitening"): calibrator.fit("whitening", SentenceEncoder.from_pretrained(
        "all-minilm-l6-v2", pooling="last-avg", cache_dir=args.cache_dir).encode_raw(fit_sentences))}
  scale_rows = []
  if "scale" in parts:
    with tempfile.TemporaryDirectory() as workdir:
      scale_rows = scale(args, corpus, calibrations, query_ids, workdir)
  print(table(args, results, scale_rows))
  print(f"\nload average before {load_before}, after {os.getloadavg()}; TF {tf.__version__}")
  if args.json_out:
    with open(args.json_out, "w", encoding="utf-8") as f:
      json.dump({"quality": {" / ".join(k): v for k, v in results.items()}, "scale": scale_rows,
                 "loadavg": [load_before, os.getloadavg()]}, f, indent=1)


if __name__ == "__main__":
  main()
