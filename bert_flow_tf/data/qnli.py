"""Reader for QNLI (GLUE tsv), used as unsupervised question-answer entailment scored by AUC.

Format: `QNLI/{train,dev}.tsv` have the header `index, question, sentence, label`; label "entailment" -> 1,
"not_entailment" -> 0 (the paper's convention). GLUE's `test.tsv` has no label column (`index, question,
sentence`); its pairs get label 0, as in the original's `QnliRegressionProcessor`, and only serve as
unlabelled sentences (the target-setting fit with `use_full_for_training` reads train+dev+test, about 116k
pairs in GLUE; only dev is scored). `dev.tsv` is required; `train.tsv` and `test.tsv` are read when present.
As in the original, rows with too few fields are skipped and counted (GLUE's QNLI has a few such lines in some
copies); any other malformed row raises ValueError.
"""
import os

from absl import logging
import numpy as np

from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.utils import errors

QNLI_LABELS = {"not_entailment": 0, "entailment": 1}


def read_qnli_tsv(path, name, labelled=True):
  """Reads a QNLI tsv into a PairSet (question, sentence, int64 label in {0, 1}; 0 for every row unlabelled)."""
  num_fields = 4 if labelled else 3
  rows = []
  skipped = 0
  for i, line in enumerate(pairs_lib.read_lines(path)[1:], start=1):
    fields = line.split("\t")
    if len(fields) < num_fields:
      skipped += 1
      continue
    if len(fields) > num_fields:
      raise errors.UserError(f"{len(fields)} tab-separated fields, expected {num_fields}", f"{path}:{i + 1}")
    if labelled and fields[3] not in QNLI_LABELS:
      raise errors.UserError(f"label {fields[3]!r} not in {sorted(QNLI_LABELS)}", f"{path}:{i + 1}")
    rows.append((fields[1], fields[2], QNLI_LABELS[fields[3]] if labelled else 0))
  if skipped:
    logging.warning("%s: skipped %d incomplete rows", path, skipped)
  return pairs_lib.make_pairs(name, rows, np.int64)


def load_qnli(data_dir):
  """Loads `data_dir/QNLI/dev.tsv` as the PairSet "QNLI/dev" (5463 pairs: 2702 entailment)."""
  folder = pairs_lib.find_dir(data_dir, ["QNLI"])
  return read_qnli_tsv(os.path.join(folder, "dev.tsv"), "QNLI/dev")


def load_qnli_splits(data_dir):
  """(train, dev, test): lists of PairSet; train ("QNLI/train") and test ("QNLI/test") are empty when absent."""
  folder = pairs_lib.find_dir(data_dir, ["QNLI"])
  train, test = (os.path.join(folder, f"{split}.tsv") for split in ("train", "test"))
  return ([read_qnli_tsv(train, "QNLI/train")] if os.path.isfile(train) else [], [load_qnli(data_dir)],
          [read_qnli_tsv(test, "QNLI/test", labelled=False)] if os.path.isfile(test) else [])
