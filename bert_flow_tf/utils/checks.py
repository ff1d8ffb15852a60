"""Range checks of settings, one sentence each: "<name> must be <range>, got <value>".

The Python API raises them as ValueError; the command lines run the same checks while their flags are parsed
(`bert_flow_tf.cli.config_flags`, name None: absl's message already names the flag typed), so a bad value reads
the same either way.

  checks.positive_int("batch_size", 0)       # ValueError: batch_size must be an integer >= 1, got 0

A config dataclass names a field's check in the field's metadata (`field(default=..., metadata=checked(...))`);
`check_fields(config)` in its __post_init__ runs them all, and its flags run each while parsing.
"""
import dataclasses
import math
import numbers


def refuse(name, rule, value):
  """Raises ValueError "<name> must be <rule>, got <value>" (without the name when it is None)."""
  raise ValueError(f"{name + ' ' if name else ''}must be {rule}, got {value!r}")


def _is_number(value):
  return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def int_at_least(low):
  """A check: an integer >= `low` (bool refused)."""

  def check(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
      refuse(name, f"an integer >= {low}", value)
    return value

  return check


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def positive_number(name, value):
  """A check: a finite number > 0."""
  if not _is_number(value) or value <= 0:
    refuse(name, "a finite number > 0", value)
  return value


def non_negative_number(name, value):
  """A check: a finite number >= 0."""
  if not _is_number(value) or value < 0:
    refuse(name, "a finite number >= 0", value)
  return value


def one_of(choices):
  """A check: one of `choices`."""

  def check(name, value):
    if value not in choices:
      refuse(name, f"one of {', '.join(map(str, choices))}", value)
    return value

  return check


def each(check):
  """A check of a list or tuple: `check` on each item."""

  def check_each(name, values):
    for value in values:
      check(name, value)
    return values

  return check_each


def checked(check):
  """The metadata of a dataclass field that `check_fields` (and the field's flag) checks with `check`."""
  return {"check": check}


def field_check(field):
  """The check of a dataclasses.Field, or None."""
  return field.metadata.get("check")


def check_fields(config):
  """Runs each field's check on its value (a None value passes: unset). Raises ValueError naming the field."""
  for field in dataclasses.fields(config):
    check, value = field_check(field), getattr(config, field.name)
    if check is not None and value is not None:
      check(field.name, value)
