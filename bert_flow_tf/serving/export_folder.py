"""An export folder as one unit: written whole or not at all, its export_info.json last, checked whole on load.

  paths = export_folder.write(export_dir, overwrite, write_parts)   # write_parts(folder) -> (info, paths)
  info = export_folder.read_info(export_dir)                         # the loaders: the marker ...
  export_folder.verify(export_dir, info)                             # ... and every file it lists

`write` runs `write_parts` on a hidden `.tmp-<pid>-*` folder beside export_dir (io_utils.atomic_dir), adds to the
info it returns the SHA-256 of every file written ("files": relative path -> hex digest), writes that as
export_info.json, the last file, and renames the folder onto export_dir. So export_dir is one export whole, never a
mix of two writers' parts, and a killed writer leaves no export_dir (or the previous one). An existing export_dir
is replaced whole only with `overwrite`, and only when it holds an export and nothing else at its top (the names
in OWN); an export written at the same time by another process is then replaced whole, or, without `overwrite`, this
write is refused in one line.

A folder copied part-way (cp, rsync: no longer one rename) lacks files that export_info.json lists, or the file
itself; a changed or damaged file has another SHA-256. `read_info` and `verify` refuse both in one line naming the
folder or the file, before any graph is loaded.
"""
import hashlib
import json
import os
import re

from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils

INFO_FILE = "export_info.json"
FILES = "files"  # export_info.json's key: relative path -> SHA-256 hex digest of each file the export holds
OWN = (INFO_FILE, "text", "ids", "search", "binary_search", "litert")  # what an export holds, its marker first
_DIGEST = re.compile(r"[0-9a-f]{64}")


def write(export_dir, overwrite, write_parts):
  """Writes an export whole (see the module notes).

  Args:
    export_dir: str.
    overwrite: bool, replace an existing export (a folder holding anything else is refused even so).
    write_parts: function(folder) -> (info, paths): writes the export's parts under `folder` (str, empty) and
      returns export_info.json's fields (dict) and the paths written (a dict of str or of such dicts).

  Returns:
    `paths` moved to export_dir, with "info": export_info.json's path.

  Raises:
    errors.UserError: export_dir may not be replaced (checked before `write_parts` runs, and again before the
      rename: another writer may have finished meanwhile).
  """
  with io_utils.atomic_dir(export_dir, **_replacing(overwrite)) as stage:
    info, paths = write_parts(stage)
    info = {**info, FILES: {name: _sha256(os.path.join(stage, name)) for name in _files(stage)}}
    with open(os.path.join(stage, INFO_FILE), "w", encoding="utf-8") as f:  # last: the folder is complete
      f.write(json.dumps(info, indent=2) + "\n")
  return dict(_moved(paths, stage, export_dir), info=os.path.join(export_dir, INFO_FILE))


def check_replaceable(export_dir, overwrite):
  """Raises errors.UserError unless `write(export_dir, overwrite, ...)` may write there (before a long run)."""
  io_utils.check_replaceable(export_dir, **_replacing(overwrite))


def read_info(export_dir):
  """export_info.json of `export_dir`, as a dict (its fields unchecked: the loader's).

  Raises:
    FileNotFoundError: no such folder. PermissionError: an unreadable one. errors.UserError: no export_info.json (an
      export's last file), or one that does not read as a JSON object.
  """
  if not os.path.isdir(export_dir):
    raise errors.missing_file("no such export folder", export_dir)
  os.listdir(export_dir)  # an unreadable export folder: the PermissionError names it
  path = os.path.join(export_dir, INFO_FILE)
  if not os.path.isfile(path):
    raise errors.UserError(f"not a complete export: no {INFO_FILE}, which an export writes last "
                           "(SentenceEncoder.export, run_flow.py --export_dir); export it again", export_dir)
  return io_utils.read_json_object(path, f"no {INFO_FILE}")


def verify(export_dir, info):
  """Checks that every file `info` (read_info's) lists is in `export_dir` with its SHA-256.

  Raises:
    errors.UserError: no list of files (naming export_info.json), a file missing (naming the folder and the
      file), or changed (naming the file).
  """
  files = info.get(FILES)
  if not isinstance(files, dict) or not files or not all(
      isinstance(d, str) and _DIGEST.fullmatch(d) and _inside(n) for n, d in files.items()):
    raise errors.UserError(f"'{FILES}' must list the export's files with their SHA-256; export it again",
                           os.path.join(export_dir, INFO_FILE))
  for name, digest in sorted(files.items()):
    path = os.path.join(export_dir, name)
    if not os.path.isfile(path):
      raise errors.UserError(f"not a complete export: {name} is missing (listed in {INFO_FILE}); export it again",
                             export_dir)
    if _sha256(path) != digest:
      raise errors.UserError(f"changed or damaged since it was exported: its SHA-256 is not the one {INFO_FILE} "
                             "records; export it again", path)


def holds(info, part):
  """Whether the export `info` describes holds `part` (a folder such as "search/1"): a file of it is listed."""
  return any(name.startswith(part + "/") for name in info[FILES])


def _replacing(overwrite):
  """io_utils.atomic_dir's rule for an export: with `overwrite`, an export may be replaced; without, nothing."""
  if overwrite:
    return {"own": OWN, "remedy": "remove it"}
  return {"own": (), "remedy": "pass overwrite=True to replace an export"}


def _files(folder):
  """The relative paths ("/"-separated) of every file under `folder`, sorted (io_utils.relative_paths less its
  folders)."""
  return [path for path in io_utils.relative_paths(folder) if not path.endswith("/")]


def _inside(name):
  """Whether `name` is a relative path below the folder (no "..", not absolute)."""
  return isinstance(name, str) and name and not name.startswith("/") and ".." not in name.split("/")


def _sha256(path):
  """The SHA-256 hex digest of a file, read a megabyte at a time (hashlib.file_digest needs Python 3.11)."""
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
      digest.update(chunk)
  return digest.hexdigest()


def _moved(paths, stage, export_dir):
  """`paths` (str or dicts of them) under `stage` -> the same under `export_dir`."""
  if isinstance(paths, dict):
    return {key: _moved(value, stage, export_dir) for key, value in paths.items()}
  return os.path.join(export_dir, os.path.relpath(paths, stage))
