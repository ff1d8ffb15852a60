"""File helpers: strict UTF-8 line and JSON reading with file:line errors, and atomic writes (tmp file + rename).

The write rules (what a folder writer may replace, what a kill leaves, the modes) are docs/security.md's.
"""
import codecs
import contextlib
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
import socket

import numpy as np

from bert_flow_tf.utils import errors

# Temporary names carry the writer's pid and host, so a later writer can tell a killed writer's leftovers from a
# live one's: .tmp-<pid>-<8 hex digits of the host name's hash>-<random>[suffix or "-old"].
_TMP_PREFIX = ".tmp-"
_HOST = hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]
_TMP_NAME = re.compile(r"\.tmp-(\d+)-([0-9a-f]{8})-")
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2  # renameat2's "relative to the working directory" and "swap the two names"


def iter_lines(path):
  """Streams a UTF-8 text file as (line number, line without its line end ("\\n" or "\\r\\n")), 1-based.

  One line is decoded at a time, so a large file is never held whole.

  A UTF-8 byte order mark at the start of the file is dropped. Empty and whitespace-only lines are kept.

  Raises:
    FileNotFoundError / IsADirectoryError naming the path; errors.UserError naming file:line for bytes that are
    not UTF-8 and for NUL characters (a binary or UTF-16 file).
  """
  if os.path.isdir(path):
    raise IsADirectoryError(errno.EISDIR, "a directory, not a text file", str(path))
  if not os.path.isfile(path):
    raise errors.missing_file("input file not found", path)
  with open(path, "rb") as f:
    for number, line in enumerate(f, start=1):  # binary iteration splits on b"\n" only
      if number == 1:
        line = line.removeprefix(codecs.BOM_UTF8)
      try:
        text = line.decode("utf-8").removesuffix("\n").removesuffix("\r")
      except UnicodeDecodeError as e:
        raise errors.UserError(f"not valid UTF-8 (byte {line[e.start]:#04x} at column {e.start + 1})",
                               f"{path}:{number}") from e
      if "\0" in text:
        raise errors.UserError(f"NUL character at column {text.index(chr(0)) + 1} (a binary or UTF-16 file?)",
                               f"{path}:{number}")
      yield number, text


def read_lines(path):
  """Reads a UTF-8 text file as a list of lines without their line ends ("\\n" or "\\r\\n"); as `iter_lines`.

  Raises:
    as `iter_lines`.
  """
  return [line for _, line in iter_lines(path)]


def read_json_object(path, missing):
  """A JSON file holding an object, as a dict.

  Raises:
    FileNotFoundError naming `path` with the message `missing`; errors.UserError naming `path` (and the line, for a
    syntax error) when it is not UTF-8, not JSON, too deeply nested, or not an object.
  """
  if not os.path.isfile(path):
    raise errors.missing_file(missing, path)
  try:
    with open(path, encoding="utf-8") as f:
      value = json.load(f)
  except json.JSONDecodeError as e:
    raise errors.UserError(f"not valid JSON ({e.msg})", f"{path}:{e.lineno}") from e
  except (ValueError, RecursionError) as e:  # not UTF-8, an int of over 4,300 digits, nesting too deep
    raise errors.UserError(f"not valid UTF-8 JSON ({type(e).__name__}: {str(e)[:100]})", path) from e
  if not isinstance(value, dict):
    raise errors.UserError(f"expected a JSON object, got {type(value).__name__}", path)
  return value


def write_npy(path, array):
  """Writes an array as np.save does, atomically."""
  with atomic_path(path) as tmp:
    with open(tmp, "wb") as f:
      np.save(f, array)


def read_npy(path, what):
  """The array np.save wrote at `path` (read without pickle), or None when there is no such file; errors.UserError
  naming the file ("unreadable <what>") when it does not read (an empty or cut file among them)."""
  if not os.path.isfile(path):
    return None
  try:
    return np.load(path, allow_pickle=False)
  except (OSError, ValueError, EOFError) as e:  # EOFError: an empty or cut file
    raise errors.UserError(f"unreadable {what} ({str(e)[:200]})", path) from e


