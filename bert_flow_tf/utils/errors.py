"""User errors: what went wrong and where (file:line, file or --flag), told in one line.

A reader or loader that finds bad input raises `UserError(what, where)`; the entry points (see
`bert_flow_tf.cli.one_line_errors`) print it, and the other expected errors that `one_line` knows, as

  error: <what> (<where>)

on stderr instead of a traceback. `UserError` is a ValueError, so code that catches ValueError still does.
"""
import errno
import re

# "--name=...", "flag --name: ..." or absl's "Unknown command line flag 'name'".
_FLAG = re.compile(r"(?<![\w-])--?([A-Za-z]\w*)|command line flag '([A-Za-z]\w*)'")


class UserError(ValueError):
  """Bad input that the user can fix: a malformed file, a model or flow that does not fit, a bad setting.

  Args:
    what: str, what is wrong, e.g. "not valid UTF-8 (byte 0xff at column 1)".
    where: str or None, where: "path:line", "path" or "--flag".

  str() reads "<where>: <what>", as compilers put it.
  """

  def __init__(self, what, where=None):
    super().__init__(f"{where}: {what}" if where else what)
    self.what, self.where = what, where


def missing_file(what, path):
  """A FileNotFoundError whose `filename` is `path` (so `one_line` names it), e.g. missing_file("no vocab", p)."""
  return FileNotFoundError(errno.ENOENT, what, str(path))


def brief(error, limit=200):
  """The first `limit` characters of an error's message, its line breaks as spaces (TensorFlow's span lines)."""
  return " ".join(str(error).split())[:limit]


def first_flag(message):
  """'--name' for the first flag a message names ('--task_name=...', "flag --batch_size=abc: ..."), or None."""
  match = _FLAG.search(message)
  return f"--{match.group(1) or match.group(2)}" if match else None


def one_line(error, flag_errors=()):
  """The one-line report of an expected error, or None for anything else (a bug: let it raise).

  Args:
    error: an exception.
    flag_errors: exception types whose message names a flag (absl's app.UsageError, flags.Error).

  Returns:
    str "error: <what> (<where>)" (no "(...)" when nothing names a place), or None.
  """
  if isinstance(error, UserError):
    what, where = error.what, error.where
  elif isinstance(error, tuple(flag_errors)):
    what, where = str(error), first_flag(str(error))
    what = what.removeprefix(f"{where}: ")  # "--flag: bad value" -> "bad value (--flag)"
  elif isinstance(error, OSError):  # missing or unreadable files, unwritable folders, a full disk
    what, where = error.strerror or str(error), error.filename
  else:
    return None
  what = " ".join(str(what).split())  # one line, whatever the message held
  return f"error: {what}" + (f" ({where})" if where else "")
