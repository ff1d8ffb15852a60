"""Do the binary search's ITQ-rotated sign bits find the neighbours with fewer candidates than the plain ones?

The binary search turns each corpus's sign bits by ITQ's rotation (`quantization.sign_rotation`, fitted by
`corpus_codes.CorpusCodes.finish` on the corpus's own int8 codes read back); this compares it, on the same codes,
with the plain sign bits (`finish(rotation=identity)`: the sign bits of the codes read back).

Vectors: all-MiniLM-L6-v2 `last-avg` of the 63,294 distinct evaluation-set sentences (bench/quantized.py's corpus
and 300 queries, each leaving itself out), calibrated by whitening and by the flow (config_l3_d3_w32), each fitted on
the 15,487 STS-B sentences (`calibrator.fit`, as `SentenceEncoder.fit`), at full width and at their first --dim
dimensions (what `truncate_dim` keeps). Printed (JSON), per calibration and width: the rotation's fit in seconds, the
sign quantization loss per dimension of the codes read back with each rotation, and recall@10 against exact fp32
at the same width of the Hamming order alone and of the Hamming candidates rescored with the int8 codes
(`hamming_search.search_codes`), at each of --candidates.

Usage: python bench/itq_bits.py [--cache_dir exp/store] [--dim 128] [--candidates 100,200,500,1000]
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


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--cache_dir", default=str(REPO / "exp" / "store"))
  parser.add_argument("--dim", type=int, default=128)
  parser.add_argument("--candidates", default="100,200,500,1000")
  args = parser.parse_args()
  load_before = os.getloadavg()
  candidates = [int(c) for c in args.candidates.split(",")]
  corpus = quantized.task_sentences(args.data_dir, quantized.CORPUS_TASKS)
  fit_sentences = quantized.task_sentences(args.data_dir, ("sts-b",))
  wanted = set(quantized.task_sentences(args.data_dir, quantized.QUERY_TASKS))
  pool = [i for i, s in enumerate(corpus) if s in wanted]
  query_ids = np.random.default_rng(0).choice(pool, size=300, replace=False)
  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg", cache_dir=args.cache_dir)
  raw_fit, raw_all = enc.encode_raw(fit_sentences), enc.encode_raw(corpus)
  out = {"candidates": candidates, "rows": {}}
  for method in ("whitening", "flow"):
    cal = calibrator.fit(method, raw_fit)
    x_all = cal.transform(raw_all)
    for width in (x_all.shape[1], args.dim):
      x, ranges = x_all[:, :width], cal.int8_ranges[:, :width]
      q = x[query_ids]
      want = quantized.exact_top(q, x, 10, query_ids)
      plain = corpus_codes.CorpusCodes(len(x), ranges).add(x).finish(rotation=np.eye(width))
      start = time.perf_counter()
      rotated = corpus_codes.CorpusCodes(len(x), ranges).add(x).finish()
      fit_s = time.perf_counter() - start
      back = corpus_codes.dequantize(plain.codes, ranges)
      row = {"fit_s": fit_s}
      for name, codes in (("plain", plain), ("itq", rotated)):
        row[name] = {"loss": sign_rotation.loss(back, codes.rotation),
                     "recall@10": recalls(codes, q, query_ids, want, candidates)}
      out["rows"][f"{method} {width}"] = row
      print(method, width, json.dumps(row), file=sys.stderr, flush=True)
  out["loadavg"] = [load_before, os.getloadavg()]
  print(json.dumps(out, indent=1))


if __name__ == "__main__":
  main()
