"""Second names for a flag: the original BERT-flow's (and this project's older) names, kept so that their scripts
and flagfiles still run. An alias sets its canonical flag; --help lists it only under "Accepted aliases".

  aliases.define_alias("sentence_embedding_type", "pooling")       # after --pooling is defined
  name = aliases.given_name(FLAGS, "pooling")                       # "sentence_embedding_type" if that was typed

Unlike absl's DEFINE_alias, a bad value given through an alias is reported under the name that was typed
(`flag --batch_size=abc: ...`), so that the one-line error points at the user's own text.
"""
from absl import flags


class _Alias(flags.Flag):
  """A flag whose value is its canonical flag's: parsing it parses and sets the canonical flag."""

  def __init__(self, canonical, name):
    self.canonical = canonical
    super().__init__(canonical.parser, canonical.serializer, name, canonical.default,
                     f"Alias for --{canonical.name}.", boolean=canonical.boolean)

  def parse(self, argument):
    value = self._parse(argument)  # a parse error names this flag, the one typed
    self.canonical.value = value
    self.canonical.present += 1
    self.canonical.using_default_value = False
    self.present += 1

  def _parse_from_default(self, value):
    return value  # already the canonical flag's parsed default

  @property
  def value(self):
    return self.canonical.value

  @value.setter
  def value(self, value):
    self.canonical.value = value

  def serialize(self):
    return ""  # flags_into_string: the canonical flag writes the value once (empty lines are skipped when read)


def define_alias(name, canonical, flag_values=flags.FLAGS):
  """Defines --`name` as a second name of the already defined --`canonical`.

  Raises:
    flags.UnrecognizedFlagError: no flag `canonical`. flags.DuplicateFlagError: `name` is taken.
  """
  if canonical not in flag_values:
    raise flags.UnrecognizedFlagError(canonical)
  flags.DEFINE_flag(_Alias(flag_values[canonical], name), flag_values)


def define_aliases(names, flag_values=flags.FLAGS):
  """define_alias for each (alias, canonical) item of the dict `names`."""
  for name, canonical in names.items():
    define_alias(name, canonical, flag_values)


def is_alias(flag):
  return isinstance(flag, _Alias)


def aliases_of(flag_values):
  """Alias name -> canonical name, for every alias in `flag_values`."""
  return {name: flag.canonical.name for name, flag in flag_values._flags().items()  # pylint: disable=protected-access
          if isinstance(flag, _Alias) and name == flag.name}


def given_name(flag_values, canonical):
  """The name under which --`canonical` was set on the command line: an alias's if one was typed, else its own.

  For error messages that should name what the user wrote.
  """
  for name, target in aliases_of(flag_values).items():
    if target == canonical and flag_values[name].present:
      return name
  return canonical
