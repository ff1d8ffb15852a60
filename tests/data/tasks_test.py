"""The task registry on the real data folder."""
import time

import pytest

from bert_flow_tf import evaluation
from bert_flow_tf.data import DATASETS
from bert_flow_tf.data import EVAL_TASKS
from bert_flow_tf.data import load_task
from bert_flow_tf.data import TASK_NAMES
from bert_flow_tf.data import TASKS


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


def test_evaluation_tasks_and_labels_come_from_the_registry():
  assert EVAL_TASKS == ("sts-b", "sick-r", "sts-12", "sts-13", "sts-14", "sts-15", "sts-16", "qnli")
  assert DATASETS == ("STS-B", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16", "QNLI")
  assert [n for n in TASK_NAMES if n not in EVAL_TASKS] == ["sts-12-16", "snli", "mnli", "allnli"]
  assert {TASKS[n].metric for n in EVAL_TASKS} == set(evaluation.METRICS)
  assert (TASKS["qnli"].eval_split, TASKS["sts-b"].eval_split) == ("dev", "test")
