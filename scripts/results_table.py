"""Prints one markdown table from several run_flow.py results.json files (one row per pooling and method).

  python scripts/results_table.py exp/minilm_all_tables/emb-avg exp/minilm_all_tables/last-avg ...

STS12-16 show the "all" aggregation (subsets concatenated); values are Spearman x100, QNLI ROC-AUC x100.
`run_flow.py` prints the same table at the end of a run over several poolings.
"""
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from bert_flow_tf.reporting import markdown  # pylint: disable=g-import-not-at-top
from bert_flow_tf.reporting import scores
from bert_flow_tf.cli import one_line_errors
from bert_flow_tf.utils import errors


def main(exp_dirs):
  if not exp_dirs:
    raise errors.UserError("give one or more run_flow.py output folders (each holding results.json)")
  results = []
  for exp_dir in exp_dirs:
    path = os.path.join(exp_dir, "results.json")
    if not os.path.isfile(path):
      raise errors.missing_file("no results.json (not a run_flow.py output folder)", path)
    with open(path, encoding="utf-8") as f:
      try:
        payload = json.load(f)
        results.append((payload["sentence_embedding_type"], [scores.Score(**r) for r in payload["results"]]))
      except json.JSONDecodeError as e:
        raise errors.UserError(f"not valid JSON ({e.msg})", f"{path}:{e.lineno}") from e
      except (KeyError, TypeError, ValueError) as e:
        raise errors.UserError(f"not a run_flow.py results.json ({e})", path) from e
  print(markdown.poolings_table(results), end="")


if __name__ == "__main__":
  one_line_errors.run(lambda argv: main(argv[1:]))
