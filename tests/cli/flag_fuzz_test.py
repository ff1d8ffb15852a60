"""Property test of the command lines: random values for every flag of run_flow, run_siamese and encode either
parse or fail while parsing in one line naming the flag, before any work; never an exception from inside. A value
that parses is one the library takes: run_flow's fit settings make a FlowFitConfig.

Seeded and bounded, so a failure reproduces (the failing flag and value are in the assertion message).
"""
import math
import random

import pytest
from absl import flags

from bert_flow_tf.calibration.flow_fitting import FlowFitConfig
from bert_flow_tf.cli import config_flags
from bert_flow_tf.cli import encode_flags
from bert_flow_tf.cli import run_flow_flags
from bert_flow_tf.cli import siamese_flags

_DEFINE = {"run_flow": run_flow_flags.define_flags, "encode": encode_flags.define_flags,
           "run_siamese": siamese_flags.define_flags}
_REQUIRED = {"encode": ["--input_file=in.txt", "--output_file=out.npy"]}
_NOT_VALUES = {"flagfile", "undefok", "helpfull", "helpshort", "helpxml", "help", "only_check_args", "pdb",
               "pdb_post_mortem", "run_with_pdb", "run_with_profiling", "profile_file", "use_cprofile_for_profiling"}
VALUES_PER_FLAG = 6


def _random_value(rng):
  """One value as a user (or a script gone wrong) might type it."""
  kind = rng.randrange(8)
  if kind == 0:
    return str(rng.choice([0, -1, 1, 2, 3, 7, 64, 10 ** 6, 10 ** 30, -(10 ** 30), 2 ** 63]))
  if kind == 1:
    return repr(rng.choice([0.0, -0.5, 1e-12, 1e308, math.nan, math.inf, -math.inf, 0.15, 2e-5]))
  if kind == 2:
    return rng.choice(["", " ", "nan", "inf", "-inf", "1e309", "0x10", "1_000", "true", "None", "[]", "{}", ",", ",,"])
  if kind == 3:
    return "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(1, 12)))
  if kind == 4:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 12))).decode("latin-1").replace("\0", "")
  if kind == 5:
    return rng.choice(["last-avg", "avg-last-2", "cls,emb-avg", "flow", "sts-b", "all", "target,nli", "whitening-0",
                       "natsv-1000", "config_l2_d2_w32", "original", "ddi", "faithful"])
  if kind == 6:
    return "/" + "/".join(rng.choice(["tmp", "..", "nonexistent", "x" * 300]) for _ in range(3))
  return "a" * rng.choice([1, 1000, 100000])


def _flag_names(script):
  fv = flags.FlagValues()
  _DEFINE[script](fv)
  return sorted(name for name, flag in fv._flags().items() if name == flag.name and name not in _NOT_VALUES)  # pylint: disable=protected-access


@pytest.mark.parametrize("script", sorted(_DEFINE))
def test_random_flag_values_parse_or_fail_in_one_line_naming_the_flag(script):
  rng = random.Random(script)
  outcomes = {"parsed": 0, "refused": 0}
  for name in _flag_names(script):
    for _ in range(VALUES_PER_FLAG):
      value = _random_value(rng)
      fv = flags.FlagValues()
      _DEFINE[script](fv)
      arg = f"--{name}={value}"
      try:
        fv(["prog"] + _REQUIRED.get(script, []) + [arg])
      except flags.Error as e:
        message = str(e)
        assert "\n" not in message and len(message) < 2000 + 2 * len(value), (arg, message)  # absl echoes it too
        assert f"--{name}" in message, (arg, message)
        outcomes["refused"] += 1
      else:
        if script == "run_flow":  # raises on a value the library refuses
          config_flags.config_from_flags(FlowFitConfig, fv, names=run_flow_flags.FIT_FLAGS,
                                         only=tuple(run_flow_flags.FIT_FLAGS))
        outcomes["parsed"] += 1
  assert outcomes["parsed"] and outcomes["refused"], outcomes
