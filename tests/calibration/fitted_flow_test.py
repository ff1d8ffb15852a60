"""calibration.fitted_flow: a flow folder is restored strictly, and a broken flow.json is one line naming it."""
import json
import os

import numpy as np
import pytest

import glow
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import fitted_flow
from bert_flow_tf.calibration import flow_fitting
from bert_flow_tf.calibration import pair_sources
from bert_flow_tf.utils import errors

DIM = 8


@pytest.fixture(name="flow_dir")
def fixture_flow_dir(tmp_path):
  """A finished flow folder of a depth-2 Glow over width 8, as `fitted_flow.save` writes it."""
  config = tmp_path / "flow_config.json"
  config.write_text(json.dumps({"coupling_width": 4, "n_levels": 2, "depth": 2}))
  fit_config = flow_fitting.FlowFitConfig(flow_model_config=str(config), seed=3)
  flow = glow.Glow(glow.GlowConfig.load(str(config)), DIM, seed=3)
  for variable in flow.trainable_variables:  # not the initial values: a restore that skips a variable shows
    variable.assign(np.random.default_rng(len(variable.name)).normal(size=variable.shape) * 0.1)
  folder = str(tmp_path / "flow")
  fitted_flow.save(flow, folder, fit_config, {"complete": True, "steps_done": 1, "num_steps": 1})
  return folder, flow


def _edit(folder, edit):
  path = os.path.join(folder, fitted_flow.INFO_FILE)
  with open(path, encoding="utf-8") as f:
    info = json.load(f)
  edit(info)
  with open(path, "w", encoding="utf-8") as f:
    json.dump(info, f)


def test_an_untouched_flow_folder_loads_exactly(flow_dir):
  folder, flow = flow_dir
  x = np.random.default_rng(0).normal(size=[5, DIM]).astype(np.float32)
  np.testing.assert_array_equal(glow.transform(fitted_flow.load_glow(folder), x), glow.transform(flow, x))


@pytest.mark.parametrize("field,value,what", [
    ("depth", 3, r"variable levels/0/2/\S+ is missing from the checkpoint"),
    ("depth", 1, r"variable levels/0/1/\S+ is in the checkpoint but not in this flow"),
    ("coupling_width", 6, r"variable levels/0/0/ops/2/nn/W_1 is of shape \[4, 4\] in the checkpoint, \[4, 6\]"),
])
def test_an_edited_flow_config_is_refused_naming_the_first_variable_that_differs(flow_dir, field, value, what):
  folder, _ = flow_dir
  _edit(folder, lambda info: info["flow_config"].update({field: value}))
  with pytest.raises(errors.UserError, match=what) as refused:
    fitted_flow.load_glow(folder)
  message = str(refused.value)
  assert "\n" not in message and message.startswith(os.path.join(folder, "flow-1"))


@pytest.mark.slow
def test_a_fit_checkpoint_with_the_optimizer_state_beside_the_flow_loads(tmp_path):
  x = np.random.default_rng(1).normal(size=[16, DIM]).astype(np.float32)
  config = tmp_path / "flow_config.json"
  config.write_text(json.dumps({"coupling_width": 4, "n_levels": 2, "depth": 1}))
  fit_config = flow_fitting.FlowFitConfig(flow_model_config=str(config), batch_size=4)
  flow, _ = flow_fitting.fit_flow(pair_sources.CachedPairs(x[:8], x[8:]), fit_config, str(tmp_path / "fit"))
  loaded = fitted_flow.load_glow(str(tmp_path / "fit"))
  np.testing.assert_array_equal(glow.transform(loaded, x), glow.transform(flow, x))


@pytest.mark.parametrize("text,what", [
    ('{"dim": 8, "fit": {}}', r'"flow_config" must be a JSON object'),
    ('{"dim": 8, "flow_config": {}}', r'"fit" must be a JSON object'),
    ('{"dim": "8", "flow_config": {}, "fit": {}}', r'"dim" must be an int >= 2'),
    ('[1, 2]', "expected a JSON object, got list"),
    ('{"dim": 8,', "not valid JSON"),
    (b'\xff\xfe{}', "not valid UTF-8 JSON"),
])
def test_a_broken_flow_json_is_one_line_naming_it(flow_dir, text, what):
  folder, _ = flow_dir
  path = os.path.join(folder, fitted_flow.INFO_FILE)
  with open(path, "wb") as f:
    f.write(text if isinstance(text, bytes) else text.encode("utf-8"))
  for load in (fitted_flow.load_glow, calibrator.load_calibration):
    with pytest.raises(errors.UserError, match=what) as refused:
      load(folder)
    assert "\n" not in str(refused.value) and str(refused.value).startswith(path)


def test_a_fit_section_that_is_not_a_fit_config_is_one_line(flow_dir):
  folder, _ = flow_dir
  _edit(folder, lambda info: info["fit"].update({"bogus": 1}))
  with pytest.raises(errors.UserError, match=r'"fit" is not a flow fit config') as refused:
    calibrator.load_calibration(folder)
  assert str(refused.value).startswith(os.path.join(folder, fitted_flow.INFO_FILE))
