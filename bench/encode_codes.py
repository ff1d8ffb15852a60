"""STS-B test through the public `SentenceEncoder.encode`: fp32, int8 and binary codes at full width and k = 128.

all-MiniLM-L6-v2 (the preset: its pipeline ends in Normalize), pooling last-avg, max_seq_length 64; whitening and the
flow (the paper's target schedule) fitted with `enc.fit` on the 15,487 distinct STS-B sentences (no labels). Every
score is the Spearman x100 of the cosine of what `encode(x, precision=..., truncate_dim=...)` returns (codes as
integers; binary as 1 - 2 hamming / D', the cosine of the +-1 sign vectors). Two places to take int8 codes
(`bert_flow_tf.quantization.sentence_codes`):

  "int8"                 what encode does: the calibrated vectors, before Normalize, with the calibration's ranges
  "int8, returned ranges" the alternative: the same gaussian rule (`int8_ranges.fit_ranges`) fitted on the unit-length
                         vectors encode returns for the fit sentences at that width, passed as `encode(..., ranges=)`
  "int8, call's min/max"  sentence-transformers' default: `encode(..., ranges=)` with the min and max of the test
                         sentences' own returned vectors (what encode did for the preset before)

The flow's fit is not bit-reproducible on CPU (its steps' reductions run in a nondeterministic order), so its
scores move from fit to fit: `--flow_seeds 1,2,3` fits it once per seed and adds, per fit and over the fits, the
gap of int8 at k to fp32 at full width (the gap the quantization targets compare). The flow's output is its latent z
turned to z's principal axes (`quantization.truncation`), so its first k are z's top-k principal directions; for
comparison, each fit also gives the cut a flow saved with a truncation order takes: z's own k dimensions of largest
variance, fp32 and int8 (per-dimension gaussian ranges of z, as such a flow saved them).

Usage (from the repository root; prints one JSON object, the machine's load in it):
  python bench/encode_codes.py [--cache_dir /tmp/store] [--methods whitening,flow] [--flow_seeds 1,2,3]
"""
import json
import os
import pathlib
import sys

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# pylint: disable=wrong-import-position
from bert_flow_tf.data import tasks
from bert_flow_tf.evaluation import metrics
from bert_flow_tf.quantization import int8_ranges
from bert_flow_tf.quantization import st_layouts
from bert_flow_tf.sentence_encoder import SentenceEncoder
from bench.quantized import data_parser
from bench.quantized import pair_score
from bench.quantized import task_sentences
# pylint: enable=wrong-import-position


def scores(enc, fit_sentences, test, width):
  """{column: STS-B test Spearman x100} at one truncate_dim (None: full)."""
  a, b, gold = list(test.sentences_a), list(test.sentences_b), test.labels
  out = {}
  for precision in ("float32", "int8", "binary"):
    out[precision] = metrics.spearman_x100(pair_score(enc.encode(a, precision=precision, truncate_dim=width),
                                                      enc.encode(b, precision=precision, truncate_dim=width),
                                                      precision), gold)
  returned_ranges = int8_ranges.fit_ranges(enc.encode(fit_sentences, truncate_dim=width))
  out["int8, returned ranges"] = metrics.spearman_x100(pair_score(
      enc.encode(a, precision="int8", truncate_dim=width, ranges=returned_ranges),
      enc.encode(b, precision="int8", truncate_dim=width, ranges=returned_ranges), "int8"), gold)
  own = st_layouts.min_max(enc.encode(a + b, truncate_dim=width))
  out["int8, call's min/max"] = metrics.spearman_x100(pair_score(
      enc.encode(a, precision="int8", truncate_dim=width, ranges=own),
      enc.encode(b, precision="int8", truncate_dim=width, ranges=own), "int8"), gold)
  one = enc.encode(a[0], precision="int8", truncate_dim=width)
  out["one sentence's int8 codes = its codes in the batch"] = bool(
      np.array_equal(one, enc.encode(a[:64], precision="int8", truncate_dim=width)[0]))
  return {k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()}


def latent_order_scores(enc, fit_sentences, test, width):
  """{column: STS-B test Spearman x100} of the flow's latent z = output @ axes^T cut to its `width` dimensions of
  largest variance over the fit sentences (how a flow saved with a truncation order and no axes cuts), fp32 and int8
  (`int8_ranges.fit_ranges` of z over the fit sentences)."""
  axes = enc.calibration.axes                                                                   # [D, D]
  latent = lambda sentences: enc.calibration.transform(enc.encode_raw(list(sentences))) @ axes.T  # z [n, D]
  fitted = latent(fit_sentences)
  order = np.argsort(-fitted.var(0), kind="stable")[:width]
  a, b = latent(test.sentences_a)[:, order], latent(test.sentences_b)[:, order]
  ranges = int8_ranges.fit_ranges(fitted[:, order])
  return {f"{precision} along z's {width} of largest variance": round(metrics.spearman_x100(pair_score(
      *(st_layouts.quantize_embeddings(v, precision, ranges=ranges) for v in (a, b)), precision), test.labels), 2)
          for precision in ("float32", "int8")}


def main():
  parser = data_parser(__doc__)
  parser.add_argument("--methods", default="whitening,flow")
  parser.add_argument("--width", type=int, default=128)
  parser.add_argument("--flow_seeds", default="", help="comma list: fit the flow once per seed (default: once, "
                      "with FlowFitConfig's seed)")
  args = parser.parse_args()
  load_before = os.getloadavg()
  fit_sentences = task_sentences(args.data_dir, ("sts-b",))
  test = tasks.load_task("sts-b", args.data_dir).test[0]
  enc = SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg", max_seq_length=64,
                                        cache_dir=args.cache_dir)
  results, gaps = {}, []
  for method in args.methods.split(","):
    seeds = [int(seed) for seed in args.flow_seeds.split(",")] if method == "flow" and args.flow_seeds else [None]
    for seed in seeds:
      name = method if seed is None else f"{method} seed={seed}"
      enc.fit(fit_sentences, method=method, seed=seed)
      results[name] = {"full": scores(enc, fit_sentences, test, None),
                       f"k={args.width}": scores(enc, fit_sentences, test, args.width)}
      if seed is not None:
        gaps.append(round(results[name][f"k={args.width}"]["int8"] - results[name]["full"]["float32"], 2))
        results[name]["a flow saved with a truncation order"] = latent_order_scores(enc, fit_sentences, test,
                                                                                   args.width)
      print(json.dumps({name: results[name]}), file=sys.stderr, flush=True)
  if gaps:
    results[f"flow: int8 at k={args.width} minus fp32 at full width, per seed"] = {
        "gaps": gaps, "mean": round(float(np.mean(gaps)), 2), "min": min(gaps), "max": max(gaps)}
  print(json.dumps({"model": "all-minilm-l6-v2", "pooling": "last-avg", "max_seq_length": 64,
                    "fit_sentences": len(fit_sentences), "stsb_test_pairs": len(test.labels), "results": results,
                    "loadavg": [load_before, os.getloadavg()], "cpus": os.cpu_count()}, indent=1))


if __name__ == "__main__":
  main()
