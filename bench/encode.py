"""Benchmarks sentence encoding: every unique STS-B sentence through SentenceEmbedder; prints one JSON object.

It encodes the sentences as the product does (`SentenceEncoder.encode` on new sentences): a fresh in-memory
`EmbeddingStore.vectors` over a SentenceEmbedder on a tf.distribute strategy (`utils.distribute.make_strategy`, the
model loaded in its scope), fed by `embedding.pipeline.InputPipeline` (host tokenization, batches bucketed by length,
each padded to its longest; static shapes under `--use_xla` or `--static_shapes`). The sentences are taken in the
order the store hands them to the embedder (by key), so the batches read here are the ones the timed run makes.
It reports:
  * start-up, apart: imports (process start to imports done), the strategy, model load, the first trace (a warm-up
    encode of the first `--warmup` sentences), and, for static shapes, the warm-up of padded lengths the first did
    not reach (so that the timed run traces nothing);
  * the steady encode of all sentences (tokenize, pack, encode, pool) in seconds and sentences/s;
  * the encoder's matmul FLOPs per second, per block
      2*s*(4*H*H + 2*H*I)  (Q, K, V, attention output; intermediate and output dense)
      + 2*2*s*s*H          (Q.K^T and attention . V)
    per sentence of s tokens, summed over the L blocks and divided by the encode time: "useful" with s each
    sentence's real length ([CLS] and [SEP] included, capped at max_seq_length), "padded" with every row of the
    actual [B, S] batches (read by iterating the pipeline with the same arguments; filler rows of static shapes
    included). Embedding lookups, softmax, LayerNorm and pooling are left out;
  * both rates as a share of this machine's fp32 matmul rate, timed in the same run on a tf.function matmul of
    shape [M, H] x [H, I] (M = batch size x 32 tokens by default) after a warm-up, before and after the encoding:
    the fastest single call of either, so that other processes on shared cores lower it as little as possible.

With a Python that has torch and transformers (`--torch_python`, or this interpreter when it imports torch), it
also encodes the same sentences with the PyTorch `transformers` BertModel (2 torch threads, eval, no_grad) in the
batches our pipeline made (less the empty filler rows of static shapes), each padded to the same length (every
`--torch_every`-th batch; 1 = all), after a warm-up on 10 of them. It reports torch's time and sentences/s, the speed ratio (for `--torch_every 1` torch's
time over our steady encode's, the two on the same batches; for a sparser sample torch's rate on its batches
against ours on all), the largest last-avg difference, and torch's own rate on the peak-matmul shape (MKL's SGEMM
can be far below TF's oneDNN on some CPUs, e.g. AMD EPYC, which then dominates the ratio). Torch tokenizes batch
by batch inside its timed loop; ours tokenizes in the pipeline, overlapped with the encoder. The torch part runs
as a subprocess of this script (`--torch_worker`), which imports neither TF nor bert_flow_tf.

Usage (from the repository root):
  python bench/encode.py [--model all-minilm-l6-v2] [--batch_size 64] [--num_cpu_replicas N] [--use_xla]
      [--torch_python ~/.cache/st-venv/bin/python]
"""
import argparse
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
# The --data_dir default of the benches: $BERT_FLOW_DATA, else ../shared/data beside the repository.
DATA_DIR = os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data"))
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


def process_seconds():
  """Seconds since this process started (Linux /proc; 10 ms resolution)."""
  with open("/proc/self/stat") as f:
    start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime, in clock ticks after boot
  with open("/proc/uptime") as f:
    uptime = float(f.read().split()[0])
  return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def encoder_flops(lengths, num_layers, hidden, intermediate):
  """Matmul FLOPs of the encoder blocks for rows of `lengths` tokens (int array [rows])."""
  s = np.asarray(lengths, np.int64)
  per_layer = np.sum(2 * s * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * 2 * s * s * hidden)
  return num_layers * int(per_layer)


