"""The one way the commands define flags: one flag per field of a config dataclass (its name, its default and, as
help, its entry in the class docstring's Attributes section), each checked while it is parsed, so that a config
and its command line cannot drift apart and a bad value ends the command before any work.

  config_flags.define_config_flags(siamese.SiameseConfig, skip=...)   # at the entry point's top
  config = config_flags.config_from_flags(siamese.SiameseConfig, FLAGS, model=...)   # in main

A field's flag may have another name (`names`, e.g. the field train_batch_size as --train_batch_pairs); give both
functions the same `names`. A field whose metadata names a check (`utils.checks.checked`) has its flag checked by
it; `check_flag` adds a check to a flag defined otherwise (the library's check: the same sentence as the Python
API's ValueError, after absl's "flag --name=value:" naming what was typed, an alias included).
"""
import dataclasses
import re

from absl import flags

from bert_flow_tf.cli import aliases
from bert_flow_tf.utils import checks
from bert_flow_tf.utils import errors

# Field type -> flag kind; a tuple field is a comma-separated list flag.
_DEFINERS = {bool: flags.DEFINE_bool, int: flags.DEFINE_integer, float: flags.DEFINE_float,
             str: flags.DEFINE_string, tuple: flags.DEFINE_list}
_ENTRY = re.compile(r"^(\s*)([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*):\s*(.*)$")


def attribute_docs(cls):
  """Field name -> its text in the Google-style "Attributes:" section of `cls.__doc__`.

  An entry may name several fields ("do_train, do_eval: bool."); they share its text. Continuation lines (indented
  deeper than the entry) are joined with single spaces.
  """
  lines = (cls.__doc__ or "").splitlines()
  starts = [i for i, line in enumerate(lines) if line.strip() == "Attributes:"]
  if not starts:
    return {}
  section_indent = len(lines[starts[0]]) - len(lines[starts[0]].lstrip())
  docs, current, entry_indent = {}, None, None
  for line in lines[starts[0] + 1:]:
    if not line.strip():
      continue
    indent = len(line) - len(line.lstrip())
    if indent <= section_indent:
      break
    match = _ENTRY.match(line)
    if match and (entry_indent is None or indent == entry_indent):
      entry_indent = indent
      current = [match.group(3).strip()]
      for name in match.group(2).split(","):
        docs[name.strip()] = current
    elif current is not None:
      current.append(line.strip())
  return {name: " ".join(parts) for name, parts in docs.items()}


class _CheckedParser(flags.ArgumentParser):
  """A flag's parser, then a check of the parsed value (`check(None, value)`, see utils/checks.py)."""

  def __init__(self, parser, check):
    super().__init__()
    self.parser, self.check = parser, check

  def parse(self, argument):
    value = self.parser.parse(argument)
    if value is not None:
      self.check(None, value)  # a ValueError: absl reports "flag --<typed>=<argument>: <its sentence>"
    return value

  def flag_type(self):
    return self.parser.flag_type()


def check_flag(flag_values, name, check):
  """Checks --`name` (defined, not an alias yet) with `check(None, value)` whenever it is parsed.

  `check` is a utils/checks.py check (or any callable raising ValueError); a list flag's check gets the list.
  """
  flag = flag_values[name]
  flag.parser = _CheckedParser(flag.parser, check)


def define_config_flags(cls, skip=(), defaults=None, names=None, flag_values=flags.FLAGS, only=None):
  """Defines one flag per field of the dataclass `cls`, except those in `skip` (or only those in `only`).

  Args:
    cls: a dataclass whose fields are typed bool, int, float, str or tuple (of str) and documented in its
      Attributes section.
    skip: names of fields that get no flag (the caller fills them, e.g. from the model flags).
    defaults: dict, field name -> the flag's default where it differs from the field's. Fields without a
      default get None (mark their flags required).
    names: dict, field name -> its flag's name where the two differ.
    flag_values: where to define them.
    only: names of the only fields that get a flag, or None (every field not in `skip`).

  Raises:
    TypeError: a field of another type. ValueError: a field without an Attributes entry, or an unknown name in
      `skip` / `defaults`.
  """
  defaults = dict(defaults or {})
  names = dict(names or {})
  fields = {f.name for f in dataclasses.fields(cls)}
  unknown = sorted((set(skip) | set(defaults) | set(names) | set(only or ())) - fields)
  if unknown:
    raise ValueError(f"{cls.__name__} has no field(s) {', '.join(unknown)}; its fields: {', '.join(sorted(fields))}")
  docs = attribute_docs(cls)
  for field in dataclasses.fields(cls):
    if field.name in skip or (only is not None and field.name not in only):
      continue
    if field.type not in _DEFINERS:
      raise TypeError(f"{cls.__name__}.{field.name}: type {field.type!r} has no flag kind; allowed: "
                      f"{', '.join(t.__name__ for t in _DEFINERS)}")
    if field.name not in docs:
      raise ValueError(f"{cls.__name__}.{field.name} has no entry in the docstring's Attributes section")
    default = defaults.get(field.name, None if field.default is dataclasses.MISSING else field.default)
    if field.type is tuple and default is not None:
      default = list(default)
    name = names.get(field.name, field.name)
    _DEFINERS[field.type](name, default, docs[field.name], flag_values=flag_values)
    if checks.field_check(field) is not None:
      check_flag(flag_values, name, checks.field_check(field))


def config_from_flags(cls, flag_values, names=None, only=None, **values):
  """`cls(**values, <every other field>=<its flag's value>)`; list flags become tuples.

  `names`, `only`: as given to `define_config_flags` (the fields outside `only` keep their defaults).

  Raises:
    errors.UserError naming the flags of the fields that a ValueError of `cls` names (by the alias typed, if
      one was).
  """
  kwargs = dict(values)
  names = dict(names or {})
  for field in dataclasses.fields(cls):
    if field.name not in kwargs and (only is None or field.name in only):
      value = flag_values[names.get(field.name, field.name)].value
      kwargs[field.name] = tuple(value) if field.type is tuple and value is not None else value
  try:
    return cls(**kwargs)
  except ValueError as e:  # the config's checks name its fields: name their flags
    named = [f"--{aliases.given_name(flag_values, names.get(f.name, f.name))}" for f in dataclasses.fields(cls)
             if re.search(rf"\b{f.name}\b", str(e))]
    raise errors.UserError(str(e), ", ".join(named) or None) from e
