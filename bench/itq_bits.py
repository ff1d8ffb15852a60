"""Do ITQ-rotated sign bits find the neighbours with fewer candidates? A measurement (ITQ is not in the product).

ITQ (Gong and Lazebnik, "Iterative Quantization", CVPR 2011): an orthogonal R [D', D'] that lowers the sign
quantization loss ||sign(V R) - V R||^2 of centred vectors V, by alternating B = sign(V R) and the orthogonal
Procrustes step R = U W^T (U S W^T the SVD of V^T B), from a random rotation, --iterations rounds. Here V is the
whitened `last-avg` vectors (all-MiniLM-L6-v2) of the 15,487 STS-B sentences cut to their first --dim dimensions:
the calibration's own fit set, where the product fits whitening and its int8 ranges.

Printed (JSON): the quantization loss per dimension before and after, and over the 63,294 evaluation-set sentences
(bench/quantized.py's corpus and 300 queries, each leaving itself out) recall@10 against exact fp32 at the same
width of the Hamming order alone and of the Hamming candidates rescored with the int8 codes, at each of
--candidates, with the identity and with R applied to the sign bits (the int8 codes and the rescoring are the same
in both: a rotation changes no cosine).

Usage: python bench/itq_bits.py [--dim 128] [--candidates 10,100,200,500,1000,2000]
"""
import argparse
import json
import os
import pathlib
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
# pylint: disable=wrong-import-position
import quantized
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.sentence_encoder import SentenceEncoder
# pylint: enable=wrong-import-position


def fit_itq(v, iterations, seed=0):
  """Orthogonal float64 [D', D'] lowering ||sign(v R) - v R||^2 for float [n, D'] (see the module notes)."""
  v = np.asarray(v, np.float64)
  rotation, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=[v.shape[1]] * 2))
  for _ in range(iterations):
    u, _, wt = np.linalg.svd(v.T @ np.sign(v @ rotation))
    rotation = u @ wt
  return rotation


def loss(v, rotation):
  projected = np.asarray(v, np.float64) @ rotation
  return float(np.mean((np.sign(projected) - projected) ** 2))


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--cache_dir", default=str(REPO / "exp" / "store"))
  parser.add_argument("--dim", type=int, default=128)
  parser.add_argument("--iterations", type=int, default=50)
  parser.add_argument("--candidates", default="10,100,200,500,1000,2000")
  args = parser.parse_args()
  load_before = os.getloadavg()
  corpus = quantized.task_sentences(args.data_dir, quantized.CORPUS_TASKS)
  fit_sentences = quantized.task_sentences(args.data_dir, ("sts-b",))
  wanted = set(quantized.task_sentences(args.data_dir, quantized.QUERY_TASKS))
  pool = [i for i, s in enumerate(corpus) if s in wanted]
  query_ids = np.random.default_rng(0).choice(pool, size=300, replace=False)
  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg", cache_dir=args.cache_dir)
  cal = calibrator.fit("whitening", enc.encode_raw(fit_sentences))
  fit = cal.transform(enc.encode_raw(fit_sentences))[:, :args.dim]
  x = cal.transform(enc.encode_raw(corpus))[:, :args.dim]
  ranges = cal.int8_ranges[:, :args.dim]
  rotations = {"identity": np.eye(args.dim), "itq": fit_itq(fit, args.iterations)}
  q = x[query_ids]
  want = quantized.exact_top(q, x, 10, query_ids)
  codes = corpus_codes.CorpusCodes.of(x, ranges)
  out = {"dim": args.dim, "fit_vectors": len(fit), "loss": {}, "recall@10": {}}
  for name, rotation in rotations.items():
    out["loss"][name] = loss(fit, rotation)
    r = rotation.astype(np.float32)
    distance = hamming_search.hamming(corpus_codes.pack_words(q @ r), corpus_codes.pack_words(x @ r))
    distance[np.arange(len(q)), query_ids] = np.iinfo(np.int32).max                 # each query leaves itself out
    rows = {"hamming only": quantized.recall(hamming_search.nearest(distance, 10), want)}
    for c in (int(c) for c in args.candidates.split(",")):
      cand = hamming_search.nearest(distance, c)
      order, _ = hamming_search.rescore_codes(q, codes.codes[cand], ranges, 10)
      rows[f"{c} candidates, int8 rescoring"] = quantized.recall(np.take_along_axis(cand, order, axis=1), want)
    out["recall@10"][name] = rows
  out["loadavg"] = [load_before, os.getloadavg()]
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  main()
