"""scripts/get_data.py against a loopback HTTP server that serves ../shared/data's files under their public paths.

The server (tests/data_server.py) maps each manifest source (OWNER/REPO/COMMIT/PATH, as under
raw.githubusercontent.com) to the shared file's bytes, so the script runs its real download path: HTTP GET,
temporary file, size + sha256 check, rename. Nothing here touches the internet.
"""
import hashlib
import importlib.util
import json
import pathlib
import socket

import pytest

from tests import data_server

REPO = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("get_data", REPO / "scripts" / "get_data.py")
get_data = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(get_data)

MANIFEST = get_data.load_manifest()


@pytest.fixture(scope="module")
def routes(data_dir):
  """Every source path of every manifest file -> that file's bytes from ../shared/data."""
  return data_server.routes_from(data_dir)


def _run(capsys, *argv):
  code = get_data.main(list(argv))
  err = capsys.readouterr().err
  return code, err


def _files_under(folder):
  return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def test_manifest_covers_the_shared_data_and_its_listing(data_dir):
  files = MANIFEST["files"]
  assert len(files) == 72 and sum(f["size"] for f in files) == 12_548_891  # MANIFEST.md's totals
  assert sorted(f["path"] for f in files) == [p for p in _files_under(data_dir) if p != "MANIFEST.md"]
  assert sorted({f["dataset"] for f in files}) == ["qnli", "sick", "snli", "sts12", "sts13", "sts14", "sts15",
                                                   "sts16", "stsb"]
  listing = (data_dir / "MANIFEST.md").read_text(encoding="utf-8")
  for f in files:  # the sha256 and the primary source (OWNER/REPO@COMMIT:PATH) as MANIFEST.md states them
    owner, repo, commit, path = f["sources"][0].split("/", 3)
    assert f"| `{f['path']}` |" in listing and f"{owner}/{repo}@{commit}:{path} | `{f['sha256']}` |" in listing


def test_downloads_everything_then_nothing(routes, data_dir, tmp_path, capsys):
  out = tmp_path / "data"
  with data_server.DataServer(routes) as server:
    code, err = _run(capsys, "--data_dir", str(out), "--base_url", server.url)
    assert code == 0, err
    assert len(server.requests) == 72  # one GET per file: every primary source answered
    assert f"data: downloading 72 files (12.5 MB) into {out}; 0 already there" in err
    assert "[72/72] QNLI/dev.tsv (" in err
    assert _files_under(out) == [f["path"] for f in sorted(MANIFEST["files"], key=lambda f: f["path"])]
    for f in MANIFEST["files"]:
      assert (out / f["path"]).read_bytes() == (data_dir / f["path"]).read_bytes(), f["path"]
    # Idempotent: the second run checks the sha256s and sends no request.
    code, err = _run(capsys, "--data_dir", str(out), "--base_url", server.url)
    assert code == 0 and len(server.requests) == 72
    assert err.strip() == f"data: all 72 files already in {out} (sha256 checked); nothing to download"
    # One file lost: only that one is fetched again.
    (out / "SICK" / "SICK_trial.txt").unlink()
    code, err = _run(capsys, "--data_dir", str(out), "--base_url", server.url, "--datasets", "sick,stsb")
    assert code == 0 and len(server.requests) == 73
    assert server.requests[-1].endswith("/SICK-data/SICK_trial.txt")
    assert "downloading 1 files (0.1 MB)" in err and "; 8 already there" in err


def test_a_subset_and_a_failing_primary_source(routes, tmp_path, capsys):
  """--datasets fetches only those sets; a 404 from the first source falls back to the next (same bytes)."""
  stsb_test = next(f for f in MANIFEST["files"] if f["path"] == "stsbenchmark/sts-test.csv")
  routes = dict(routes)
  del routes["/" + stsb_test["sources"][0]]
  with data_server.DataServer(routes) as server:
    code, err = _run(capsys, "--data_dir", str(tmp_path), "--base_url", server.url, "--datasets", "stsb,qnli")
  assert code == 0, err
  assert _files_under(tmp_path) == ["QNLI/dev.tsv", "stsbenchmark/LICENSE.txt", "stsbenchmark/readme.txt",
                                    "stsbenchmark/sts-dev.csv", "stsbenchmark/sts-test.csv",
                                    "stsbenchmark/sts-train.csv"]
  assert server.requests.count("/" + stsb_test["sources"][0]) == 1
  assert "/" + stsb_test["sources"][1] in server.requests
  assert hashlib.sha256((tmp_path / "stsbenchmark/sts-test.csv").read_bytes()).hexdigest() == stsb_test["sha256"]


