"""The entry points' shared flags: model flags and their checks, config dataclass -> flags -> config."""
import dataclasses

import pytest
from absl import app
from absl import flags

from bert_flow_tf.cli import config_flags
from bert_flow_tf.cli import model_flags


def _model_flags(*argv):
  fv = flags.FlagValues()
  model_flags.define_model_flags(fv)
  fv(["prog"] + list(argv))
  return fv


def test_model_kwargs_directory_or_tf1_files():
  assert model_flags.model_kwargs(_model_flags()) == {
      "model_dir": "all-minilm-l6-v2", "bert_config_file": None, "vocab_file": None, "init_checkpoint": None,
      "do_lower_case": None, "preprocess_dir": None}
  tf1 = model_flags.model_kwargs(_model_flags("--bert_config_file=c.json", "--vocab_file=v.txt",
                                              "--init_checkpoint=m.ckpt", "--do_lower_case"))
  assert (tf1["model_dir"], tf1["bert_config_file"], tf1["do_lower_case"]) == (None, "c.json", True)


@pytest.mark.parametrize("argv, message", [
    (["--init_checkpoint=m.ckpt"], "missing: --bert_config_file, --vocab_file"),
    (["--bert_config_file=c.json", "--vocab_file=v"], "missing: --init_checkpoint"),
    (["--model_dir=x", "--bert_config_file=c", "--vocab_file=v", "--init_checkpoint=m"], "--model_dir='x' cannot"),
])
def test_model_kwargs_names_the_bad_flags(argv, message):
  with pytest.raises(app.UsageError, match=message):
    model_flags.model_kwargs(_model_flags(*argv))


@dataclasses.dataclass(frozen=True)
class _Config:
  """A config.

  Attributes:
    name: str. Who.
    splits: tuple of str, the splits (a
      continuation line).
    steps, keep: int. Counts.
    rate: float.
    flow: bool. Whether.
    model: str or None. Filled by the caller.
  """
  name: str
  splits: tuple = ("train",)
  steps: int = 10
  keep: int = 3
  rate: float = 0.5
  flow: bool = True
  model: str = None


def test_attribute_docs_joins_continuations_and_shares_entries():
  docs = config_flags.attribute_docs(_Config)
  assert docs["splits"] == "tuple of str, the splits (a continuation line)."
  assert docs["steps"] == docs["keep"] == "int. Counts."
  assert sorted(docs) == sorted(f.name for f in dataclasses.fields(_Config))


def test_config_flags_round_trip():
  fv = flags.FlagValues()
  config_flags.define_config_flags(_Config, skip=("model",), defaults={"flow": False}, flag_values=fv)
  assert "model" not in fv and fv["steps"].help == "int. Counts."
  fv(["prog", "--name=a", "--splits=dev,test", "--rate=0.25"])
  config = config_flags.config_from_flags(_Config, fv, model="m")
  assert config == _Config(name="a", splits=("dev", "test"), steps=10, keep=3, rate=0.25, flow=False, model="m")


def test_config_flags_refuse_unknown_names_and_types():
  with pytest.raises(ValueError, match="no field\\(s\\) modle"):
    config_flags.define_config_flags(_Config, skip=("modle",), flag_values=flags.FlagValues())

  @dataclasses.dataclass
  class Odd:
    """Attributes:
      x: dict. No flag kind.
    """
    x: dict = None

  with pytest.raises(TypeError, match="Odd.x"):
    config_flags.define_config_flags(Odd, flag_values=flags.FlagValues())
