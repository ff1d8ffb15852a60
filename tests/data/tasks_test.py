"""The task registry on the real data files, in a folder that holds exactly the sets this repo was built with."""
import pytest

from bert_flow_tf.reporting import scores
from bert_flow_tf.data import DATASETS
from bert_flow_tf.data import EVAL_TASKS
from bert_flow_tf.data import load_task
from bert_flow_tf.data import TASK_NAMES
from bert_flow_tf.data import TASKS


SNLI_FILES = [f"{column}.{split}" for column in ("s1", "s2", "labels") for split in ("dev", "test")]


@pytest.fixture
def known_data_dir(data_dir, tmp_path):
  """Links to the real STS-B, SICK, STS12-16, QNLI and SNLI dev/test files: no MNLI, no SNLI train.

  The expectations below hold for this layout however many more sets are added to the shared data folder.
  """
  for folder in ("stsbenchmark", "SICK", "STS", "QNLI"):
    (tmp_path / folder).symlink_to(data_dir / folder, target_is_directory=True)
  (tmp_path / "SNLI").mkdir()
  for name in SNLI_FILES:
    (tmp_path / "SNLI" / name).symlink_to(data_dir / "SNLI" / name)
  return tmp_path


def test_every_task_loads(known_data_dir):
  tasks = {}
  for name in TASK_NAMES:
    if name == "mnli":
      with pytest.raises(FileNotFoundError, match="MNLI"):
        load_task(name, str(known_data_dir))
      continue
    tasks[name] = load_task(name, str(known_data_dir))
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
  assert load_task("QNLI-Regression", str(known_data_dir)).name == "qnli"


def test_unknown_task_lists_known_ones(tmp_path):
  with pytest.raises(ValueError, match="known tasks: sts-b, sick-r"):
    load_task("sts-17", str(tmp_path))


def test_evaluation_tasks_and_labels_come_from_the_registry():
  assert EVAL_TASKS == ("sts-b", "sick-r", "sts-12", "sts-13", "sts-14", "sts-15", "sts-16", "qnli")
  assert DATASETS == ("STS-B", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16", "QNLI")
  assert [n for n in TASK_NAMES if n not in EVAL_TASKS] == ["sts-12-16", "snli", "mnli", "allnli"]
  assert {TASKS[n].metric for n in EVAL_TASKS} == set(scores.METRICS)
  assert (TASKS["qnli"].eval_split, TASKS["sts-b"].eval_split) == ("dev", "test")
