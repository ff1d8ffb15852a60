"""Downloads the benchmark sets (STS-B, SICK-R, STS12-16, SNLI dev/test, QNLI dev) into data/.

  python scripts/get_data.py                          # all 72 files, about 12.5 MB, into <repository>/data
  python scripts/get_data.py --datasets stsb,sick     # only these sets
  python scripts/get_data.py --data_dir /elsewhere    # another folder (then pass --data_dir to run_flow.py)

Each file is fetched from a public GitHub repository at a fixed commit (raw.githubusercontent.com), as listed in
scripts/data_manifest.json with its size and sha256; the bytes are the unmodified release files, already in the
layout the readers expect (docs/experiments.md, *Data*), so nothing is converted or unpacked. A file whose first source fails
is fetched from the next one (other repositories holding the same bytes).

- Idempotent: a file already in place with the manifest's sha256 is not downloaded again, so a second run fetches
  nothing (a `data` link to an existing copy counts as in place).
- Atomic: each file is written to a hidden temporary file beside its target, checked, then renamed into place; an
  interrupted or failed run leaves no partial file under a real name, and no folder it made and left empty.
- Checked: a wrong size or sha256 is an error (a transfer stops at the manifest's size); an existing file with
  other bytes is an error unless --force; a manifest path that would leave --data_dir is refused before any fetch.
- Errors are one line (exit status 1) naming the URL, the file, and how to get it by hand.

`--base_url` replaces https://raw.githubusercontent.com (tests/get_data_test.py serves the files from a loopback
HTTP server). Dataset names for --datasets: stsb, sick, sts12, sts13, sts14, sts15, sts16, snli, qnli.
"""
import argparse
import hashlib
import http.client
import json
import os
import pathlib
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
MANIFEST = REPO / "scripts" / "data_manifest.json"
CHUNK = 1 << 16


class GetDataError(Exception):
  """A failure worth one line to the user."""


def load_manifest(path=MANIFEST):
  """The manifest dict: base_url, and files (path, dataset, size, sha256, sources)."""
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def source_url(base_url, source):
  """URL of one source (OWNER/REPO/COMMIT/PATH) under base_url, each path segment percent-quoted."""
  return base_url.rstrip("/") + "/" + urllib.parse.quote(source)


def sha256_of(path):
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(CHUNK), b""):
      digest.update(chunk)
  return digest.hexdigest()


def target_of(data_dir, path):
  """data_dir / path for a manifest path, which must stay inside data_dir (relative, no '..', no link out)."""
  parts = pathlib.PurePosixPath(path).parts if isinstance(path, str) else ()
  if not parts or path.startswith("/") or "\\" in path or ".." in parts or any(":" in part for part in parts):
    raise GetDataError(f"manifest path {path!r} is not a relative path inside the data folder; refusing it")
  target = pathlib.Path(data_dir) / path
  root = os.path.realpath(data_dir)
  if os.path.commonpath([root, os.path.realpath(target)]) != root:
    raise GetDataError(f"manifest path {path!r} leads outside {data_dir} (through a link); refusing it")
  return target


def _download(url, target, size, sha256, timeout, progress):
  """Fetches url into a temporary file beside target, reading at most `size` + 1 bytes, checks size and sha256,
  renames it into place. The target's folder must exist."""
  fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
  try:
    digest, done = hashlib.sha256(), 0
    with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
      while done <= size:                                       # one byte past the size is enough to refuse
        chunk = response.read(min(CHUNK, size + 1 - done))
        if not chunk:
          break
        out.write(chunk)
        digest.update(chunk)
        done += len(chunk)
        progress(min(done, size))
    if done > size:
      raise GetDataError(f"{url} sent more than the manifest's {size} bytes")
    if done != size or digest.hexdigest() != sha256:
      raise GetDataError(f"{url} gave {done} bytes with sha256 {digest.hexdigest()}, the manifest expects {size} "
                         f"bytes with sha256 {sha256}")
    os.replace(tmp, target)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def _make_folders(folder):
  """Creates `folder` and its missing parents; returns those it created, deepest first."""
  made = []
  while not folder.exists():
    made.append(folder)
    folder = folder.parent
  for path in reversed(made):
    path.mkdir()
  return made


def _remove_if_empty(folders):
  """Removes each of `folders` (deepest first) that is empty."""
  for folder in folders:
    try:
      folder.rmdir()
    except OSError:   # not empty, or gone
      pass


def _why(error):
  """A short reason for a failed fetch."""
  if isinstance(error, GetDataError):
    return str(error)
  if isinstance(error, urllib.error.HTTPError):
    return f"HTTP {error.code} {error.reason}"
  if isinstance(error, urllib.error.URLError):
    return f"{error.reason}"
  if isinstance(error, http.client.IncompleteRead):
    return f"the transfer stopped after {len(error.partial)} bytes of this read"
  return f"{type(error).__name__}: {error}"


