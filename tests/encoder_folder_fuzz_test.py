"""Property test of the loaders: random bytes, sizes and values in a saved folder's files end in one line.

A saved SentenceEncoder folder (whitening, then a flow) is copied and one of its files is damaged at random
(random bytes, a truncation, a flipped byte, a JSON key set to a random value or removed). `SentenceEncoder.load`
must then either load it or raise one of the errors a user is meant to read (errors.UserError, ValueError,
FileNotFoundError), in one line naming the folder or one of its files: never a json/TF/numpy error from inside, and
never a traceback's worth of text. Seeded and bounded, so a failure reproduces.
"""
import json
import os
import random
import shutil

import numpy as np
import pytest

import bert_flow_tf
import glow
from bert_flow_tf import loaders
from bert_flow_tf.calibration import calibrator
from bert_flow_tf.calibration import flow_fitting
from tests import tiny_runs
from tests.embedding.tiny_model import SENTENCES

SentenceEncoder = bert_flow_tf.SentenceEncoder
CASES = 40
VALUES = [None, True, False, 0, 1, -1, 2, 3, 16, 10 ** 6, 10 ** 30, 0.5, float("nan"), float("inf"), "", "x",
          "last-avg", "cls", "whitening", "flow", "../../..", "/", "all-minilm-l6-v2", [], [1, 2], {}, {"a": 1},
          "\u0000\ud800", "0" * 16]


@pytest.fixture(scope="module", name="saved")
def fixture_saved(tmp_path_factory):
  """{"whitening", "flow"}: saved folders of the tiny BERT, and the LoadedModel they were saved from."""
  root = tmp_path_factory.mktemp("fuzz")
  model = loaders.load_model(tiny_runs.tiny_model_dir(root))
  folders = {}
  enc = SentenceEncoder.from_pretrained(model, pooling="last-avg", max_seq_length=16)
  folders["whitening"] = enc.fit(SENTENCES, method="whitening").save(str(root / "whitening"))
  config = root / "flow_config.json"
  config.write_text(json.dumps({"coupling_width": 4, "n_levels": 2, "depth": 2}))
  fit_config = flow_fitting.FlowFitConfig(flow_model_config=str(config))
  flow = glow.Glow(glow.GlowConfig.load(str(config)), enc.embedder.dim, seed=fit_config.seed)
  enc.calibration = calibrator.FlowCalibration(flow, fit_config, {"complete": True, "steps_done": 1, "num_steps": 1})
  folders["flow"] = enc.save(str(root / "flow"))
  return folders, model


def _files(folder):
  return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, names in os.walk(folder) for f in names)


def _damage(rng, path):
  """Damages the file `path` one random way; returns a description for the failure message."""
  data = open(path, "rb").read()
  kind = rng.choice(["random", "truncate", "flip", "json"] if path.endswith(".json") else
                    ["random", "truncate", "flip", "empty"])
  if kind == "random":
    data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 7, 100, 5000])))
  elif kind == "truncate":
    data = data[:rng.randrange(len(data))]
  elif kind == "flip":
    i = rng.randrange(len(data))
    data = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
  elif kind == "empty":
    data = b""
  else:
    info = json.loads(data)
    section = info
    if "flow_config" in info and rng.random() < 0.5:
      section = info[rng.choice(["flow_config", "fit"])]
    key = rng.choice(sorted(section))
    if rng.random() < 0.2:
      del section[key]
      kind = f"json: {key} removed"
    else:
      section[key] = rng.choice(VALUES)
      kind = f"json: {key}={section[key]!r}"
    data = json.dumps(info).encode("utf-8")
  with open(path, "wb") as f:
    f.write(data)
  return kind


@pytest.mark.slow
@pytest.mark.parametrize("calibration", ["whitening", "flow"])
def test_damaged_saved_folders_load_or_fail_in_one_line_naming_the_folder(saved, calibration, tmp_path):
  folders, model = saved
  pristine = folders[calibration]
  rng = random.Random(calibration)
  outcomes = {"loaded": 0, "refused": 0}
  for case in range(CASES):
    folder = str(tmp_path / f"case{case}")
    shutil.copytree(pristine, folder)
    name = rng.choice(_files(folder))
    how = _damage(rng, os.path.join(folder, name))
    # The info file's own damage goes through the model it names; the others skip reloading the same model.
    kwargs = {} if name == "sentence_encoder.json" else {"model": model}
    try:
      loaded = SentenceEncoder.load(folder, **kwargs)
    except (ValueError, FileNotFoundError) as e:
      message = str(e)
      assert type(e).__module__.split(".")[0] in ("builtins", "bert_flow_tf"), (name, how, repr(e))
      assert not isinstance(e, (json.JSONDecodeError, UnicodeError)), (name, how, repr(e))
      assert "\n" not in message and len(message) < 600, (name, how, message)
      assert folder in message, (name, how, message)
      outcomes["refused"] += 1
    else:
      # A damage that loads must not change the vectors: e.g. a flipped byte in an unused part of the file.
      x = np.random.default_rng(case).normal(size=[3, loaded.embedder.dim]).astype(np.float32)
      reference = SentenceEncoder.load(pristine, model=model)
      np.testing.assert_array_equal(loaded.calibration.transform(x), reference.calibration.transform(x),
                                    err_msg=f"{name}: {how}")
      outcomes["loaded"] += 1
  assert outcomes["refused"] >= CASES // 2, outcomes
