"""Readers for the similarity benchmarks: STS-B, SICK-R and STS 2012-2016 (gold scores, float64).

Formats (see the data folder's MANIFEST.md):
  * STS-B original csv (`stsbenchmark/sts-{train,dev,test}.csv`): tab-separated, no header, fields
    genre, filename, year, id, score, sentence1, sentence2 [, source notes...]. Sentences contain unbalanced
    '"', so lines are split on tabs only. Score in field 4, sentences in fields 5 and 6.
  * STS-B GLUE tsv (`STS-B/{train,dev}.tsv`): header row; sentences in fields 7 and 8, score in field 9.
  * SICK (`SICK_train.txt`, `SICK_trial.txt`, `SICK_test_annotated.txt`): header row; pair_ID, sentence_A,
    sentence_B, relatedness_score (1-5), entailment_judgment. The test file has CRLF line ends.
  * STS12-16 (SentEval layout, `STS/STS1X-en-test/`): `STS.input.<subset>.txt` (two tab-separated sentences;
    STS16 adds two source-note fields) with `STS.gs.<subset>.txt` (one score a line). STS16 keeps the release
    names `STS2016.input.<subset>.txt` / `STS2016.gs.<subset>.txt`. A blank gold line marks an unscored pair:
    the pair is skipped and input and gold stay aligned line by line.
"""
import os
import re

from absl import logging
import numpy as np

from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.utils import errors

STS_YEARS = (12, 13, 14, 15, 16)
_STS_INPUT = re.compile(r"^STS(?:20\d\d)?\.input\.(.+)\.txt$")


def read_stsb_csv(path, name):
  """Reads one STS-B csv of the original release (>= 7 tab-separated fields, no header).

  Args:
    path: str, e.g. ".../stsbenchmark/sts-test.csv".
    name: str, the PairSet name, e.g. "STS-B/test".

  Returns:
    PairSet with float64 labels in [0, 5].
  """
  return _read_scored_rows(path, name, header=False, fields=(7, float("inf")), columns=(5, 6, 4))


def _read_scored_rows(path, name, header, fields, columns):
  """Tab-separated rows -> PairSet. fields: (min, max) count; columns: (sentence a, sentence b, score)."""
  a, b, score = columns
  rows = []
  for i, line in enumerate(pairs_lib.read_lines(path)[int(header):], start=int(header) + 1):
    f = pairs_lib.split_fields(line, path, i, *fields)
    rows.append((f[a], f[b], pairs_lib.parse_score(f[score], path, i)))
  return pairs_lib.make_pairs(name, rows, np.float64)


def read_stsb_glue_tsv(path, name):
  """Reads a GLUE STS-B tsv with labels (train.tsv / dev.tsv): header, sentences 7 and 8, score 9."""
  return _read_scored_rows(path, name, header=True, fields=(10,), columns=(7, 8, 9))


def load_stsb(data_dir):
  """Loads STS-B train/dev/test from `data_dir/stsbenchmark` (or `data_dir/STS-B`).

  Train and dev come from GLUE `train.tsv` / `dev.tsv` when the folder holds them, else from the csv files;
  test always comes from `sts-test.csv` (GLUE's test.tsv has no labels; the original does the same).

  Returns:
    (train, dev, test): three PairSets named "STS-B/train", "STS-B/dev", "STS-B/test".
  """
  folder = pairs_lib.find_dir(data_dir, ["stsbenchmark", "STS-B"])
  splits = []
  for split in ("train", "dev"):
    tsv = os.path.join(folder, f"{split}.tsv")
    if os.path.isfile(tsv):
      splits.append(read_stsb_glue_tsv(tsv, f"STS-B/{split}"))
    else:
      splits.append(read_stsb_csv(os.path.join(folder, f"sts-{split}.csv"), f"STS-B/{split}"))
  splits.append(read_stsb_csv(os.path.join(folder, "sts-test.csv"), "STS-B/test"))
  return tuple(splits)


def read_sick(path, name):
  """Reads one SICK release file (header; 5 fields; relatedness score in field 3, 1-5)."""
  return _read_scored_rows(path, name, header=True, fields=(5,), columns=(1, 2, 3))


def load_sick(data_dir):
  """Loads SICK-R from `data_dir/SICK` (or `data_dir/SICK-R`): train, trial (= dev) and test.

  Returns:
    (train, dev, test): PairSets "SICK-R/train" (4500), "SICK-R/dev" (500), "SICK-R/test" (4927).
  """
  folder = pairs_lib.find_dir(data_dir, ["SICK", "SICK-R"])
  files = (("train", "SICK_train.txt"), ("dev", "SICK_trial.txt"), ("test", "SICK_test_annotated.txt"))
  return tuple(read_sick(os.path.join(folder, f), f"SICK-R/{split}") for split, f in files)


def read_sts_subset(input_path, gold_path, name):
  """Reads one STS12-16 subset: an input file and its gold file, aligned line by line.

  Input lines have 2 tab-separated fields (STS16: 4, the last two are source notes). Blank gold lines are
  unscored pairs and are skipped together with their input line; their count is logged.

  Returns:
    PairSet with float64 labels in [0, 5].
  """
  inputs = pairs_lib.read_lines(input_path)
  golds = pairs_lib.read_lines(gold_path)
  if len(inputs) != len(golds):
    raise errors.UserError(f"{len(inputs)} lines, but {gold_path} has {len(golds)}", input_path)
  rows = []
  for i, (line, gold) in enumerate(zip(inputs, golds)):
    if not gold.strip():
      continue
    f = line.split("\t")
    if len(f) not in (2, 4):
      raise errors.UserError(f"{len(f)} tab-separated fields, expected 2 or 4", f"{input_path}:{i + 1}")
    rows.append((f[0], f[1], pairs_lib.parse_score(gold, gold_path, i + 1)))
  if len(rows) < len(inputs):
    logging.info("%s: skipped %d unscored pairs (blank gold lines)", name, len(inputs) - len(rows))
  return pairs_lib.make_pairs(name, rows, np.float64)


def load_sts_year(data_dir, year):
  """Loads every subset of one STS year, found by listing `data_dir/STS/STS<yy>-en-test`.

  Args:
    data_dir: str, the data root (holding `STS/`).
    year: int, one of 12..16.

  Returns:
    list of PairSets named "STS<yy>/<subset>", sorted by subset name (e.g. STS12: MSRpar, MSRvid,
    SMTeuroparl, surprise.OnWN, surprise.SMTnews).
  """
  if year not in STS_YEARS:
    raise ValueError(f"STS year {year!r} not in {STS_YEARS}")
  folder = os.path.join(data_dir, "STS", f"STS{year}-en-test")
  if not os.path.isdir(folder):
    raise errors.missing_file("missing data folder", folder)
  subsets = []
  for fname in sorted(os.listdir(folder)):
    match = _STS_INPUT.match(fname)
    if not match:
      continue
    gold = os.path.join(folder, fname.replace(".input.", ".gs.", 1))
    subsets.append(read_sts_subset(os.path.join(folder, fname), gold, f"STS{year}/{match.group(1)}"))
  if not subsets:
    raise FileNotFoundError(f"no STS.input.*.txt / STS20XX.input.*.txt files in {folder}")
  return subsets
