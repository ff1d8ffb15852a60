"""`--help` of an entry point: its key flags in named groups, each with its real default, then the accepted
aliases, on one screen; `--helpfull`: every flag of the entry point, then absl's own (logging, debugging).

  GROUPS = (("Model", ("model_dir", ...)), ("Outputs", (...)), ...)
  KEY_FLAGS = ("model_dir", "output_dir", ...)               # what --help shows (absl's "key flags")
  print(flag_help.help_text(FLAGS, GROUPS, __doc__, KEY_FLAGS))   # --help
  print(flag_help.full_help_text(FLAGS, GROUPS, __doc__))          # --helpfull

absl's own `--help` lists every flag of every module in one list (with absl's logging flags) and exits with
status 1; `one_line_errors.run(main, help_groups=..., key_flags=...)` prints these texts instead and exits 0.
"""
import textwrap

from bert_flow_tf.cli import aliases

_WIDTH = 100
FOOTER = ("Also: --flagfile=FILE reads flags from FILE, one --name=value a line (later flags override it); "
          "--helpfull lists every flag, absl's own (logging, -v) included.")
ABSL_MODULES = ("absl.logging", "absl.app")  # absl's own flags, listed by --helpfull


def check_groups(flag_values, groups):
  """Raises ValueError when a group names an undefined flag or an alias, or a flag is in two groups."""
  seen = {}
  for title, names in groups:
    for name in names:
      if name not in flag_values:
        raise ValueError(f"help group {title!r} names --{name}, which is not defined")
      if aliases.is_alias(flag_values[name]):
        raise ValueError(f"help group {title!r} names the alias --{name}; name its flag instead")
      if name in seen:
        raise ValueError(f"--{name} is in the help groups {seen[name]!r} and {title!r}")
      seen[name] = title


def _default(flag):
  value = flag.default
  if value is None:
    return "unset"
  if flag.boolean:
    return "true" if value else "false"
  if isinstance(value, (list, tuple)):
    return ",".join(str(v) for v in value) or "''"
  return repr(value) if isinstance(value, str) and not value else str(value)


def _entry(flag):
  head = f"  --{'[no]' if flag.boolean else ''}{flag.name} (default: {_default(flag)})"
  body = textwrap.fill(" ".join(str(flag.help).split()), _WIDTH, initial_indent=" " * 6,
                       subsequent_indent=" " * 6)
  return f"{head}\n{body}"


def help_text(flag_values, groups, doc="", key_flags=None):
  """The --help text: the first paragraph of `doc`, the groups' flags (only `key_flags`, if given), the aliases, the
  FOOTER.

  Args:
    flag_values: the parsed or unparsed FlagValues that defines every named flag.
    groups: sequence of (title, sequence of flag names); see `check_groups`.
    doc: the entry point's docstring: its first paragraph heads the help, with the next one if that is indented
      (the usage examples).
    key_flags: names of the flags to list (each in a group), or None for all; the rest are counted.
  """
  check_groups(flag_values, groups)
  grouped = [name for _, names in groups for name in names]
  unknown = sorted(set(key_flags or ()) - set(grouped))
  if unknown:
    raise ValueError(f"key flags {unknown} are in no help group")
  paragraphs = doc.strip("\n").split("\n\n") if doc.strip() else []
  parts = paragraphs[:1] + [p for p in paragraphs[1:2] if p.startswith(" ")]
  for title, names in groups:
    shown = [name for name in names if key_flags is None or name in key_flags]
    if shown:
      parts.append(f"{title}:\n" + "\n".join(_entry(flag_values[name]) for name in shown))
  if key_flags is not None:
    parts.append(f"{len(grouped) - len(key_flags)} more flags: --helpfull lists them all.")
  alias_names = aliases.aliases_of(flag_values)
  if alias_names:
    width = max(len(name) for name in alias_names) + 2
    lines = [f"  --{name:<{width}} = --{target}" for name, target in sorted(alias_names.items())]
    parts.append("Accepted aliases (the original BERT-flow's names, and older names of this project):\n"
                 + "\n".join(lines))
  parts.append(textwrap.fill(FOOTER, _WIDTH))
  return "\n\n".join(parts) + "\n"


def full_help_text(flag_values, groups, doc=""):
  """The --helpfull text: `help_text` of every flag, then absl's own flags (ABSL_MODULES)."""
  absl_parts = [flag_values.module_help(module) for module in ABSL_MODULES
                if module in flag_values.flags_by_module_dict()]
  return help_text(flag_values, groups, doc) + "\nabsl's own flags:\n" + "\n".join(absl_parts) + "\n"
