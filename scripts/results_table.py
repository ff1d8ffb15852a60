"""Prints one markdown table from several run_flow.py results.json files (one row per pooling and method).

  python scripts/results_table.py exp/minilm_all_tables_emb-avg exp/minilm_all_tables_last-avg ...

STS12-16 show the "all" aggregation (subsets concatenated); values are Spearman x100, QNLI ROC-AUC x100.
"""
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bert_flow_tf.reporting import markdown  # pylint: disable=g-import-not-at-top
from bert_flow_tf.reporting import scores
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.data import DATASETS
from bert_flow_tf.utils import errors


def main(exp_dirs):
  rows = []
  for exp_dir in exp_dirs:
    path = os.path.join(exp_dir, "results.json")
    with open(path, encoding="utf-8") as f:
      try:
        payload = json.load(f)
      except json.JSONDecodeError as e:
        raise errors.UserError(f"not valid JSON ({e.msg})", f"{path}:{e.lineno}") from e
    cells = {}
    for r in payload["results"]:
      if r["aggregation"] in (None, "all"):
        cells.setdefault(scores.space_name(r["method"], r["fit_on"]), {})[r["dataset"]] = r["value"]
    for method, values in cells.items():
      rows.append([payload["sentence_embedding_type"], method] +
                  [f"{values[d]:.2f}" if d in values else "-" for d in DATASETS])
  print(markdown.markdown_table(["pooling", "method"] + list(DATASETS), rows))


if __name__ == "__main__":
  one_line_errors.run(lambda argv: main(argv[1:]))
