"""Peak memory of `encode` on long sentences: how much one call raises the process's peak RSS; prints one JSON object.

The sentences are distinct (each starts with its number) and made of common English words, `--chars` characters
each; the encoder (SentenceEncoder of `--model`, or with `--export_dir` an ExportedEncoder of that export) is loaded
and warmed up on short sentences first, so the figure is the call's own: the growth of VmHWM (Linux) over it, with
the call's wall and CPU seconds (user + system) and the load average before and after.

Usage (from the repository root):
  python bench/long_sentences.py [--sentences 4000] [--chars 10000] [--max_seq_length 64] [--export_dir DIR]
"""
import argparse
import json
import os
import re
import resource
import time

import numpy as np

WORDS = "a man is playing a guitar on the stage while the crowd cheers and dances under bright lights".split()


def peak_mb():
  """This process's peak resident memory so far (VmHWM), MB."""
  with open("/proc/self/status", encoding="utf-8") as f:
    return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) / 1024


def cpu_s():
  usage = resource.getrusage(resource.RUSAGE_SELF)
  return usage.ru_utime + usage.ru_stime


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model", default="all-minilm-l6-v2")
  parser.add_argument("--export_dir", default=None, help="measure ExportedEncoder(export_dir) instead")
  parser.add_argument("--sentences", type=int, default=4000)
  parser.add_argument("--chars", type=int, default=10000)
  parser.add_argument("--max_seq_length", type=int, default=64)
  args = parser.parse_args()
  import bert_flow_tf  # pylint: disable=import-outside-toplevel
  if args.export_dir:
    encoder = bert_flow_tf.ExportedEncoder(args.export_dir)
  else:
    encoder = bert_flow_tf.SentenceEncoder(args.model, max_seq_length=args.max_seq_length)
  encoder.encode([f"warm up the graphs {i}" for i in range(200)])
  rng = np.random.default_rng(0)
  sentences = [(f"{i} " + " ".join(rng.choice(WORDS, args.chars // 2)))[:args.chars] for i in range(args.sentences)]
  load_before, before, start, cpu_start = os.getloadavg(), peak_mb(), time.time(), cpu_s()
  encoder.encode(sentences)
  print(json.dumps({"encoder": type(encoder).__name__, "sentences": args.sentences, "chars": args.chars,
                    "max_seq_length": encoder.max_seq_length, "peak_mb_before": round(before),
                    "peak_growth_mb": round(peak_mb() - before), "wall_s": round(time.time() - start, 1),
                    "cpu_s": round(cpu_s() - cpu_start, 1), "loadavg_before": load_before,
                    "loadavg_after": os.getloadavg()}))


if __name__ == "__main__":
  main()
