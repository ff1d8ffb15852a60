"""A user's own data: sentences (or sentence pairs) to fit calibrations on, scored pairs to evaluate them on.

Training file (`run_flow.py --train_file`), in one of two layouts (`--train_format`; "auto" picks "pairs" when the
first non-blank line holds a tab, else "lines"):

  lines   one sentence per line. Consecutive lines form the pairs of the flow's pair loss (lines 1 and 2, 3 and
          4, ...; an odd last line is paired with the first), so each sentence is seen once per epoch.
  pairs   tab-separated `sentence1 <TAB> sentence2 [<TAB> score]`: the original's pairs (NLI or STS style); a
          score column is checked but not used.

Evaluation file (`--eval_file`): tab-separated `sentence1 <TAB> sentence2 <TAB> score`, any numeric score scale
(Spearman uses ranks only), at least 2 pairs. Without a training file, the flow is fitted on these pairs, as the
benchmarks' target setting fits on their own test sentences.

In every file: UTF-8, "\\n" or "\\r\\n" line ends, blank lines skipped (the count is logged), quotes are plain
characters. A first line with three fields whose score is not a number is a header and skipped (so a two-column
pairs file cannot have one). Files are read as a stream, one line at a time, and each sentence is kept once.
A bad file raises ValueError naming file:line (`pairs.split_fields`, `pairs.parse_score`,
`io_utils.iter_lines`), or naming the file when it holds no sentence at all.
"""
import dataclasses
import itertools
from typing import Optional

import numpy as np
from absl import logging

from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.utils import io_utils

DATASET = "custom"  # the dataset's name in results tables, flows/target-custom and isotropy.json
TRAIN_FORMATS = ("auto", "lines", "pairs")


@dataclasses.dataclass(frozen=True)
class CustomData:
  """A user's files, read.

  Attributes:
    train: list of one PairSet ("custom/train"; labels NaN): the pairs calibrations are fitted on.
    eval: PairSet ("custom/eval"; float64 gold scores) or None.
  """
  train: list
  eval: Optional[pairs_lib.PairSet]


def _nonblank_lines(path):
  """Yields (line number, line) of the lines of `path` that are not blank; logs how many were skipped."""
  blank = 0
  for lineno, line in io_utils.iter_lines(path):
    if line.strip():
      yield lineno, line
    else:
      blank += 1
  if blank:
    logging.info("%s: skipped %d blank lines", path, blank)


def _is_number(text):
  try:
    float(text)
  except ValueError:
    return False
  return True


def _read_pairs(path, rows, name, min_fields):
  """A PairSet from tab-separated rows (see the module notes); labels = the scores, NaN where absent."""
  a, b, scores = [], [], []
  for i, (lineno, line) in enumerate(rows):
    fields = pairs_lib.split_fields(line, path, lineno, min_fields, 3)
    if i == 0 and len(fields) == 3 and not _is_number(fields[2]):
      logging.info("%s:%d: header %r skipped", path, lineno, fields)
      continue
    a.append(fields[0])
    b.append(fields[1])
    scores.append(pairs_lib.parse_score(fields[2], path, lineno) if len(fields) == 3 else np.nan)
  return pairs_lib.PairSet(name=name, sentences_a=tuple(a), sentences_b=tuple(b),
                           labels=np.array(scores, np.float64))


def _pair_lines(rows, name):
  """A PairSet of consecutive lines (1 with 2, 3 with 4, ...; an odd last one with the first); labels NaN."""
  lines = [line for _, line in rows]
  rows_a, rows_b = pairs_lib.consecutive_pairs(len(lines))
  return pairs_lib.PairSet(name=name, sentences_a=tuple(lines[i] for i in rows_a),
                           sentences_b=tuple(lines[i] for i in rows_b), labels=np.full(len(rows_a), np.nan))


def _first_row(path, rows):
  first = next(rows, None)
  if first is None:
    raise ValueError(f"{path}: no sentences (the file is empty or blank)")
  return first, itertools.chain([first], rows)


def read_train(path, train_format="auto"):
  """The training pairs of a sentences file or a pairs TSV.

  Args:
    path: str, a UTF-8 text file (see the module notes).
    train_format: "auto", "lines" or "pairs".

  Returns:
    PairSet "custom/train" with NaN labels for lines, the scores (or NaN) for pairs.
  """
  if train_format not in TRAIN_FORMATS:
    raise ValueError(f"train format {train_format!r}; allowed: {', '.join(TRAIN_FORMATS)}")
  (lineno, line), rows = _first_row(path, _nonblank_lines(path))
  if train_format == "auto":
    train_format = "pairs" if "\t" in line else "lines"
    logging.info("%s: read as %s (line %d has %s)", path, train_format, lineno,
                 "a tab" if train_format == "pairs" else "no tab")
  name = f"{DATASET}/train"
  return _pair_lines(rows, name) if train_format == "lines" else _read_pairs(path, rows, name, min_fields=2)


def read_eval(path):
  """The scored pairs of an evaluation TSV (sentence1, sentence2, score). Returns PairSet "custom/eval"."""
  _, rows = _first_row(path, _nonblank_lines(path))
  pairs = _read_pairs(path, rows, f"{DATASET}/eval", min_fields=3)
  if len(pairs) < 2:
    raise ValueError(f"{path}: {len(pairs)} scored pair(s); Spearman needs at least 2")
  return pairs


def load_custom(train_file=None, eval_file=None, train_format="auto"):
  """Reads a user's training and/or evaluation file.

  Args:
    train_file: str or None, sentences or pairs to fit on.
    eval_file: str or None, scored pairs to evaluate on (and to fit on when there is no train_file).
    train_format: "auto", "lines" or "pairs" (train_file only).

  Returns:
    CustomData, or None when neither file is given.
  """
  if train_file is None and eval_file is None:
    return None
  scored = read_eval(eval_file) if eval_file else None
  train = read_train(train_file, train_format) if train_file else scored
  logging.info("own data: %d training pairs (%s)%s", len(train), train_file or eval_file,
               f", {len(scored)} scored pairs ({eval_file})" if scored is not None else "")
  return CustomData(train=[train], eval=scored)
