"""Tests of GlowConfig: the original six files, name/path loading, validation."""
import json
import logging

import pytest

from glow import DEFAULT_CONFIG
from glow import GlowConfig
from glow.config import config_names

ORIGINAL = {  # name -> (n_levels, depth, coupling_width) as written in the original files.
    "config_l2_d2_w32": (2, 2, 32), "config_l2_d3_w16": (2, 3, 32), "config_l2_d3_w32": (2, 3, 32),
    "config_l3_d2_w32": (3, 2, 32), "config_l3_d3_w16": (3, 3, 16), "config_l3_d3_w32": (3, 3, 32),
}


def test_the_six_original_configs():
  assert config_names() == sorted(ORIGINAL)
  for name, shape in ORIGINAL.items():
    config = GlowConfig.load(name)
    assert (config.n_levels, config.depth, config.coupling_width) == shape
    assert config.coupling == "additive" and config.permutation is True
    assert config.coupling_dropout == 0.0 and config.activation == "relu"


def test_l2_d3_w16_keeps_width_32_and_warns(caplog):
  with caplog.at_level(logging.WARNING):
    assert GlowConfig.load("config_l2_d3_w16").coupling_width == 32
  assert "coupling_width': 32" in caplog.text
  caplog.clear()
  with caplog.at_level(logging.WARNING):
    GlowConfig.load("config_l2_d3_w32.json")
  assert caplog.text == ""


def test_load_by_path_and_json_round_trip(tmp_path):
  path = tmp_path / "mine.json"
  path.write_text(GlowConfig(coupling="affine", depth=4).to_json_string())
  config = GlowConfig.load(str(path))
  assert config.coupling == "affine" and config.depth == 4
  assert json.loads(config.to_json_string()) == config.to_dict()


@pytest.mark.parametrize("values, message", [
    ({"coupling": "spline"}, "coupling='spline'.*additive"),
    ({"activation": "gatu"}, "activation='gatu'"),
    ({"n_levels": 0}, "n_levels must be a positive int"),
    ({"use_fp16": True}, "use_fp16=True"),
    ({"coupling_width": 32, "widht": 3}, "unknown Glow config fields \\['widht'\\]"),
])
def test_bad_values_fail_with_the_allowed_ones(values, message):
  with pytest.raises(ValueError, match=message):
    GlowConfig.from_dict(values)


def test_default_config_is_a_shipped_one():
  config = GlowConfig.load(DEFAULT_CONFIG)  # the original's --flow_model_config default
  assert (config.n_levels, config.depth, config.coupling_width) == (3, 3, 32)


def test_unknown_name_lists_the_shipped_ones():
  with pytest.raises(ValueError, match="config_l3_d3_w32"):
    GlowConfig.load("config_l9_d9_w9")
