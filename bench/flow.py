"""Times the flow-fitting train step on this machine's CPU and prints one JSON line per setting.

Usage: python bench/flow.py [--config config_l3_d3_w32] [--steps 200] [--jit]

The step is the one `flow_fitting.fit_flow` runs (`glow.make_train_step(..., pairs=True)`): a batch of B sentence
pairs, loss mean NLL of a + mean NLL of b. Each line: dim D, batch B (pairs), trace_s (first call: tracing and
building), steps_per_s and sentences_per_s (steady state, 2B sentences a step), retraces (extra traces after the
first; must be 0), epoch_s_17k (estimated seconds for one epoch over 17,000 sentences, 8,500 pairs, plus tracing),
and next_fit_s: what a later fit of the same config and width pays instead of trace_s (`glow.ReusableTrainStep`:
a freshly seeded Glow and a new optimizer made and their state put into the kept ones, then the first step).
"""
import argparse
import json
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # pylint: disable=g-import-not-at-top
import tensorflow as tf

from glow import AdamWeightDecay, DEFAULT_CONFIG, Glow, GlowConfig, ReusableTrainStep, make_train_step


def bench(config, dim, batch, steps, jit_compile):
  flow = Glow.from_config(config, dim=dim)
  step = make_train_step(flow, AdamWeightDecay(learning_rate=1e-3), pairs=True, jit_compile=jit_compile)
  rng = np.random.default_rng(0)
  batches = [[tf.constant(rng.standard_normal((batch, dim)).astype(np.float32) * 0.1) for _ in "ab"]
             for _ in range(8)]
  start = time.perf_counter()
  float(step(*batches[0]))
  trace_s = time.perf_counter() - start
  start = time.perf_counter()
  for i in range(steps):
    loss = step(*batches[i % len(batches)])
  float(loss)
  elapsed = time.perf_counter() - start
  steps_per_s = steps / elapsed
  next_fit_s = None
  if not jit_compile:  # ReusableTrainStep traces without XLA, as fit_flow runs
    reusable = ReusableTrainStep(GlowConfig.load(config), dim, "original", AdamWeightDecay(learning_rate=1e-3))
    reusable.reset(Glow.from_config(config, dim=dim, seed=1), AdamWeightDecay(learning_rate=1e-3))
    float(reusable(*batches[0]))                               # the first fit traces
    start = time.perf_counter()
    reusable.reset(Glow.from_config(config, dim=dim, seed=2), AdamWeightDecay(learning_rate=1e-3))
    float(reusable(*batches[1]))
    next_fit_s = round(time.perf_counter() - start, 3)
    assert reusable.tracing_count() == 1
  return {
      "config": config, "dim": dim, "batch": batch, "jit_compile": jit_compile,
      "trace_s": round(trace_s, 2), "steps_per_s": round(steps_per_s, 1),
      "sentences_per_s": round(steps_per_s * 2 * batch), "retraces": step.experimental_get_tracing_count() - 1,
      "epoch_s_17k": round(trace_s + 17000 / (2 * batch) / steps_per_s, 1), "next_fit_s": next_fit_s,
  }


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--config", default=DEFAULT_CONFIG, help="Glow config name or JSON path")
  parser.add_argument("--steps", type=int, default=200, help="timed steps per setting")
  parser.add_argument("--jit", action="store_true", help="compile the train step with XLA")
  args = parser.parse_args()
  print(json.dumps({"cpu_count": os.cpu_count(), "tensorflow": tf.__version__}))
  for dim in (768, 384):
    for batch in (32, 256):
      print(json.dumps(bench(args.config, dim, batch, args.steps, args.jit)), flush=True)


if __name__ == "__main__":
  main()
