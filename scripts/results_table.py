"""Prints one markdown table from several run_flow.py results.json files (one row per pooling and method).

  python scripts/results_table.py exp/minilm_all_tables_emb-avg exp/minilm_all_tables_last-avg ...

STS12-16 show the "all" aggregation (subsets concatenated); values are Spearman x100, QNLI ROC-AUC x100.
"""
import json
import os
import sys

DATASETS = ("STS-B", "SICK-R", "STS12", "STS13", "STS14", "STS15", "STS16", "QNLI")


def main(exp_dirs):
  header = ["pooling", "method"] + list(DATASETS)
  print("| " + " | ".join(header) + " |")
  print("|" + "---|" * len(header))
  for exp_dir in exp_dirs:
    with open(os.path.join(exp_dir, "results.json"), encoding="utf-8") as f:
      payload = json.load(f)
    cells = {}
    for r in payload["results"]:
      if r["aggregation"] in (None, "all"):
        method = r["method"] if r["fit_on"] is None else f"{r['method']} ({r['fit_on']})"
        cells.setdefault(method, {})[r["dataset"]] = r["value"]
    for method, values in cells.items():
      row = [payload["sentence_embedding_type"], method]
      row += [f"{values[d]:.2f}" if d in values else "-" for d in DATASETS]
      print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
  main(sys.argv[1:])
