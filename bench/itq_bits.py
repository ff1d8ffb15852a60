"""Do the binary search's ITQ-rotated sign bits find the neighbours with fewer candidates than the plain ones?

The binary search takes each corpus's sign bits of its codes read back, centred on the int8 ranges' middle and turned
by ITQ's rotation (`quantization.sign_rotation`, fitted by `corpus_codes.CorpusCodes.finish` on the same centred
codes); this compares it, on the same codes, with the plain sign bits (the codes read back, not centred, not turned:
the sign bits of the vectors themselves up to the int8 rounding), with the centred ones alone
(`finish(rotation=identity)`) and with ITQ fitted on and applied to the codes without centring.

Vectors: all-MiniLM-L6-v2 `last-avg` and `emb-avg` of the 63,294 distinct evaluation-set sentences (bench/
quantized.py's corpus and 300 queries, each leaving itself out): raw (int8 ranges by the gaussian rule on the fit
sentences), and calibrated by whitening and by the flow (config_l3_d3_w32), each fitted on the 15,487 STS-B
sentences (`calibrator.fit`, as `SentenceEncoder.fit`), at full width and at their first --dim dimensions (what
`truncate_dim` keeps). Printed (JSON), per space and width: the rotation's fit in seconds (with the bits of the
corpus), the sign quantization loss per dimension of the codes read back as each variant takes them, and recall@10
against exact fp32 at the same width of the Hamming order alone and of the Hamming candidates rescored with the
int8 codes (`hamming_search.search_codes`), at each of --candidates.

Usage: python bench/itq_bits.py [--cache_dir exp/store] [--dim 128] [--candidates 100,1000]
"""
import argparse
import json
import os
import pathlib
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
# pylint: disable=wrong-import-position
import quantized
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.quantization import corpus_codes
from bert_flow_tf.quantization import hamming_search
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import sign_rotation
from bert_flow_tf.sentence_encoder import SentenceEncoder
# pylint: enable=wrong-import-position


def recalls(corpus, q, query_ids, want, candidates):
  """{"hamming only": recall@10, C: recall@10 of C candidates rescored} of a finished CorpusCodes."""
  hits = lambda top_k, c, rescore: np.array([[h["corpus_id"] for h in row] for row in hamming_search.search_codes(
      q, corpus, top_k, c, rescore)])
  out = {"hamming only": quantized.recall(quantized.drop_self(hits(11, 11, False), query_ids, 10), want)}
  for c in candidates:
    out[c] = quantized.recall(quantized.drop_self(hits(11, c, True), query_ids, 10), want)
  return out


def finished(x, ranges, centred=True, rotation=None):
  """A finished CorpusCodes of float [M, D'] vectors x: the product's bits (centred, ITQ's rotation fitted by
  `finish`), or with the centre at 0 (centred=False) and/or a given rotation."""
  codes = corpus_codes.CorpusCodes(len(x), ranges).add(x)
  if not centred:
    codes.centre = np.zeros_like(codes.centre)
  return codes.finish(rotation=rotation)


def variants(x, ranges):
  """{"plain", "centred", "itq", "itq, not centred"} -> (a finished CorpusCodes of x with those sign bits, their
  loss per dimension), and the seconds of the product's `finish` (itq)."""
  start = time.perf_counter()
  itq = finished(x, ranges)
  fit_s = time.perf_counter() - start
  identity = np.eye(x.shape[1])
  back = corpus_codes.dequantize(itq.codes, ranges)
  return {name: (codes, sign_rotation.loss(back - codes.centre, codes.rotation))
          for name, codes in (("plain", finished(x, ranges, centred=False, rotation=identity)),
                              ("centred", finished(x, ranges, rotation=identity)), ("itq", itq),
                              ("itq, not centred", finished(x, ranges, centred=False)))}, fit_s


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--cache_dir", default=str(REPO / "exp" / "store"))
  parser.add_argument("--dim", type=int, default=128)
  parser.add_argument("--candidates", default="100,1000")
  args = parser.parse_args()
  load_before = os.getloadavg()
  candidates = [int(c) for c in args.candidates.split(",")]
  corpus = quantized.task_sentences(args.data_dir, quantized.CORPUS_TASKS)
  fit_sentences = quantized.task_sentences(args.data_dir, ("sts-b",))
  wanted = set(quantized.task_sentences(args.data_dir, quantized.QUERY_TASKS))
  pool = [i for i, s in enumerate(corpus) if s in wanted]
  query_ids = np.random.default_rng(0).choice(pool, size=300, replace=False)
  out = {"candidates": candidates, "rows": {}}
  for pooling in quantized.POOLINGS:
    enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling=pooling, cache_dir=args.cache_dir)
    raw_fit, raw_all = enc.encode_raw(fit_sentences), enc.encode_raw(corpus)
    spaces = {"raw": (raw_all, int8_ranges.fit_ranges(raw_fit))}
    for method in ("whitening", "flow"):
      cal = calibrator.fit(method, raw_fit)
      spaces[method] = (cal.transform(raw_all), cal.int8_ranges)
    for space, (x_all, ranges_all) in spaces.items():
      for width in (x_all.shape[1], args.dim):
        x, ranges = x_all[:, :width], ranges_all[:, :width]
        q = x[query_ids]
        want = quantized.exact_top(q, x, 10, query_ids)
        codes_of, fit_s = variants(x, ranges)
        row = {"fit_s": fit_s, **{name: {"loss": loss, "recall@10": recalls(codes, q, query_ids, want, candidates)}
                                  for name, (codes, loss) in codes_of.items()}}
        out["rows"][f"{pooling} {space} {width}"] = row
        print(pooling, space, width, json.dumps(row), file=sys.stderr, flush=True)
  out["loadavg"] = [load_before, os.getloadavg()]
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  main()
