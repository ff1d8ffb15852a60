"""Task registry: a task name of the original `run_siamese.py` -> its train/dev/test PairSets and label info.

  sts-b       STS-B train / dev / test (regression, labels 0-5).
  sick-r      SICK-R train / trial (as dev) / test (regression, labels 0-5 as the original; gold is 1-5).
  sts-12..16  as the original (`full.txt`): train = dev = test = every subset of that year.
  sts-12-16   train = dev = test = every subset of 2012-2016.
  snli        SNLI train (if present) / dev / test (3 classes).
  mnli        MNLI train / dev = [dev_matched, dev_mismatched] where present; test = [] (GLUE's is unlabelled).
  allnli      as the original: train = MNLI train + SNLI train + dev + test (where present); dev = MNLI dev.
  qnli        QNLI dev only, in `dev` (0/1 regression target as the original's "qnli-regression").
"""
from absl import logging

from bert_flow_tf.data import nli
from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.data import qnli
from bert_flow_tf.data import sts

TASK_NAMES = ("sts-b", "sick-r", "sts-12", "sts-13", "sts-14", "sts-15", "sts-16", "sts-12-16", "snli",
              "mnli", "allnli", "qnli")
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
  name = _ALIASES.get(task_name.lower(), task_name.lower())
  if name not in TASK_NAMES:
    raise ValueError(f"unknown task {task_name!r}; known tasks: {', '.join(TASK_NAMES)}")
  if name == "sts-b":
    return _similarity_task(name, *([s] for s in sts.load_stsb(data_dir)))
  if name == "sick-r":
    return _similarity_task(name, *([s] for s in sts.load_sick(data_dir)))
  if name.startswith("sts-"):
    years = sts.STS_YEARS if name == "sts-12-16" else (int(name[4:]),)
    subsets = [s for year in years for s in sts.load_sts_year(data_dir, year)]
    return _similarity_task(name, subsets, subsets, subsets)
  if name == "snli":
    snli = nli.load_snli(data_dir)
    return _nli_task(name, *([snli[k]] if k in snli else [] for k in nli.SNLI_SPLITS))
  if name == "mnli":
    mnli = nli.load_mnli(data_dir)
    dev = [mnli[k] for k in ("dev_matched", "dev_mismatched") if k in mnli]
    return _nli_task(name, [mnli["train"]] if "train" in mnli else [], dev, [])
  if name == "allnli":
    mnli = _optional(nli.load_mnli, data_dir)
    snli = _optional(nli.load_snli, data_dir)
    train = ([mnli["train"]] if "train" in mnli else []) + [snli[k] for k in nli.SNLI_SPLITS if k in snli]
    dev = [mnli[k] for k in ("dev_matched", "dev_mismatched") if k in mnli]
    if not train and not dev:
      raise FileNotFoundError(f"allnli: neither SNLI nor MNLI files found under {data_dir}")
    return _nli_task(name, train, dev, [])
  return pairs_lib.Task(name=name, train=[], dev=[qnli.load_qnli(data_dir)], test=[], is_regression=True,
                        label_min=0., label_max=1., num_labels=1)
