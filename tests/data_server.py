"""A loopback HTTP server that serves ../shared/data's files under their public source paths.

Each file of scripts/data_manifest.json is served at /OWNER/REPO/COMMIT/PATH for every one of its sources, as
raw.githubusercontent.com serves it, so `scripts/get_data.py --base_url=<server.url>` runs its real download path
without the internet (tests/get_data_test.py, tests/notebooks_test.py).
"""
import http.server
import json
import pathlib
import threading
import urllib.parse

REPO = pathlib.Path(__file__).resolve().parents[1]
MANIFEST = json.loads((REPO / "scripts" / "data_manifest.json").read_text(encoding="utf-8"))


def routes_from(data_dir):
  """URL path -> bytes: every source path of every manifest file, with that file's bytes from data_dir."""
  out = {}
  for f in MANIFEST["files"]:
    body = (pathlib.Path(data_dir) / f["path"]).read_bytes()
    for source in f["sources"]:
      out["/" + source] = body
  return out


class DataServer:
  """HTTP server on 127.0.0.1 in a thread; `routes` maps a URL path to bytes (a missing path is a 404), to
  (bytes, Content-Length) to announce more bytes than it sends, or to a function that writes the body to the
  response's file.

  `requests` lists the paths asked for, in order. Use as a context manager.
  """

  def __init__(self, routes):
    self.routes, self.requests = routes, []
    server = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def do_GET(self):  # pylint: disable=invalid-name
        path = urllib.parse.unquote(self.path)
        server.requests.append(path)
        body = server.routes.get(path)
        if body is None:
          self.send_error(404)
          return
        if callable(body):  # a function that writes the body itself (no Content-Length: until it returns)
          self.send_response(200)
          self.end_headers()
          body(self.wfile)
          return
        declared = len(body)
        if isinstance(body, tuple):  # (bytes, Content-Length): a longer length makes a transfer cut short
          body, declared = body
        self.send_response(200)
        self.send_header("Content-Length", str(declared))
        self.end_headers()
        self.wfile.write(body)

      def log_message(self, *args):
        pass

    self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
    # shutdown() waits for the serving loop's next poll: 0.5 s by default, paid by every test that stops a server.
    self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

  def __enter__(self):
    self.thread.start()
    return self

  def __exit__(self, *exc):
    self.httpd.shutdown()
    self.httpd.server_close()
