"""Reader for QNLI (GLUE tsv), used as unsupervised question-answer entailment scored by AUC.

Format (`QNLI/dev.tsv`): header `index, question, sentence, label`; label "entailment" -> 1,
"not_entailment" -> 0 (the paper's convention). As in the original, rows with too few fields are skipped
and counted (GLUE's QNLI has a few such lines in some copies); any other malformed row raises ValueError.
"""
import os

from absl import logging
import numpy as np

from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.utils import errors

QNLI_LABELS = {"not_entailment": 0, "entailment": 1}


def read_qnli_tsv(path, name):
  """Reads a labelled QNLI tsv into a PairSet (question, sentence, int64 label in {0, 1})."""
  rows = []
  skipped = 0
  for i, line in enumerate(pairs_lib.read_lines(path)[1:], start=1):
    fields = line.split("\t")
    if len(fields) < 4:
      skipped += 1
      continue
    if len(fields) > 4:
      raise errors.UserError(f"{len(fields)} tab-separated fields, expected 4", f"{path}:{i + 1}")
    if fields[3] not in QNLI_LABELS:
      raise errors.UserError(f"label {fields[3]!r} not in {sorted(QNLI_LABELS)}", f"{path}:{i + 1}")
    rows.append((fields[1], fields[2], QNLI_LABELS[fields[3]]))
  if skipped:
    logging.warning("%s: skipped %d incomplete rows", path, skipped)
  return pairs_lib.make_pairs(name, rows, np.int64)


def load_qnli(data_dir):
  """Loads `data_dir/QNLI/dev.tsv` as the PairSet "QNLI/dev" (5463 pairs: 2702 entailment)."""
  folder = pairs_lib.find_dir(data_dir, ["QNLI"])
  return read_qnli_tsv(os.path.join(folder, "dev.tsv"), "QNLI/dev")
