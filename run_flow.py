"""BERT-flow, unsupervised, from a clone: `python run_flow.py --flagfile=...` (installed: `bert-flow-run`).

The flags and the run live in bert_flow_tf/cli/run_flow.py; `main` is here too for tests/entry_driver.py, which
runs it in-process.
"""
from bert_flow_tf.cli.run_flow import main  # noqa: F401  pylint: disable=unused-import
from bert_flow_tf.cli.run_flow import run

if __name__ == "__main__":
  run()