@contextlib.contextmanager
def atomic_path(path):
  """Yields a temporary path beside `path`; renames it onto `path` only if the block succeeds.

  The temporary file is created on entry (mode 0666 less the umask, as `path` will keep), so an unwritable folder
  fails before the block's work. A process killed inside the block leaves at most a hidden `.tmp-<pid>-*` file
  beside `path`, never a partial `path`; the next write in that folder removes it (`sweep_stale`).
  """
  directory = os.path.dirname(os.path.abspath(path))
  if os.path.isdir(path):
    raise IsADirectoryError(errno.EISDIR, "the output is a directory, not a file", str(path))
  if os.path.exists(directory) and not os.path.isdir(directory):
    raise NotADirectoryError(errno.ENOTDIR, "the output's folder is a file", directory)
  os.makedirs(directory, exist_ok=True)
  sweep_stale(directory)
  tmp = _new_tmp(directory, lambda name: os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666)),
                 os.path.splitext(path)[1])
  try:
    yield tmp
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)


@contextlib.contextmanager
def atomic_dir(path, own=(), overwrite=False, remedy="pass overwrite=True to replace it", written=None):
  """Yields a temporary directory beside the directory `path`; puts it in place of `path` only if the block
  succeeds.

  An existing `path` is replaced (the new folder and it swap names in one step, then the old one is deleted) only
  when it is empty, when it is what this writer writes (it holds `own[0]`, its marker, and nothing but names in
  `own`; with `written`, nothing but the paths the earlier write listed), or with `overwrite`; never when it is a
  symbolic link, the working directory, one of its parents, the home directory or "/". It is checked on entry,
  before the block's work, and again before the swap. A process killed at any moment leaves `path` as it was or as
  the block wrote it, and at most a hidden `.tmp-<pid>-*` directory beside it, which the next write in that folder
  removes (where the system cannot swap two names in one step, `path` is missing between two renames: see
  docs/security.md). Writers that finish at once put their folders in one after the other (each checks and
  swaps holding a lock on the parent folder), so `path` is always one writer's whole folder.

  Args:
    path: str, the directory to write.
    own: tuple of str, the names this writer puts in `path`, its marker (info file) first; () for none.
    overwrite: bool, replace a non-empty `path` whatever it holds (still never the folders above).
    remedy: str, the way out the refusal names besides another folder.
    written: None, or a function of `path` giving what an earlier write listed in it (`relative_paths`' form):
      then every file and folder under `path`, at any depth, must be one of them.

  Raises:
    errors.UserError: `path` may not be replaced (one line naming it and how to go on).
  """
  check_replaceable(path, own, overwrite, remedy, written)
  parent = os.path.dirname(os.path.abspath(path))
  os.makedirs(parent, exist_ok=True)
  sweep_stale(parent)
  tmp = _new_tmp(parent, lambda name: os.mkdir(name, 0o777))
  try:
    yield tmp
    old = tmp + "-old"
    with _locked(parent):
      check_replaceable(path, own, overwrite, remedy, written)  # the block may have run for minutes; another writer finished?
      if not os.path.lexists(path):
        os.replace(tmp, path)
      elif not _exchange(tmp, path):  # no one-step swap here: path is missing between the two renames
        os.replace(path, old)
        os.replace(tmp, path)
    if os.path.lexists(old):
      _remove(old)
  finally:
    if os.path.exists(tmp):  # the block failed, or (swapped) the old folder
      shutil.rmtree(tmp)