def test_sha256_mismatch_fails_with_one_line_and_leaves_nothing(routes, tmp_path, capsys):
  qnli = next(f for f in MANIFEST["files"] if f["dataset"] == "qnli")
  routes = dict(routes)
  body = bytearray(routes["/" + qnli["sources"][0]])
  body[100] ^= 1  # one flipped bit, same size
  routes["/" + qnli["sources"][0]] = bytes(body)
  with data_server.DataServer(routes) as server:
    code, err = _run(capsys, "--data_dir", str(tmp_path / "data"), "--base_url", server.url, "--datasets", "qnli")
  url = server.url + "/" + qnli["sources"][0]
  lines = err.splitlines()
  assert code == 1
  assert lines[-1].startswith(f"error: cannot fetch {url} ({url} gave {qnli['size']} bytes with sha256 ")
  assert f"the manifest expects {qnli['size']} bytes with sha256 {qnli['sha256']}). By hand: download that URL to " \
         f"{tmp_path / 'data' / 'QNLI' / 'dev.tsv'}" in lines[-1]
  assert not [line for line in lines if line.startswith("Traceback")]
  assert _files_under(tmp_path) == []  # the temporary file is gone, and nothing took the real name


def test_a_transfer_cut_short_fails_with_one_line_and_leaves_nothing(routes, tmp_path, capsys):
  """The server announces the full size, sends half and closes: every source of the file ends that way."""
  sick = next(f for f in MANIFEST["files"] if f["path"] == "SICK/SICK_trial.txt")
  routes = dict(routes)
  for source in sick["sources"]:
    body = routes["/" + source]
    routes["/" + source] = (body[:len(body) // 2], len(body))
  with data_server.DataServer(routes) as server:
    code, err = _run(capsys, "--data_dir", str(tmp_path / "data"), "--base_url", server.url, "--datasets", "sick",
                     "--timeout", "10")
  line = err.splitlines()[-1]
  assert code == 1 and not [l for l in err.splitlines() if l.startswith("Traceback")]
  url = f"{server.url}/{sick['sources'][0]}"
  half = sick["size"] // 2
  assert line.startswith(f"error: cannot fetch {url} ({url} gave {half} bytes with sha256 ")
  assert f"the manifest expects {sick['size']} bytes with sha256 {sick['sha256']}); " in line
  assert "its 1 other source(s) failed too. By hand: download that URL to " \
         f"{tmp_path / 'data' / 'SICK' / 'SICK_trial.txt'}" in line
  assert not (tmp_path / "data" / "SICK" / "SICK_trial.txt").exists()
  assert [p.name for p in (tmp_path / "data" / "SICK").iterdir() if p.name.startswith(".")] == []  # no temporary file
  assert (tmp_path / "data" / "SICK" / "SICK_train.txt").is_file()  # the file before it stays


def test_offline_fails_with_one_line_naming_the_url(tmp_path, capsys):
  with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  base = f"http://127.0.0.1:{port}"
  code, err = _run(capsys, "--data_dir", str(tmp_path / "data"), "--base_url", base, "--timeout", "5")
  first = MANIFEST["files"][0]
  assert code == 1
  assert err.splitlines()[0] == f"data: downloading 72 files (12.5 MB) into {tmp_path / 'data'}; 0 already there"
  line = err.splitlines()[-1]
  assert line.startswith(f"error: cannot fetch {base}/{first['sources'][0]} (")
  assert "Connection refused" in line and "its 1 other source(s) failed too" in line
  assert line.endswith(f"By hand: download that URL to {tmp_path / 'data' / first['path']} (sha256 "
                       f"{first['sha256']}), or link a folder that holds the data: ln -s /path/to/data "
                       f"{tmp_path / 'data'}")
  assert _files_under(tmp_path) == []


def test_existing_file_with_other_bytes_and_unknown_dataset(routes, tmp_path, capsys):
  target = tmp_path / "QNLI" / "dev.tsv"
  target.parent.mkdir()
  target.write_text("index\tquestion\tsentence\tlabel\n")
  with data_server.DataServer(routes) as server:
    code, err = _run(capsys, "--data_dir", str(tmp_path), "--base_url", server.url, "--datasets", "qnli")
    assert code == 1 and server.requests == []
    assert err.strip() == f"error: {target} exists with a sha256 other than the manifest's " \
                          f"{MANIFEST['files'][-1]['sha256']}; move it away or pass --force to replace it"
    code, err = _run(capsys, "--data_dir", str(tmp_path), "--base_url", server.url, "--datasets", "qnli", "--force")
    assert code == 0 and len(server.requests) == 1
    assert hashlib.sha256(target.read_bytes()).hexdigest() == MANIFEST["files"][-1]["sha256"]
  code, err = _run(capsys, "--data_dir", str(tmp_path), "--datasets", "stsb,mnli")
  assert code == 1
  assert err.strip() == "error: unknown dataset mnli (--datasets); known: qnli, sick, snli, sts12, sts13, sts14, " \
                        "sts15, sts16, stsb"


def test_manifest_file_is_valid_json_with_hex_digests():
  data = json.loads((REPO / "scripts" / "data_manifest.json").read_text(encoding="utf-8"))
  assert data["base_url"] == "https://raw.githubusercontent.com"
  for f in data["files"]:
    assert len(f["sha256"]) == 64 and int(f["sha256"], 16) >= 0
    assert all(len(s.split("/")[2]) == 40 for s in f["sources"])  # pinned to a commit


def _one_file_manifest(path, body, source="owner/repo/0123456789012345678901234567890123456789/f.bin"):
  return {"base_url": "http://unused", "files": [{"path": path, "dataset": "d", "size": len(body),
                                                  "sha256": hashlib.sha256(body).hexdigest(), "sources": [source]}]}


def _flood(body, extra, sent):
  """A route that sends `body` and then `extra` bytes more (no Content-Length), counting in sent[0] what it
  managed to send before the client hung up."""

  def write(out):
    block = b"x" * (1 << 16)
    try:
      out.write(body)
      sent[0] = len(body)
      while sent[0] < len(body) + extra:
        out.write(block)
        sent[0] += len(block)
    except (BrokenPipeError, ConnectionResetError):
      pass

  return write


def test_a_server_sending_more_than_the_manifest_size_is_cut_off_at_the_size(tmp_path):
  body = b"sentence\n" * 1000
  manifest = _one_file_manifest("set/f.txt", body)
  sent = [0]
  with data_server.DataServer({"/" + manifest["files"][0]["sources"][0]: _flood(body, 64 << 20, sent)}) as server:
    with pytest.raises(get_data.GetDataError, match=f"sent more than the manifest's {len(body)} bytes"):
      get_data.fetch_all(tmp_path / "data", base_url=server.url, manifest=manifest, log=lambda *a, **k: None)
  assert len(body) <= sent[0] < 16 << 20          # the client hung up at the size, not after 64 MB more
  assert list(tmp_path.iterdir()) == []           # no partial file, no folder made for it


@pytest.mark.parametrize("path", ["../outside.txt", "set/../../outside.txt", "/tmp/absolute.txt", "", "c:/x.txt",
                                  "link/outside.txt"])
def test_a_manifest_path_leaving_the_data_folder_is_refused_before_any_fetch(tmp_path, path):
  data = tmp_path / "data"
  data.mkdir()
  (tmp_path / "elsewhere").mkdir()
  (data / "link").symlink_to(tmp_path / "elsewhere")
  with data_server.DataServer({}) as server:
    with pytest.raises(get_data.GetDataError, match="refusing it"):
      get_data.fetch_all(data, base_url=server.url, manifest=_one_file_manifest(path, b"x"), log=lambda *a, **k: None)
    assert server.requests == []
  assert sorted(p.name for p in tmp_path.rglob("*")) == ["data", "elsewhere", "link"]


def test_a_failed_fetch_leaves_no_folder_and_suggests_a_link_only_where_it_works(routes, tmp_path, capsys):
  qnli = next(f for f in MANIFEST["files"] if f["dataset"] == "qnli")
  routes = {k: v for k, v in routes.items() if "QNLI" not in k}       # every source of QNLI/dev.tsv: 404
  with data_server.DataServer(routes) as server:
    code, err = _run(capsys, "--data_dir", str(tmp_path / "data"), "--base_url", server.url, "--datasets", "qnli")
    assert code == 1 and list(tmp_path.iterdir()) == []              # not even data/ or data/QNLI/
    assert err.splitlines()[-1].endswith(f"or link a folder that holds the data: ln -s /path/to/data "
                                         f"{tmp_path / 'data'}")
    (tmp_path / "data").mkdir()                                      # the user's own folder: `ln -s` would nest
    code, err = _run(capsys, "--data_dir", str(tmp_path / "data"), "--base_url", server.url, "--datasets", "qnli")
  assert code == 1 and [p.name for p in tmp_path.rglob("*")] == ["data"]
  line = err.splitlines()[-1]
  assert f"(sha256 {qnli['sha256']}), or use a folder that holds the data: run_flow.py --data_dir=/path/to/data " \
         f"(or move {tmp_path / 'data'} away and link it: ln -s /path/to/data {tmp_path / 'data'})" in line