def fetch_all(data_dir, datasets=None, base_url=None, force=False, timeout=60.0, manifest=None, log=None):
  """Brings every manifest file of `datasets` (all when None) into data_dir.

  Returns:
    (fetched, present): numbers of files downloaded now and of files already in place.
  Raises:
    GetDataError: one line naming the URL and the manual alternative.
  """
  manifest = manifest or load_manifest()
  live = log is None and sys.stderr.isatty()  # a running percentage on a terminal; one line per file otherwise
  log = log or (lambda text, end="\n": print(text, end=end, file=sys.stderr, flush=True))
  base_url = base_url or manifest["base_url"]
  known = sorted({f["dataset"] for f in manifest["files"]})
  wanted = known if datasets is None else datasets
  unknown = [d for d in wanted if d not in known]
  if unknown:
    raise GetDataError(f"unknown dataset {', '.join(unknown)} (--datasets); known: {', '.join(known)}")
  files = [f for f in manifest["files"] if f["dataset"] in wanted]
  data_dir = pathlib.Path(data_dir)
  todo = []
  for f in files:
    target = target_of(data_dir, f["path"])
    if not isinstance(f["size"], int) or f["size"] < 0:
      raise GetDataError(f"manifest size {f['size']!r} of {f['path']!r} is not a byte count")
    if target.exists():
      if sha256_of(target) == f["sha256"]:
        continue
      if not force:
        raise GetDataError(f"{target} exists with a sha256 other than the manifest's {f['sha256']}; move it away "
                           "or pass --force to replace it")
    todo.append(f)
  present = len(files) - len(todo)
  if not todo:
    log(f"data: all {len(files)} files already in {data_dir} (sha256 checked); nothing to download")
    return 0, present
  total = sum(f["size"] for f in todo)
  log(f"data: downloading {len(todo)} files ({total / 1e6:.1f} MB) into {data_dir}; {present} already there")
  done_bytes, made = 0, []
  for i, f in enumerate(todo, 1):
    target = target_of(data_dir, f["path"])
    prefix = f"[{i}/{len(todo)}] {f['path']} ({f['size'] / 1e3:.0f} kB)"
    errors = []
    made += _make_folders(target.parent)
    for source in f["sources"]:
      url = source_url(base_url, source)
      try:
        _download(url, target, f["size"], f["sha256"], timeout,
                  lambda n, p=prefix: live and log(f"\r{p} {(done_bytes + n) * 100 // total:3d}% of all", end=""))
        break
      except (GetDataError, OSError, http.client.HTTPException) as e:  # OSError: urllib's; HTTPException: a cut transfer
        errors.append((url, _why(e)))
    else:
      if live:
        log("")
      _remove_if_empty(sorted(made, key=lambda p: len(p.parts), reverse=True))
      url, why = errors[0]
      also = f"; its {len(errors) - 1} other source(s) failed too" if len(errors) > 1 else ""
      raise GetDataError(f"cannot fetch {url} ({why}){also}. By hand: download that URL to {target} "
                         f"(sha256 {f['sha256']}), or {_use_a_copy(data_dir)}")
    done_bytes += f["size"]
    log(f"\r{prefix} {done_bytes * 100 // total:3d}% of all" if live else f"{prefix} ok")
  log(f"data: {len(todo)} files downloaded, sha256 checked, in {data_dir}")
  return len(todo), present


def _use_a_copy(data_dir):
  """How to use a folder that already holds the data, in a form that works where data_dir stands now."""
  if os.path.lexists(data_dir):   # `ln -s` onto an existing folder would make a link inside it
    return f"use a folder that holds the data: run_flow.py --data_dir=/path/to/data (or move {data_dir} away " \
           f"and link it: ln -s /path/to/data {data_dir})"
  return f"link a folder that holds the data: ln -s /path/to/data {data_dir}"


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                   formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
  parser.add_argument("--data_dir", default=str(REPO / "data"),
                      help="folder to fill (default: data/ in the repository, run_flow.py's default --data_dir)")
  parser.add_argument("--datasets", default="",
                      help="comma-separated subset of stsb,sick,sts12,sts13,sts14,sts15,sts16,snli,qnli "
                           "(default: all)")
  parser.add_argument("--base_url", default=None,
                      help="server holding OWNER/REPO/COMMIT/PATH (default: the manifest's, "
                           "https://raw.githubusercontent.com)")
  parser.add_argument("--force", action="store_true", help="replace existing files whose sha256 differs")
  parser.add_argument("--timeout", type=float, default=60.0, help="seconds per connection attempt (default 60)")
  args = parser.parse_args(argv)
  datasets = [d.strip() for d in args.datasets.split(",") if d.strip()] or None
  try:
    fetch_all(args.data_dir, datasets, args.base_url, args.force, args.timeout)
  except GetDataError as e:
    print(f"error: {e}", file=sys.stderr)
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