def check_replaceable(path, own=(), overwrite=False, remedy="pass overwrite=True to replace it", written=None):
  """Raises errors.UserError unless `atomic_dir(path, own, overwrite, remedy, written)` may put a new folder at
  `path`; the refusal names the first file or folder that is not the writer's."""
  real, cwd = os.path.realpath(path), os.path.realpath(os.getcwd())
  if real in (os.path.realpath(os.path.expanduser("~")), os.path.realpath(os.sep)) or cwd == real or \
      cwd.startswith(real.rstrip(os.sep) + os.sep):
    raise errors.UserError("refused: the working directory, one of its parents, the home directory or / is never "
                           "replaced; give a new folder", path)
  if os.path.islink(path):  # as shutil.rmtree, which refuses to delete through a link
    raise errors.UserError(f"is a symbolic link (to {os.readlink(path)}), which is never replaced or followed; give "
                           "the folder it names, or a new folder", path)
  if not os.path.lexists(path):
    return
  if not os.path.isdir(path):
    raise errors.UserError("exists and is not a folder; remove it or give a new folder", path)
  entries = sorted(os.listdir(path))
  if not entries or overwrite:
    return
  if own and own[0] in entries and set(entries) <= set(own):
    listed = None if written is None else set(written(path))
    stray = None if listed is None else next((p for p in relative_paths(path) if p not in listed), None)
    if stray is None:
      return
    raise errors.UserError(f"not replaced: it holds {stray}, which the earlier write did not list in {own[0]}; "
                           f"{remedy}, or give another folder", path)
  foreign = [e for e in entries if e not in own] if own and own[0] in entries else entries
  shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
  mine = f", not only what this writer writes ({own[0]} and its files)" if own else ""
  raise errors.UserError(f"not replaced: it holds {shown}{mine}; {remedy}, or give another folder", path)


def relative_paths(folder):
  """Every file and folder under `folder`, at any depth, as sorted paths relative to it: "/"-separated, a folder's
  ending in "/" (a link is listed as what it is, never followed)."""
  found = []
  for parent, folders, files in os.walk(folder):  # a link to a folder is in `folders`, and not walked
    base = os.path.relpath(parent, folder).replace(os.sep, "/")
    for name in folders + files:
      entry = os.path.join(parent, name)
      found.append(("" if base == "." else base + "/") + name +
                   ("/" if os.path.isdir(entry) and not os.path.islink(entry) else ""))
  return sorted(found)


def sweep_stale(directory):
  """Removes the `.tmp-<pid>-*` files and folders in `directory` that writers on this host left when they were
  killed (their process is gone); another live process's are kept."""
  for name in os.listdir(directory):
    if not left_by_dead_writer(name):
      continue
    try:
      _remove(os.path.join(directory, name))
    except OSError:  # another writer swept it first, or it is not ours to remove: best effort
      pass


def tmp_name(suffix=""):
  """A new temporary file name for this process: .tmp-<pid>-<host>-<random><suffix> (no folder)."""
  return f"{_TMP_PREFIX}{os.getpid()}-{_HOST}-{secrets.token_hex(4)}{suffix}"


def left_by_dead_writer(name):
  """Whether the file name `name` (no folder) is a `tmp_name` of a writer on this host whose process is gone."""
  match = _TMP_NAME.match(name)
  return bool(match) and match.group(2) == _HOST and not _alive(int(match.group(1)))


def _new_tmp(directory, create, suffix=""):
  """Creates `directory`/`tmp_name(suffix)` with `create(name)` (modes from the umask)."""
  while True:
    name = os.path.join(directory, tmp_name(suffix))
    try:
      create(name)
      return name
    except FileExistsError:
      continue
    except PermissionError as e:  # name the folder, not the temporary file's random name
      raise PermissionError(e.errno, "no permission to write in the output's folder", directory) from e


@contextlib.contextmanager
def _locked(directory):
  """Holds an exclusive lock (flock) on `directory` for the block; where its file system has no such locks, the
  block runs unlocked."""
  fd = os.open(directory, os.O_RDONLY)  # readable: sweep_stale has listed it
  try:
    with contextlib.suppress(OSError):
      fcntl.flock(fd, fcntl.LOCK_EX)
    yield
  finally:
    os.close(fd)  # releases the lock


def _exchange(a, b):
  """Swaps the names of the paths `a` and `b` in one step (Linux's renameat2 with RENAME_EXCHANGE, since 3.15);
  False, changing nothing, where the system or its file system cannot."""
  renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
  if renameat2 is None:
    return False
  if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
    return True
  code = ctypes.get_errno()
  if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
    return False
  raise OSError(code, os.strerror(code), b)


def _alive(pid):
  """Whether process `pid` exists on this host (this process counts as alive)."""
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:  # another user's process
    return True
  return True


def _remove(path):
  if os.path.isdir(path) and not os.path.islink(path):
    shutil.rmtree(path)
  else:
    os.remove(path)


def write_text(path, text):
  """Writes UTF-8 text, atomically."""
  with atomic_path(path) as tmp:
    with open(tmp, "w", encoding="utf-8") as f:
      f.write(text)
