"""Task registry: a task name of the original `run_siamese.py` -> its reader (train/dev/test PairSets and label
info) and, for the evaluation tasks, the dataset name, split and metric of the results tables.

  sts-b       STS-B train / dev / test (regression, labels 0-5).
  sick-r      SICK-R train / trial (as dev) / test (regression, labels 0-5 as the original; gold is 1-5).
  sts-12..16  as the original (`full.txt`): train = dev = test = every subset of that year.
  sts-12-16   train = dev = test = every subset of 2012-2016.
  snli        SNLI train (if present) / dev / test (3 classes).
  mnli        MNLI train / dev = [dev_matched, dev_mismatched] where present; test = [] (GLUE's is unlabelled).
  allnli      as the original: train = MNLI train + SNLI train + dev + test (where present); dev = MNLI dev.
  qnli        QNLI dev, plus train and (unlabelled) test when present (0/1 regression target as the original's
              "qnli-regression"); only dev is scored.
"""
import dataclasses
import functools
from typing import Callable, Optional

from absl import logging

from bert_flow_tf.data import custom
from bert_flow_tf.data import nli
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.data import qnli
from bert_flow_tf.data import sts

_ALIASES = {"qnli-regression": "qnli"}


def _similarity_task(name, train, dev, test):
  return pairs_lib.Task(name=name, train=list(train), dev=list(dev), test=list(test), is_regression=True,
                        label_min=0., label_max=5., num_labels=1)


def _nli_task(name, train, dev, test):
  return pairs_lib.Task(name=name, train=list(train), dev=list(dev), test=list(test), is_regression=False,
                        label_min=0., label_max=1., num_labels=len(nli.NLI_LABELS))


def _optional(loader, data_dir):
  """Runs a loader that returns a dict of splits; {} (and a log line) if its folder or files are absent."""
  try:
    return loader(data_dir)
  except FileNotFoundError as e:
    logging.info("not found, skipped: %s", e)
    return {}


# ---- one reader per task: (name, data_dir) -> Task ------------------------------------------------------------

def _read_stsb(name, data_dir):
  return _similarity_task(name, *([s] for s in sts.load_stsb(data_dir)))


def _read_sick(name, data_dir):
  return _similarity_task(name, *([s] for s in sts.load_sick(data_dir)))


def _read_sts_years(name, data_dir, years):
  subsets = [s for year in years for s in sts.load_sts_year(data_dir, year)]
  return _similarity_task(name, subsets, subsets, subsets)


def _read_snli(name, data_dir):
  snli = nli.load_snli(data_dir)
  return _nli_task(name, *([snli[k]] if k in snli else [] for k in nli.SNLI_SPLITS))


def _read_mnli(name, data_dir):
  mnli = nli.load_mnli(data_dir)
  dev = [mnli[k] for k in ("dev_matched", "dev_mismatched") if k in mnli]
  return _nli_task(name, [mnli["train"]] if "train" in mnli else [], dev, [])


def _read_allnli(name, data_dir):
  mnli = _optional(nli.load_mnli, data_dir)
  snli = _optional(nli.load_snli, data_dir)
  train = ([mnli["train"]] if "train" in mnli else []) + [snli[k] for k in nli.SNLI_SPLITS if k in snli]
  dev = [mnli[k] for k in ("dev_matched", "dev_mismatched") if k in mnli]
  if not train and not dev:
    raise FileNotFoundError(f"allnli: neither SNLI nor MNLI files found under {data_dir}")
  return _nli_task(name, train, dev, [])


def _read_qnli(name, data_dir):
  train, dev, test = qnli.load_qnli_splits(data_dir)
  return pairs_lib.Task(name=name, train=train, dev=dev, test=test, is_regression=True,
                        label_min=0., label_max=1., num_labels=1)


@dataclasses.dataclass(frozen=True)
class TaskInfo:
  """One entry of the registry.

  Attributes:
    reader: callable (name, data_dir) -> Task, every split of the task.
    dataset: str or None. The dataset's name in results tables ("STS-B"); None for a task that is only trained
      on (never evaluated by run_flow.py).
    eval_split: str or None. The split evaluated: "test", or "dev" for QNLI (GLUE's test labels are private).
    metric: str or None. "spearman" (of the cosine against the gold score) or "auc" (QNLI's 0/1 labels).
  """
  reader: Callable[[str, str], pairs_lib.Task]
  dataset: Optional[str] = None
  eval_split: Optional[str] = None
  metric: Optional[str] = None


# Task name -> TaskInfo: the one list of task names. Evaluation tasks are those with a label, in this order.
TASKS = {
    "sts-b": TaskInfo(_read_stsb, "STS-B", "test", "spearman"),
    "sick-r": TaskInfo(_read_sick, "SICK-R", "test", "spearman"),
    **{f"sts-{year}": TaskInfo(functools.partial(_read_sts_years, years=(year,)), f"STS{year}", "test",
                               "spearman") for year in sts.STS_YEARS},
    "sts-12-16": TaskInfo(functools.partial(_read_sts_years, years=sts.STS_YEARS)),
    "snli": TaskInfo(_read_snli),
    "mnli": TaskInfo(_read_mnli),
    "allnli": TaskInfo(_read_allnli),
    "qnli": TaskInfo(_read_qnli, "QNLI", "dev", "auc"),
}
TASK_NAMES = tuple(TASKS)
EVAL_TASKS = tuple(name for name, info in TASKS.items() if info.dataset is not None)
DATASETS = tuple(TASKS[name].dataset for name in EVAL_TASKS)  # the benchmarks' dataset names, in table order
# Every dataset name a results table may hold, in table order: the benchmarks, then the user's own scored pairs.
RESULT_DATASETS = DATASETS + (custom.DATASET,)


def load_task(task_name, data_dir):
  """Loads every split of one task from a data root laid out like /work/shared/data.

  Args:
    task_name: str, one of TASK_NAMES (case-insensitive; "qnli-regression" is accepted for "qnli").
    data_dir: str, the folder holding `stsbenchmark/` (or `STS-B/`), `SICK/` (or `SICK-R/`), `STS/`,
      `SNLI/`, `MNLI/`, `QNLI/`.

  Returns:
    Task.

  Raises:
    ValueError: unknown task name. FileNotFoundError: a needed file is missing (the message names it).
  """
  name = task_key(task_name)
  return TASKS[name].reader(name, data_dir)


def task_key(task_name):
  """The registry name of `task_name` (case-insensitive; "qnli-regression" -> "qnli"); ValueError if unknown."""
  name = _ALIASES.get(task_name.lower(), task_name.lower())
  if name not in TASKS:
    raise ValueError(f"unknown task_name {task_name!r}; known tasks: {', '.join(TASK_NAMES)}")
  return name
