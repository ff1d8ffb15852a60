"""Encoder variants side by side in one process: CPU microseconds per token of the traced MiniLM encoder.

Levers of issue 31 tried here before they reach the product (none of the variants is the product's code):

  base     the product's `layers.SelfAttention` (three dense layers, explicit transposes)
  fused    Q, K and V as one [H, 3H] matmul (the three kernels concatenated at call time, so the weight names
           the loaders fill stay as they are), then the same transposes
  einsum   the fused matmul, and attention as two einsums over [B, S, N, D] (no explicit transpose)
  NAME+xla the variant compiled with XLA (jit_compile): one compile per batch shape, timed as "first calls"

Each variant is traced once with a [None, None] signature (as the product's dynamic path; under XLA once per shape)
and timed on the same
batches of random word ids, shapes `--shapes` (B x S), alternating variant by variant, `--rounds` rounds of
`--calls` calls. It prints the largest difference of each variant's sequence output from base, and per shape and
variant the median (and min) CPU microseconds per token: user + system time of the whole process, which on a
shared machine moves less than wall time. Thread and engine settings come from the environment
(e.g. `TF_ENABLE_ONEDNN_OPTS=0`, `TF_NUM_INTEROP_THREADS=1`), so one command per setting compares them.

Usage (from the repository root): python bench/encoder_variants.py [--variants base,fused,einsum]
    [--shapes 64x15,128x15,256x15,64x40,32x40] [--rounds 4] [--calls 10]
"""
import argparse
import math
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
import numpy as np
import tensorflow as tf

from bert_flow_tf.loaders import load_model
from bert_flow_tf.modeling import layers
from bert_flow_tf.modeling import packing


def _fused_qkv(attention, x, batch, seq):
  """[B*S, H] -> q, k, v [B, S, N, D] from one matmul with the concatenated kernels."""
  kernel = tf.concat([attention.query.kernel, attention.key.kernel, attention.value.kernel], 1)      # [H, 3H]
  bias = tf.concat([attention.query.bias, attention.key.bias, attention.value.bias], 0)              # [3H]
  qkv = tf.reshape(tf.nn.bias_add(tf.matmul(x, kernel), bias),
                   [batch, seq, 3, attention.num_heads, attention.head_size])                          # [B, S, 3, N, D]
  return tf.unstack(qkv, axis=2)


def fused_call(self, x, attention_bias, training=False):
  del training
  batch, seq = tf.shape(attention_bias)[0], tf.shape(attention_bias)[3]
  q, k, v = (tf.transpose(t, [0, 2, 1, 3]) for t in _fused_qkv(self, x, batch, seq))                 # [B, N, S, D]
  logits = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(self.head_size))                     # [B, N, S, S]
  context = tf.transpose(tf.matmul(tf.nn.softmax(logits + attention_bias), v), [0, 2, 1, 3])         # [B, S, N, D]
  return tf.reshape(context, [batch * seq, self.num_heads * self.head_size])


def einsum_call(self, x, attention_bias, training=False):
  del training
  batch, seq = tf.shape(attention_bias)[0], tf.shape(attention_bias)[3]
  q, k, v = _fused_qkv(self, x, batch, seq)                                                           # [B, S, N, D]
  logits = tf.einsum("bqnd,bknd->bnqk", q, k) * (1.0 / math.sqrt(self.head_size))                    # [B, N, S, S]
  context = tf.einsum("bnqk,bknd->bqnd", tf.nn.softmax(logits + attention_bias), v)                   # [B, S, N, D]
  return tf.reshape(context, [batch * seq, self.num_heads * self.head_size])


VARIANTS = {"base": layers.SelfAttention.call, "fused": fused_call, "einsum": einsum_call}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--variants", default="base,fused,einsum")
  parser.add_argument("--shapes", default="64x15,128x15,256x15,64x40,32x40")
  parser.add_argument("--rounds", type=int, default=4)
  parser.add_argument("--calls", type=int, default=10)
  args = parser.parse_args()
  encoder = load_model("all-minilm-l6-v2").encoder
  shapes = [tuple(int(n) for n in s.split("x")) for s in args.shapes.split(",")]
  rng = np.random.default_rng(0)
  batches = {}
  for b, s in shapes:
    ids = tf.constant(rng.integers(1000, 20000, [b, s]), tf.int32)
    batches[(b, s)] = packing.input_dict(ids, tf.ones_like(ids))
  signature = [{k: tf.TensorSpec([None, None], tf.int32) for k in packing.INPUT_NAMES}]
  fns, first_call = {}, {}
  for name in args.variants.split(","):
    call, _, xla = name.partition("+")
    layers.SelfAttention.call = VARIANTS[call]
    fns[name] = tf.function(lambda inputs: encoder(inputs, training=False)["sequence_output"], autograph=False,
                            jit_compile=bool(xla), input_signature=None if xla else signature)
    start = time.perf_counter()
    for batch in batches.values():   # traces (and compiles under --jit) with this variant's call
      fns[name](batch)
    first_call[name] = time.perf_counter() - start
  layers.SelfAttention.call = VARIANTS["base"]
  reference = {shape: fns[next(iter(fns))](batch).numpy() for shape, batch in batches.items()}
  for name, fn in fns.items():
    diff = max(float(np.abs(fn(batch).numpy() - reference[shape]).max()) for shape, batch in batches.items())
    print(f"{name}: max diff from {next(iter(fns))} {diff:.1e}, first calls (traces) {first_call[name]:.1f} s")
  per_token = {(name, shape): [] for name in fns for shape in shapes}
  for _ in range(args.rounds):
    for shape, batch in batches.items():
      for name, fn in fns.items():
        start = time.process_time()
        for _ in range(args.calls):
          fn(batch).numpy()
        per_token[(name, shape)].append((time.process_time() - start) / args.calls / (shape[0] * shape[1]) * 1e6)
  for shape in shapes:
    print(f"{shape[0]}x{shape[1]}: " + "  ".join(
        f"{name} {np.median(per_token[(name, shape)]):.1f} (min {min(per_token[(name, shape)]):.1f})"
        for name in fns) + " CPU us/token")
  print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
  main()
