"""Prints one markdown table from several run_flow.py results.json files (one row per pooling and method).

  python scripts/results_table.py exp/minilm_all_tables_emb-avg exp/minilm_all_tables_last-avg ...

STS12-16 show the "all" aggregation (subsets concatenated); values are Spearman x100, QNLI ROC-AUC x100.
"""
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bert_flow_tf import evaluation  # pylint: disable=g-import-not-at-top
from bert_flow_tf.data import DATASETS


def main(exp_dirs):
  rows = []
  for exp_dir in exp_dirs:
    with open(os.path.join(exp_dir, "results.json"), encoding="utf-8") as f:
      payload = json.load(f)
    cells = {}
    for r in payload["results"]:
      if r["aggregation"] in (None, "all"):
        cells.setdefault(evaluation.method_label(r["method"], r["fit_on"]), {})[r["dataset"]] = r["value"]
    for method, values in cells.items():
      rows.append([payload["sentence_embedding_type"], method] +
                  [f"{values[d]:.2f}" if d in values else "-" for d in DATASETS])
  print(evaluation.markdown_table(["pooling", "method"] + list(DATASETS), rows))


if __name__ == "__main__":
  main(sys.argv[1:])
