"""Records shared by every reader (`PairSet`, `Task`) and the small line-level parsing helpers.

All readers decode UTF-8, split lines on "\n" only and drop one trailing "\r" (so CRLF files such as
`SICK_test_annotated.txt` read like LF files), and keep quotes as plain characters (no CSV quoting).
A malformed row raises `ValueError` naming `file:line` (1-based line numbers).
"""
import dataclasses
import os

import numpy as np

from bert_flow_tf.utils import errors
from bert_flow_tf.utils import io_utils


def consecutive_pairs(n):
  """How n rows (lines, vectors) pair up when nothing else says: row 2i with row 2i + 1, an odd last row with row 0,
  so each row is in one pair. Returns (rows_a, rows_b), int64 [ceil(n / 2)] each."""
  rows_a = np.arange(0, n, 2)
  return rows_a, np.where(rows_a + 1 < n, rows_a + 1, 0)


@dataclasses.dataclass(frozen=True)
class PairSet:
  """One labelled set of sentence pairs (a split, or one subset of an STS year).

  Attributes:
    name: str. "<DATASET>/<split or subset>", e.g. "STS-B/test", "SICK-R/dev", "STS12/MSRpar", "SNLI/dev",
      "QNLI/dev".
    sentences_a: tuple of N str, the first sentence of each pair (premise; QNLI question).
    sentences_b: tuple of N str, the second sentence of each pair (hypothesis; QNLI context sentence).
    labels: np.ndarray [N]. float64 gold similarity for STS-B / SICK-R / STS12-16 (0-5; SICK 1-5);
      int64 class ids for NLI (`nli.NLI_LABELS`: entailment 0, neutral 1, contradiction 2) and
      QNLI (entailment 1, not_entailment 0).
  """
  name: str
  sentences_a: tuple
  sentences_b: tuple
  labels: np.ndarray

  def __post_init__(self):
    n = len(self.sentences_a)
    if len(self.sentences_b) != n or self.labels.shape != (n,):
      raise ValueError(f"{self.name}: {n} sentences_a, {len(self.sentences_b)} sentences_b and labels of "
                       f"shape {self.labels.shape} do not align")

  def __len__(self):
    return len(self.sentences_a)


@dataclasses.dataclass(frozen=True)
class Task:
  """A task as `run_siamese.py` of the original names it, with its splits.

  Attributes:
    name: str, canonical task name ("sts-b", "sick-r", "sts-12".."sts-16", "sts-12-16", "snli", "mnli",
      "allnli", "qnli").
    train, dev, test: lists of `PairSet` (several for STS12-16, one per subset); empty list where absent.
    is_regression: bool, True for similarity scores (STS, SICK-R, QNLI as 0/1 regression target).
    label_min, label_max: float, the label range the original scales regression targets by.
    num_labels: int, 1 for regression, 3 for NLI.
  """
  name: str
  train: list
  dev: list
  test: list
  is_regression: bool
  label_min: float
  label_max: float
  num_labels: int


def require_file(path):
  """Returns `path` if it is a file; raises FileNotFoundError naming it otherwise."""
  if not os.path.isfile(path):
    raise errors.missing_file("missing data file", path)
  return path


def read_lines(path):
  """Lines of a UTF-8 data file without line ends; bytes that are not UTF-8 fail naming file:line."""
  return io_utils.read_lines(require_file(path))


def split_fields(line, path, lineno, min_fields, max_fields=None):
  """Splits `line` on tabs; raises ValueError naming `path:lineno` if the field count is out of range."""
  fields = line.split("\t")
  max_fields = min_fields if max_fields is None else max_fields
  if not min_fields <= len(fields) <= max_fields:
    allowed = str(min_fields) if min_fields == max_fields else f"{min_fields}..{max_fields}"
    raise errors.UserError(f"{len(fields)} tab-separated fields, expected {allowed}", f"{path}:{lineno}")
  return fields


def parse_score(text, path, lineno):
  """Parses a float score; raises ValueError naming `path:lineno` if it is not a finite number."""
  try:
    value = float(text)
  except ValueError:
    raise errors.UserError(f"score {text!r} is not a number", f"{path}:{lineno}") from None
  if not np.isfinite(value):
    raise errors.UserError(f"score {text!r} is not finite", f"{path}:{lineno}")
  return value


def make_pairs(name, rows, dtype):
  """Builds a `PairSet` from (sentence_a, sentence_b, label) tuples; labels cast to `dtype`."""
  a = tuple(r[0] for r in rows)
  b = tuple(r[1] for r in rows)
  labels = np.array([r[2] for r in rows], dtype=dtype)
  return PairSet(name=name, sentences_a=a, sentences_b=b, labels=labels)


def find_dir(data_dir, names):
  """Returns the first existing `data_dir/<name>` folder; FileNotFoundError listing the tried paths."""
  tried = [os.path.join(data_dir, n) for n in names]
  for path in tried:
    if os.path.isdir(path):
      return path
  raise errors.missing_file(f"no data folder found; tried {tried}", data_dir)
