"""How the entry points end on an expected error: one line on stderr, exit status 1. `run` replaces app.run:

  if __name__ == "__main__":
    one_line_errors.run(main)

While the flags are parsed: a bad flag value, an unknown flag, a missing flagfile or a flagfile line that is not a
flag. In main: `errors.UserError`, app.UsageError and OSError (a missing, unreadable or unwritable file). Each
ends as `error: <what> (<file:line, file or --flag>)` (see `errors.one_line`). Anything else is a bug and raises
with its traceback. absl's `-v 1` (`--verbosity=1`) shows the traceback of an expected error too.

With `help_groups`, `--help` (also -h, -help, --helpshort) prints the entry point's key flags in those groups
(`flag_help.help_text`) and `--helpfull` all of its flags, then absl's own (`flag_help.full_help_text`), both on
stdout with exit status 0 (absl's exit 1).

`run` also keeps Python's cyclic garbage collector off the objects that importing TensorFlow makes (`gc.freeze`
before main, and again at exit): its full collections walk all of them and would never free one. On a 2-core CPU
that is about 1 s at exit alone (`bench/startup.py`).
"""
import atexit
import functools
import gc
import os
import sys

from absl import app
from absl import flags
from absl import logging

from bert_flow_tf.cli import flag_help
from bert_flow_tf.utils import errors

_FLAG_ERRORS = (app.UsageError, flags.Error)
_FLAGFILE_PREFIXES = ("--flagfile=", "-flagfile=")
_HELP = ("--help", "-help", "-h", "--helpshort", "-helpshort", "-?")
_HELPFULL = ("--helpfull", "-helpfull")


def _exit(line):
  sys.stdout.flush()
  sys.stderr.write(line + "\n")
  sys.exit(1)


def _check_flagfile(path, seen=()):
  """Raises UserError at the first line of `path` (or a flagfile it includes) that absl would not read as a
  flag (absl passes such a line on as a positional argument); skips blank lines and # or // comments."""
  if not os.path.isfile(path):
    raise errors.missing_file("flagfile not found", path)
  if os.path.realpath(path) in seen:
    return
  with open(path, encoding="utf-8") as f:
    lines = f.read().splitlines()
  for number, line in enumerate(lines, start=1):
    text = line.strip()
    if not text or text.startswith(("#", "//")):
      continue
    if not text.startswith("-"):
      raise errors.UserError(f"flagfile line is not a flag: {text!r} (write --name=value)", f"{path}:{number}")
    if text.startswith(_FLAGFILE_PREFIXES):
      _check_flagfile(text.split("=", 1)[1], seen + (os.path.realpath(path),))


def _help_asked(argv):
  """"help", "helpfull" or None: what the command line (before a `--`) asks for."""
  for arg in argv[1:]:
    if arg == "--":
      break
    if arg in _HELP:
      return "help"
    if arg in _HELPFULL:
      return "helpfull"
  return None


def parse_flags(argv, help_groups=None, doc="", key_flags=None, known_only=False):
  """app.run's flags_parser: absl's parsing, with one-line errors (the command line's flagfiles checked first).

  With `help_groups` and `key_flags` (see `flag_help.help_text`), --help and --helpfull print and exit 0. With
  `known_only`, the arguments that are not our flags are passed on to main (the Beam command hands them to Beam).
  """
  asked = _help_asked(argv) if help_groups is not None else None
  if asked:
    text = (flag_help.help_text(flags.FLAGS, help_groups, doc, key_flags) if asked == "help"
            else flag_help.full_help_text(flags.FLAGS, help_groups, doc))
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
    sys.exit(0)
  try:
    for arg in argv[1:]:
      if arg == "--":
        break
      if arg.startswith(_FLAGFILE_PREFIXES):
        _check_flagfile(arg.split("=", 1)[1])
    return flags.FLAGS(argv, known_only=known_only)
  except (errors.UserError, OSError, flags.Error) as e:
    _exit(errors.one_line(e, _FLAG_ERRORS))


def run(main, help_groups=None, doc="", key_flags=None, known_only=False):
  """app.run(main) with expected errors told in one line (see the module notes).

  Args:
    main: called with the remaining argv, as by app.run.
    help_groups: optional sequence of (title, flag names): --helpfull lists these (`flag_help.full_help_text`),
      exit 0.
    doc: the entry point's docstring, whose first paragraph heads --help.
    key_flags: optional names of the flags --help lists (in their groups); None: all of them.
    known_only: bool, arguments that are not our flags go to main instead of being refused.
  """

  def main_with_one_line_errors(argv):
    try:
      return main(argv)
    except Exception as e:  # pylint: disable=broad-except
      line = errors.one_line(e, _FLAG_ERRORS)
      if line is None or logging.get_verbosity() >= 1:
        raise
      _exit(line)

  gc.freeze()                  # everything imported so far lives as long as the process
  atexit.register(gc.freeze)   # the last collection at exit then skips what main made too
  app.run(main_with_one_line_errors, flags_parser=functools.partial(parse_flags, help_groups=help_groups, doc=doc,
                                                                          key_flags=key_flags, known_only=known_only))
