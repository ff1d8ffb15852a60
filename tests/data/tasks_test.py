"""The task registry on the real data folder."""
import time

import pytest

from bert_flow_tf.data import load_task
from bert_flow_tf.data import TASK_NAMES


@pytest.mark.slow
def test_every_task_loads_fast(data_dir):
  start = time.perf_counter()
  tasks = {}
  for name in TASK_NAMES:
    if name == "mnli":
      with pytest.raises(FileNotFoundError, match="MNLI"):
        load_task(name, str(data_dir))
      continue
    tasks[name] = load_task(name, str(data_dir))
  assert time.perf_counter() - start < 3.
  assert [len(s) for s in tasks["sts-b"].test] == [1379]
  assert tasks["sts-12"].train == tasks["sts-12"].dev == tasks["sts-12"].test
  assert sum(len(s) for s in tasks["sts-12"].test) == 3108
  assert sum(len(s) for s in tasks["sts-12-16"].test) == 3108 + 1500 + 3750 + 3000 + 1186
  assert tasks["snli"].train == [] and [s.name for s in tasks["snli"].dev] == ["SNLI/dev"]
  assert [s.name for s in tasks["allnli"].train] == ["SNLI/dev", "SNLI/test"]
  assert [s.name for s in tasks["qnli"].dev] == ["QNLI/dev"]
  sick = tasks["sick-r"]
  assert (sick.is_regression, sick.label_min, sick.label_max, sick.num_labels) == (True, 0., 5., 1)
  assert (tasks["snli"].is_regression, tasks["snli"].num_labels) == (False, 3)
  assert load_task("QNLI-Regression", str(data_dir)).name == "qnli"


def test_unknown_task_lists_known_ones(tmp_path):
  with pytest.raises(ValueError, match="known tasks: sts-b, sick-r"):
    load_task("sts-17", str(tmp_path))
