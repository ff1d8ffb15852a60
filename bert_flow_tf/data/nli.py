"""Readers for the NLI corpora (SNLI, MultiNLI): premise/hypothesis pairs with int64 class ids.

Class ids follow `NLI_LABELS`: entailment 0, neutral 1, contradiction 2. (The original's label list is
["contradiction", "entailment", "neutral"]; only the id order differs, the classes are the same.)

Formats:
  * SNLI, SentEval form (`SNLI/s1.<split>`, `s2.<split>`, `labels.<split>`): one premise / hypothesis / label
    a line, PTB-tokenized; '-' labels were already dropped by SentEval. Surrounding spaces are stripped.
  * SNLI / MNLI original jsonl (`snli_1.0_<split>.jsonl`, `multinli_1.0_<split>.jsonl`): fields sentence1,
    sentence2, gold_label; gold_label '-' (no annotator majority) is skipped and counted, as the release
    notes ask.
  * MNLI GLUE tsv (`MNLI/train.tsv`, `dev_matched.tsv`, `dev_mismatched.tsv`): header; sentence1 in field 8,
    sentence2 in field 9, gold_label in the last field (the original reads field 10 = label1, which equals
    gold_label on train but is a single annotator's label on dev).
"""
import json
import os

from absl import logging
import numpy as np

from bert_flow_tf.data import pairs as pairs_lib
from bert_flow_tf.utils import errors

NLI_LABELS = ("entailment", "neutral", "contradiction")
_LABEL_IDS = {label: i for i, label in enumerate(NLI_LABELS)}
SNLI_SPLITS = ("train", "dev", "test")
MNLI_SPLITS = ("train", "dev_matched", "dev_mismatched")


def _label_id(label, path, lineno):
  if label not in _LABEL_IDS:
    raise errors.UserError(f"label {label!r} not in {NLI_LABELS}", f"{path}:{lineno}")
  return _LABEL_IDS[label]


def read_senteval_snli(folder, split, name):
  """Reads SentEval's SNLI files `s1.<split>`, `s2.<split>`, `labels.<split>` (aligned line by line)."""
  paths = [os.path.join(folder, f"{p}.{split}") for p in ("s1", "s2", "labels")]
  s1, s2, labels = (pairs_lib.read_lines(p) for p in paths)
  if not len(s1) == len(s2) == len(labels):
    raise ValueError(f"line counts differ: {paths[0]} {len(s1)}, {paths[1]} {len(s2)}, "
                     f"{paths[2]} {len(labels)}")
  rows = [(a.strip(), b.strip(), _label_id(y.strip(), paths[2], i + 1))
          for i, (a, b, y) in enumerate(zip(s1, s2, labels))]
  return pairs_lib.make_pairs(name, rows, np.int64)


def read_nli_jsonl(path, name):
  """Reads an original SNLI/MNLI jsonl file; pairs with gold_label '-' are skipped and the count logged."""
  rows = []
  skipped = 0
  for i, line in enumerate(pairs_lib.read_lines(path)):
    if not line.strip():
      continue
    try:
      record = json.loads(line)
      a, b, label = record["sentence1"], record["sentence2"], record["gold_label"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
      raise errors.UserError(f"not a JSON record with sentence1/sentence2/gold_label ({e})",
                             f"{path}:{i + 1}") from None
    if label == "-":
      skipped += 1
      continue
    rows.append((a, b, _label_id(label, path, i + 1)))
  logging.info("%s: skipped %d pairs with gold_label '-'", name, skipped)
  return pairs_lib.make_pairs(name, rows, np.int64)


def read_mnli_tsv(path, name):
  """Reads a GLUE MNLI tsv with labels: header, sentences in fields 8 and 9, gold label last (>= 12 fields)."""
  rows = []
  for i, line in enumerate(pairs_lib.read_lines(path)[1:], start=1):
    f = pairs_lib.split_fields(line, path, i + 1, 12, 16)
    rows.append((f[8], f[9], _label_id(f[-1], path, i + 1)))
  return pairs_lib.make_pairs(name, rows, np.int64)


def load_snli(data_dir):
  """Loads the SNLI splits present in `data_dir/SNLI` (SentEval files first, else the original jsonl).

  Returns:
    dict split -> PairSet ("SNLI/train", "SNLI/dev", "SNLI/test") for the splits that exist; here dev
    (9842) and test (9824). FileNotFoundError if none exists.
  """
  folder = pairs_lib.find_dir(data_dir, ["SNLI"])
  found = {}
  for split in SNLI_SPLITS:
    if os.path.isfile(os.path.join(folder, f"labels.{split}")):
      found[split] = read_senteval_snli(folder, split, f"SNLI/{split}")
    elif os.path.isfile(os.path.join(folder, f"snli_1.0_{split}.jsonl")):
      found[split] = read_nli_jsonl(os.path.join(folder, f"snli_1.0_{split}.jsonl"), f"SNLI/{split}")
  if not found:
    raise FileNotFoundError(f"no SNLI split in {folder} (labels.<split> or snli_1.0_<split>.jsonl)")
  return found


def load_mnli(data_dir):
  """Loads the MNLI splits present in `data_dir/MNLI` (GLUE tsv first, else `multinli_1.0_<split>.jsonl`).

  Returns:
    dict split -> PairSet ("MNLI/train", "MNLI/dev_matched", "MNLI/dev_mismatched") for the splits that
    exist. FileNotFoundError if none exists.
  """
  folder = pairs_lib.find_dir(data_dir, ["MNLI", "MultiNLI"])
  found = {}
  for split in MNLI_SPLITS:
    tsv = os.path.join(folder, f"{split}.tsv")
    jsonl = os.path.join(folder, f"multinli_1.0_{split}.jsonl")
    if os.path.isfile(tsv):
      found[split] = read_mnli_tsv(tsv, f"MNLI/{split}")
    elif os.path.isfile(jsonl):
      found[split] = read_nli_jsonl(jsonl, f"MNLI/{split}")
  if not found:
    raise FileNotFoundError(f"no MNLI split in {folder} ({{split}}.tsv or multinli_1.0_{{split}}.jsonl)")
  return found
