"""File helpers: strict UTF-8 line reading with file:line errors, and atomic writes (tmp file + rename)."""
import codecs
import contextlib
import errno
import os
import shutil
import tempfile

from bert_flow_tf.utils import errors


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


@contextlib.contextmanager
def atomic_path(path):
  """Yields a temporary path beside `path`; renames it onto `path` only if the block succeeds.

  The temporary file is created on entry, so an unwritable folder fails before the block's work. A process killed
  inside the block leaves at most a hidden `.tmp-*` file beside `path`, never a partial `path`.
  """
  directory = os.path.dirname(os.path.abspath(path))
  if os.path.isdir(path):
    raise IsADirectoryError(errno.EISDIR, "the output is a directory, not a file", str(path))
  if os.path.exists(directory) and not os.path.isdir(directory):
    raise NotADirectoryError(errno.ENOTDIR, "the output's folder is a file", directory)
  os.makedirs(directory, exist_ok=True)
  try:
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.splitext(path)[1])
  except PermissionError as e:  # name the folder, not the temporary file's random name
    raise PermissionError(e.errno, "no permission to write in the output's folder", directory) from e
  os.close(fd)
  try:
    yield tmp
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)


@contextlib.contextmanager
def atomic_dir(path):
  """Yields a temporary directory beside the directory `path`; puts it in place of `path` only if the block
  succeeds (an existing `path` is moved aside, swapped out, then deleted). A process killed inside the block leaves
  at most a hidden `.tmp-*` directory beside `path`, never a partial `path`.
  """
  parent = os.path.dirname(os.path.abspath(path))
  os.makedirs(parent, exist_ok=True)
  tmp = tempfile.mkdtemp(dir=parent, prefix=".tmp-")
  try:
    yield tmp
    if os.path.exists(path):
      old = tmp + "-old"
      os.replace(path, old)
      os.replace(tmp, path)
      shutil.rmtree(old)
    else:
      os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      shutil.rmtree(tmp)


def write_text(path, text):
  """Writes UTF-8 text, atomically."""
  with atomic_path(path) as tmp:
    with open(tmp, "w", encoding="utf-8") as f:
      f.write(text)
