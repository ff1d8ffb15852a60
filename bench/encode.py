"""Benchmarks sentence encoding: every unique STS-B sentence through SentenceEmbedder; prints one JSON object.

Reports, for our TF encoder (`bert_flow_tf.embedding.embedder.SentenceEmbedder`, length-sorted and bucketed batches):
  * sentences/s end to end (tokenize, pack, encode, pool), after a warm-up on a few hundred sentences;
  * the encoder's matmul GFLOP/s over the actual padded shapes, per block
      2*B*S*(4*H*H + 2*H*I)  (Q, K, V, attention output; intermediate and output dense)
      + 2*2*B*S*S*H          (Q.K^T and attention . V)
    summed over the L blocks and the batches (embedding lookups, softmax, LayerNorm and pooling are left out);
  * that rate as a share of this machine's fp32 matmul rate, timed in the same run on a tf.function matmul of
    shape [M, H] x [H, I] (M = batch size x 32 tokens by default) after a warm-up, before and after the encoding:
    the fastest single call of either, so that other processes on shared cores lower it as little as possible.

With a Python that has torch and transformers (`--torch_python`, or this interpreter when it imports torch), it
also encodes the same sentences with the PyTorch `transformers` BertModel (2 torch threads, eval, no_grad) in the
same batches padded to the same lengths (every `--torch_every`-th batch of the length-sorted list; 1 = all), and
reports the speed ratio against our encoder timed batch by batch on those same batches (tokenizing included on
both sides), the largest embedding difference, and torch's own rate on the peak-matmul shape (MKL's SGEMM can be
far below TF's oneDNN on some CPUs, e.g. AMD EPYC, which then dominates the ratio). The torch part runs as a
subprocess of this script (`--torch_worker`), which imports neither TF nor bert_flow_tf.

Usage (from the repository root):
  python bench/encode.py [--model all-minilm-l6-v2] [--batch_size 64] [--torch_python /tmp/refenv/bin/python]
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
TORCH_THREADS = 2


def stsb_sentences(data_dir):
  """Unique sentences of STS-B train, dev and test (first-seen order)."""
  from bert_flow_tf.data import sts
  sentences = {}
  for split in sts.load_stsb(data_dir):
    for a, b in zip(split.sentences_a, split.sentences_b):
      sentences.setdefault(a, None)
      sentences.setdefault(b, None)
  return list(sentences)


def encoder_flops(shapes, num_layers, hidden, intermediate):
  """Matmul FLOPs of the encoder blocks for batches of shapes [(B, S), ...]."""
  per_layer = sum(2 * b * s * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * 2 * b * s * s * hidden
                  for b, s in shapes)
  return num_layers * per_layer


def fastest_rate(call, flops, seconds=2.0):
  """FLOP/s of the fastest of repeated `call()`s over about `seconds`, after 3 warm-up calls."""
  for _ in range(3):
    call()
  best, start = float("inf"), time.perf_counter()
  while time.perf_counter() - start < seconds:
    t = time.perf_counter()
    call()
    best = min(best, time.perf_counter() - t)
  return flops / best


def matmul_rate(m, k, n):
  """fp32 FLOP/s of a tf.function [m, k] x [k, n] matmul (fastest call)."""
  import tensorflow as tf
  a = tf.random.normal([m, k])
  b = tf.random.normal([k, n])
  matmul = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)))  # the sum keeps the output from dominating
  return fastest_rate(lambda: matmul(a, b).numpy(), 2.0 * m * k * n)


def run_torch(model_dir, sentences, batches, out_path, matmul_shape):
  """Encodes with transformers.BertModel (last-avg) in the given batches; saves embeddings, returns timings."""
  import torch
  import transformers
  torch.set_num_threads(TORCH_THREADS)
  tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
  model = transformers.BertModel.from_pretrained(model_dir).eval()

  def encode(idx, seq_length):
    batch = tokenizer([sentences[i] for i in idx], max_length=seq_length, truncation=True, padding="max_length",
                      return_tensors="pt")
    hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                   token_type_ids=torch.zeros_like(batch["input_ids"])).last_hidden_state
    mask = batch["attention_mask"][:, :, None].to(hidden.dtype)
    return ((hidden * mask).sum(dim=1) / mask.sum(dim=1)).numpy()

  out = np.zeros([len(sentences), model.config.hidden_size], np.float32)
  with torch.no_grad():
    for idx, seq_length in batches[:10]:  # warm-up
      encode(idx, seq_length)
    start = time.perf_counter()
    for idx, seq_length in batches:
      out[idx] = encode(idx, seq_length)
    seconds = time.perf_counter() - start
    m, k, n = matmul_shape
    a, b = torch.randn(m, k), torch.randn(k, n)
    matmul = fastest_rate(lambda: a @ b, 2.0 * m * k * n)
  np.save(out_path, out)
  return {"seconds": seconds, "matmul_gflop_per_s": round(matmul / 1e9, 2), "torch": torch.__version__,
          "transformers": transformers.__version__, "torch_threads": torch.get_num_threads()}


def torch_worker(job_path):
  """Subprocess entry: reads the job JSON, runs run_torch, prints its result as JSON."""
  with open(job_path) as f:
    job = json.load(f)
  batches = [(np.array(idx), s) for idx, s in job["batches"]]
  print(json.dumps(run_torch(job["model_dir"], job["sentences"], batches, job["out"], job["matmul_shape"])))


def torch_python(requested):
  """The interpreter for the torch part: `requested`, else this one when it imports torch, else None."""
  if requested:
    return requested
  try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
  except ImportError:
    return None
  return sys.executable


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--model", default=None, help="model dir or preset name; default bert_flow_tf's preset")
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared/data")))
  parser.add_argument("--pooling", default="last-avg")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--max_seq_length", type=int, default=64)
  parser.add_argument("--limit", type=int, default=0, help="encode only the first N sentences (0: all)")
  parser.add_argument("--matmul_tokens", type=int, default=32, help="M = batch_size x this, for the peak matmul")
  parser.add_argument("--torch_python", default=None, help="a Python with torch + transformers (e.g. /tmp/refenv)")
  parser.add_argument("--torch_every", type=int, default=1, help="torch runs every Nth batch (1: all)")
  parser.add_argument("--torch_worker", default=None, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.torch_worker:
    torch_worker(args.torch_worker)
    return

  sys.path.insert(0, str(REPO))
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import tensorflow as tf
  from bert_flow_tf import loaders
  from bert_flow_tf.modeling import presets
  from bert_flow_tf.embedding.embedder import SentenceEmbedder

  load_before = os.getloadavg()
  sentences = stsb_sentences(args.data_dir)
  if args.limit:
    sentences = sentences[:args.limit]
  model_name = args.model or presets.DEFAULT
  model = loaders.load_model(model_name)
  enc = SentenceEmbedder(model, args.pooling, max_seq_length=args.max_seq_length)

  config = model.config
  m = args.batch_size * args.matmul_tokens
  peak_before = matmul_rate(m, model.hidden_size, config.intermediate_size)
  _, lengths = enc.tokenize(sentences)
  batches = list(enc.batches(lengths, args.batch_size))
  shapes = [(len(idx), s) for idx, s in batches]
  enc.encode(sentences[:8 * args.batch_size], batch_size=args.batch_size, show_progress=False)  # warm-up
  start = time.perf_counter()
  ours = enc.encode(sentences, batch_size=args.batch_size, show_progress=False)
  seconds = time.perf_counter() - start

  flops = encoder_flops(shapes, model.num_layers, model.hidden_size, config.intermediate_size)
  peak_after = matmul_rate(m, model.hidden_size, config.intermediate_size)
  peak = max(peak_before, peak_after)
  result = {
      "model": model_name, "pooling": args.pooling, "sentences": len(sentences), "batch_size": args.batch_size,
      "max_seq_length": args.max_seq_length, "batches": len(batches),
      "padded_tokens": int(sum(b * s for b, s in shapes)), "real_tokens": int(lengths.sum()),
      "seconds": round(seconds, 3), "sentences_per_s": round(len(sentences) / seconds, 1),
      "encoder_gflop": round(flops / 1e9, 1), "achieved_gflop_per_s": round(flops / seconds / 1e9, 2),
      "matmul_shape": [m, model.hidden_size, config.intermediate_size],
      "matmul_gflop_per_s": round(peak / 1e9, 2),
      "matmul_gflop_per_s_before_after": [round(peak_before / 1e9, 2), round(peak_after / 1e9, 2)],
      "share_of_matmul_rate": round(flops / seconds / peak, 3),
      "tensorflow": tf.__version__, "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
  }

  python = torch_python(args.torch_python)
  if python and model.format == "hf":
    sampled = batches[::args.torch_every]
    ours_seconds = 0.0
    for idx, _ in sampled:
      start = time.perf_counter()
      enc.encode([sentences[i] for i in idx], batch_size=len(idx), show_progress=False)
      ours_seconds += time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
      job = {"model_dir": presets.resolve(model_name), "sentences": sentences, "out": f"{tmp}/torch.npy",
             "batches": [(idx.tolist(), int(s)) for idx, s in sampled], "matmul_shape": result["matmul_shape"]}
      with open(f"{tmp}/job.json", "w") as f:
        json.dump(job, f)
      proc = subprocess.run([python, __file__, "--torch_worker", f"{tmp}/job.json"], capture_output=True,
                            text=True, check=True)
      torch_result = json.loads(proc.stdout.strip().splitlines()[-1])
      theirs = np.load(job["out"])
    done = np.concatenate([idx for idx, _ in sampled])
    torch_result.update({"batches": len(sampled), "sentences": len(done),
                         "sentences_per_s": round(len(done) / torch_result["seconds"], 1),
                         "seconds": round(torch_result["seconds"], 3),
                         "ours_same_batches_seconds": round(ours_seconds, 3),
                         "ours_same_batches_sentences_per_s": round(len(done) / ours_seconds, 1)})
    result["torch"] = torch_result
    result["speedup_vs_torch"] = round(torch_result["seconds"] / ours_seconds, 3)
    if args.pooling in ("last-avg", "avg"):
      result["max_abs_diff_vs_torch"] = float(np.abs(ours[done] - theirs[done]).max())
  else:
    result["torch"] = None
  result["load_average_1_5_15"] = {"before": [round(x, 2) for x in load_before],
                                   "after": [round(x, 2) for x in os.getloadavg()]}
  print(json.dumps(result, indent=1))


if __name__ == "__main__":
  main()
