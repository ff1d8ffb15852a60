"""GlowConfig: the hyperparameters of BERT-flow's Glow, read from the original's JSON files.

The six files under `glow/configs/` carry the original's names and fields unchanged
(`config_l{levels}_d{depth}_w{width}.json`). Note that the original `config_l2_d3_w16.json`
says `"coupling_width": 32`; the file is kept as it was and choosing it logs a warning.
"""
import dataclasses
import json
import os
import pathlib
import re
from typing import Any, Dict

from absl import logging

CONFIG_DIR = pathlib.Path(__file__).resolve().parent / "configs"
DEFAULT_CONFIG = "config_l3_d3_w32"  # The original's `--flow_model_config` default.
# Settings of the ops and the optimizer that configs outside glow/ check against without importing TensorFlow.
ACTNORM_INITS = ("original", "ddi")  # ActNorm's initialisations (glow/actnorm.py)
DEFAULT_WEIGHT_DECAY_RATE = 0.01  # AdamWeightDecay's (glow/optimization.py): the original's, for BERT and the flow

_NAME_RE = re.compile(r"^config_l(\d+)_d(\d+)_w(\d+)$")


def config_names():
  """Returns the sorted names of the shipped configs, e.g. ["config_l2_d2_w32", ...]."""
  return sorted(p.stem for p in CONFIG_DIR.glob("config_*.json"))


@dataclasses.dataclass(frozen=True)
class GlowConfig:
  """Hyperparameters of the Glow flow (the original's JSON fields).

  The model reads coupling, coupling_width, coupling_dropout, n_levels, depth and permutation. The other four
  (latent_architecture, activation, top_prior, use_fp16) are validated but never read: they stay because the
  original's six files and every flow.json written so far carry them (dropping them would make those files
  "unknown fields"), and checking them turns a setting this port does not implement (e.g. use_fp16: true) into
  an error instead of a silently different flow.

  Attributes:
    latent_architecture: str. Only "glow_resnet" (the original never reads it).
    activation: str. Coupling-net activation; only "relu" (what every original config uses).
    coupling: str. "additive" (y2 = x2 + NN(x1), the paper's choice) or "affine"
      (y2 = (x2 + shift) * sigmoid(h + 2)).
    coupling_width: int. Hidden width of the coupling net's two 1x1 convs (dense layers).
    coupling_dropout: float. Dropout rate after each hidden layer of the coupling net, in training only.
    top_prior: str. Prior on the top latent; only "normal" (standard normal).
    n_levels: int. Number of levels; a split halves the width between consecutive levels.
    depth: int. Flow steps (actnorm, permutation, coupling) per level.
    permutation: bool. True: fixed channel reversal; False: LU-parametrised invertible 1x1 conv.
    use_fp16: bool. Only False (the original did not implement it either).
  """
  latent_architecture: str = "glow_resnet"
  activation: str = "relu"
  coupling: str = "additive"
  coupling_width: int = 32
  coupling_dropout: float = 0.0
  top_prior: str = "normal"
  n_levels: int = 3
  depth: int = 3
  permutation: bool = True
  use_fp16: bool = False

  def __post_init__(self):
    _check_choice("latent_architecture", self.latent_architecture, ("glow_resnet",))
    _check_choice("activation", self.activation, ("relu",))
    _check_choice("coupling", self.coupling, ("additive", "affine"))
    _check_choice("top_prior", self.top_prior, ("normal",))
    _check_choice("use_fp16", self.use_fp16, (False,))
    for field in ("coupling_width", "n_levels", "depth"):
      value = getattr(self, field)
      if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{field} must be a positive int, got {value!r}")
    if not 0.0 <= self.coupling_dropout < 1.0:
      raise ValueError(f"coupling_dropout must be in [0, 1), got {self.coupling_dropout!r}")
    if not isinstance(self.permutation, bool):
      raise ValueError(f"permutation must be true or false, got {self.permutation!r}")

  @classmethod
  def from_dict(cls, values: Dict[str, Any]) -> "GlowConfig":
    """Builds a config from a dict of the JSON fields; unknown keys raise ValueError."""
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
      raise ValueError(f"unknown Glow config fields {unknown}; allowed: {sorted(known)}")
    return cls(**values)

  @classmethod
  def from_json_file(cls, path) -> "GlowConfig":
    """Reads a JSON file with the original's fields; warns if its name disagrees with its content."""
    path = pathlib.Path(path)
    with open(path, "r", encoding="utf-8") as f:
      config = cls.from_dict(json.load(f))
    _warn_on_name_mismatch(path.stem, config)
    return config

  @classmethod
  def load(cls, name_or_path) -> "GlowConfig":
    """Loads a shipped config by name (e.g. "config_l2_d3_w32") or a JSON file by path.

    Args:
      name_or_path: str or os.PathLike. A name from `config_names()` (".json" optional), or a path
        to a JSON file with the original's fields.

    Returns:
      The GlowConfig.

    Raises:
      ValueError: if it is neither a shipped name nor an existing file.
    """
    text = os.fspath(name_or_path)
    stem = text[:-len(".json")] if text.endswith(".json") else text
    shipped = CONFIG_DIR / f"{stem}.json"
    if os.sep not in text and shipped.is_file():
      return cls.from_json_file(shipped)
    if os.path.isfile(text):
      return cls.from_json_file(text)
    raise ValueError(f"no Glow config {text!r}: give a JSON path or one of {config_names()}")

  def to_dict(self) -> Dict[str, Any]:
    """Returns the JSON fields as a dict."""
    return dataclasses.asdict(self)

  def to_json_string(self) -> str:
    """Returns the config as indented JSON (the original's file layout)."""
    return json.dumps(self.to_dict(), indent=4) + "\n"


def _check_choice(field, value, allowed):
  if value not in allowed or type(value) is not type(allowed[0]):
    raise ValueError(f"{field}={value!r} is not supported; allowed: {list(allowed)}")


def _warn_on_name_mismatch(stem, config):
  """Warns when a `config_lX_dY_wZ` file name disagrees with the file's fields."""
  match = _NAME_RE.match(stem)
  if match is None:
    return
  named = dict(zip(("n_levels", "depth", "coupling_width"), map(int, match.groups())))
  actual = {k: getattr(config, k) for k in named}
  if named != actual:
    logging.warning("Glow config %r is named for %s but its fields say %s (as in the original "
                    "BERT-flow file); the fields are used.", stem, named, actual)
