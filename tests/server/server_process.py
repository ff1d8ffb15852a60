"""A real server process for the server's tests (`python -m bert_flow_tf.server` on 127.0.0.1), and raw HTTP to it.

  server = Server(export_dir, log_path, "--max_inputs=64")   # ready: /health said 200
  status, headers, answer = request(server.port, "POST", "/v1/embeddings", {"model": MODEL, "input": "a"})
  server.stop()                                              # SIGTERM; the exit status
"""
import http.client
import json
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
MODEL = "tiny"  # the served name (--model_name)


def free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def request(port, method, path, body=None, headers=None):
  """(status, headers dict, parsed JSON or text) of one raw HTTP request."""
  connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
  try:
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    raw = response.read().decode()
    try:
      parsed = json.loads(raw)
    except ValueError:
      parsed = raw
    return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
  finally:
    connection.close()


class Server:
  """`python -m bert_flow_tf.server` on a free port of 127.0.0.1, its log in a file; ready once /health says so."""

  def __init__(self, export_dir, log_path, *flags):
    self.port = free_port()
    self.log_path = log_path
    self.log = open(log_path, "w", encoding="utf-8")  # pylint: disable=consider-using-with
    self.process = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, "-m", "bert_flow_tf.server", f"--export_dir={export_dir}", f"--port={self.port}",
         f"--model_name={MODEL}", *flags], cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while True:
      assert self.process.poll() is None, f"the server exited: {self.text()}"
      try:
        if request(self.port, "GET", "/health")[0] == 200:
          return
      except OSError:
        pass
      assert time.monotonic() < deadline, f"no ready server after 120 s: {self.text()}"
      time.sleep(0.2)

  def text(self):
    if not self.log.closed:
      self.log.flush()
    return pathlib.Path(self.log_path).read_text(encoding="utf-8")

  def stop(self):
    if self.process.poll() is None:
      self.process.send_signal(signal.SIGTERM)
      self.process.wait(60)
    self.log.close()
    return self.process.returncode


def metric(port, sample):
  """float: the value of one sample of GET /metrics (its name and labels as written there), or None."""
  found = re.search(rf"^{re.escape(sample)} (\S+)$", request(port, "GET", "/metrics")[2], re.M)
  return None if found is None else float(found.group(1))
