"""File helpers: strict UTF-8 line reading with file:line errors, and atomic writes (tmp file + rename)."""
import contextlib
import os
import tempfile

import numpy as np


def iter_lines(path):
  """Streams a UTF-8 text file as (line number, line without its line end ("\\n" or "\\r\\n")), 1-based.

  One line is decoded at a time, so a large file is never held whole.

  Raises:
    FileNotFoundError naming the file; ValueError naming file:line for bytes that are not UTF-8.
  """
  if not os.path.isfile(path):
    raise FileNotFoundError(f"input file not found: {path}")
  with open(path, "rb") as f:
    for number, line in enumerate(f, start=1):  # binary iteration splits on b"\n" only
      try:
        yield number, line.decode("utf-8").removesuffix("\n").removesuffix("\r")
      except UnicodeDecodeError as e:
        raise ValueError(f"{path}:{number}: not valid UTF-8 (byte {line[e.start]:#04x} at column {e.start + 1})") from e


def read_lines(path):
  """Reads a UTF-8 text file as a list of lines without their line ends ("\\n" or "\\r\\n").

  Raises:
    FileNotFoundError naming the file; ValueError naming file:line for bytes that are not UTF-8.
  """
  return [line for _, line in iter_lines(path)]


@contextlib.contextmanager
def atomic_path(path):
  """Yields a temporary path beside `path`; renames it onto `path` only if the block succeeds."""
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.splitext(path)[1])
  os.close(fd)
  try:
    yield tmp
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)


def save_npy(path, array):
  """np.save, atomically."""
  with atomic_path(path) as tmp:
    with open(tmp, "wb") as f:
      np.save(f, array)


def write_text(path, text):
  """Writes UTF-8 text, atomically."""
  with atomic_path(path) as tmp:
    with open(tmp, "w", encoding="utf-8") as f:
      f.write(text)
