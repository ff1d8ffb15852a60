"""Output folders checked before any work: a run that cannot write its results ends before the first sentence is
embedded, not after the embedding and the fit.

  outputs.check_writable(FLAGS.export_dir, "--export_dir")    # in main, before the model is loaded
"""
import errno
import os
import tempfile


def check_writable(path, what):
  """Raises OSError (its message naming `what`, its filename the folder at fault) unless `path` is, or can be made
  as, a folder that files can be written in.

  Probes the nearest existing folder on `path` with a temporary folder removed at once; creates nothing else.

  Args:
    path: str, the output folder (it may not exist yet).
    what: str, how the user named it, e.g. "--export_dir" or "the output folder".
  """
  existing = first_missing = os.path.abspath(path)
  while not os.path.lexists(existing):
    first_missing, existing = existing, os.path.dirname(existing)
  if not os.path.isdir(existing):
    raise OSError(errno.ENOTDIR, f"{what} cannot be made here: not a folder", existing)
  try:
    os.rmdir(tempfile.mkdtemp(prefix=".write-probe-", dir=existing))
  except OSError as e:
    raise OSError(e.errno, f"{what} cannot be written: {e.strerror}", first_missing) from e