def pipeline_batches(dataset):
  """What an InputPipeline dataset holds: list of (example ids np.int64 [b] of the valid rows, [B, S] of the
  batch), and the real lengths np.int64 [n valid rows] (input_mask sums)."""
  batches, lengths = [], []
  for batch in dataset:
    valid = batch["valid"].numpy()
    batches.append((batch["example_id"].numpy()[valid], tuple(batch["input_word_ids"].shape)))
    lengths.append(batch["input_mask"].numpy()[valid].sum(axis=1))
  return batches, np.concatenate(lengths)


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
  parser.add_argument("--data_dir", default=DATA_DIR)
  parser.add_argument("--pooling", default="last-avg")
  parser.add_argument("--batch_size", type=int, default=64)
  parser.add_argument("--max_seq_length", type=int, default=64)
  parser.add_argument("--limit", type=int, default=0, help="encode only the first N sentences (0: all)")
  parser.add_argument("--warmup", type=int, default=512, help="sentences of the first (tracing) encode")
  parser.add_argument("--num_cpu_replicas", type=int, default=0, help="N > 1: MirroredStrategy on N logical CPUs")
  parser.add_argument("--use_xla", action="store_true", help="compile the replica function with XLA")
  parser.add_argument("--static_shapes", action="store_true", help="static batch shapes without XLA")
  parser.add_argument("--matmul_tokens", type=int, default=32, help="M = batch_size x this, for the peak matmul")
  parser.add_argument("--torch_python", default=None, help="a Python with torch + transformers "
                      "(e.g. ~/.cache/st-venv/bin/python)")
  parser.add_argument("--torch_every", type=int, default=1, help="torch runs every Nth batch (1: all)")
  parser.add_argument("--torch_worker", default=None, help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.torch_worker:
    torch_worker(args.torch_worker)
    return

  load_before = os.getloadavg()
  sys.path.insert(0, str(REPO))
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import tensorflow as tf
  from bert_flow_tf import loaders
  from bert_flow_tf.embedding import pipeline
  from bert_flow_tf.embedding import store as store_lib
  from bert_flow_tf.embedding import store_files
  from bert_flow_tf.embedding.embedder import SentenceEmbedder
  from bert_flow_tf.loaders import presets
  from bert_flow_tf.utils import distribute
  startup = {"import": process_seconds()}

  start = time.perf_counter()
  strategy = distribute.make_strategy(num_cpu_replicas=args.num_cpu_replicas)  # before anything runs in TF
  startup["strategy"] = time.perf_counter() - start

  sentences = stsb_sentences(args.data_dir)
  if args.limit:
    sentences = sentences[:args.limit]
  sentences = [sentences[i] for i in np.unique(store_files.sentence_keys(sentences), return_index=True)[1]]
  model_name = args.model or presets.DEFAULT
  start = time.perf_counter()
  with strategy.scope():  # the encoder's variables live on the strategy's devices, as in run_flow
    model = loaders.load_model(model_name)
  enc = SentenceEmbedder(model, args.pooling, max_seq_length=args.max_seq_length, strategy=strategy,
                         static_shapes=args.static_shapes, use_xla=args.use_xla)
  startup["model_load"] = time.perf_counter() - start

  def encode(texts):
    return store_lib.EmbeddingStore(enc, batch_size=args.batch_size).vectors(texts, enc.pooling_spec, show_progress=False)

  warmup = sentences[:args.warmup]
  start = time.perf_counter()
  encode(warmup)
  startup["first_trace"] = time.perf_counter() - start

  def batches_of(texts):
    return pipeline_batches(pipeline.InputPipeline(enc.tokenizer, args.batch_size, enc.static_shapes).dataset(texts))

  batches, lengths = batches_of(sentences)
  # Static shapes trace once per padded length (dynamic ones once in all): warm up the lengths the first encode
  # did not reach.
  traced = {shape[1] for _, shape in batches_of(warmup)[0]}
  more = {}
  for idx, shape in batches:
    if enc.static_shapes and shape[1] not in traced and len(idx):
      more.setdefault(shape[1], sentences[idx[0]])
  start = time.perf_counter()
  if more:
    encode(list(more.values()))
  startup["more_lengths"] = time.perf_counter() - start

  config = model.config
  m = args.batch_size * args.matmul_tokens
  peak_before = matmul_rate(m, model.hidden_size, config.intermediate_size)
  start = time.perf_counter()
  ours = encode(sentences)
  seconds = time.perf_counter() - start
  peak_after = matmul_rate(m, model.hidden_size, config.intermediate_size)
  peak = max(peak_before, peak_after)

  flops = functools.partial(encoder_flops, num_layers=model.num_layers, hidden=model.hidden_size,
                            intermediate=config.intermediate_size)
  useful = flops(lengths)
  padded = flops(np.concatenate([np.full(b, s) for _, (b, s) in batches]))
  result = {
      "model": model_name, "pooling": args.pooling, "sentences": len(sentences), "batch_size": args.batch_size,
      "max_seq_length": args.max_seq_length, "strategy": type(strategy).__name__,
      "replicas": strategy.num_replicas_in_sync, "static_shapes": enc.static_shapes, "use_xla": enc.use_xla,
      "startup_s": {k: round(v, 3) for k, v in startup.items()},
      "warmup_sentences": len(warmup) + len(more),
      "batches": len(batches), "padded_lengths": sorted({s for _, (_, s) in batches}),
      "real_tokens": int(lengths.sum()), "padded_tokens": int(sum(b * s for _, (b, s) in batches)),
      "seconds": round(seconds, 3), "sentences_per_s": round(len(sentences) / seconds, 1),
      "useful_gflop": round(useful / 1e9, 1), "padded_gflop": round(padded / 1e9, 1),
      "useful_gflop_per_s": round(useful / seconds / 1e9, 2),
      "padded_gflop_per_s": round(padded / seconds / 1e9, 2),
      "matmul_shape": [m, model.hidden_size, config.intermediate_size],
      "matmul_gflop_per_s": round(peak / 1e9, 2),
      "matmul_gflop_per_s_before_after": [round(peak_before / 1e9, 2), round(peak_after / 1e9, 2)],
      "useful_share_of_matmul_rate": round(useful / seconds / peak, 3),
      "padded_share_of_matmul_rate": round(padded / seconds / peak, 3),
      "tensorflow": tf.__version__, "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
  }

  python = torch_python(args.torch_python)
  if python and model.format == "hf":
    sampled = [(idx, s) for idx, (_, s) in batches[::args.torch_every] if len(idx)]
    with tempfile.TemporaryDirectory() as tmp:
      job = {"model_dir": presets.model_dir(model_name), "sentences": sentences, "out": f"{tmp}/torch.npy",
             "batches": [(idx.tolist(), int(s)) for idx, s in sampled], "matmul_shape": result["matmul_shape"]}
      with open(f"{tmp}/job.json", "w") as f:
        json.dump(job, f)
      proc = subprocess.run([python, __file__, "--torch_worker", f"{tmp}/job.json"], capture_output=True,
                            text=True, check=True)
      torch_result = json.loads(proc.stdout.strip().splitlines()[-1])
      theirs = np.load(job["out"])
    done = np.concatenate([idx for idx, _ in sampled])
    result["torch"] = dict(torch_result, batches=len(sampled), sentences=len(done),
                           sentences_per_s=round(len(done) / torch_result["seconds"], 1),
                           seconds=round(torch_result["seconds"], 3))
    # Our steady encode ran exactly these batches (all of them for --torch_every 1, where this is the ratio of
    # the two times); a sparser sample compares torch's rate on its batches with ours on all.
    result["speedup_vs_torch"] = round(torch_result["seconds"] / len(done) / (seconds / len(sentences)), 3)
    if args.pooling in ("last-avg", "avg"):
      result["max_abs_diff_vs_torch"] = float(np.abs(ours[done] - theirs[done]).max())
  else:
    result["torch"] = None
  result["load_average_1_5_15"] = {"before": [round(x, 2) for x in load_before],
                                   "after": [round(x, 2) for x in os.getloadavg()]}
  print(json.dumps(result, indent=1))


if __name__ == "__main__":
  main()
