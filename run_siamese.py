"""Siamese fine-tuning, from a clone: `python run_siamese.py --flagfile=...` (installed: `bert-flow-siamese`).

The flags and the run live in bert_flow_tf/cli/run_siamese.py; `main` is here too for tests/entry_driver.py, which
runs it in-process.
"""
from bert_flow_tf.cli.run_siamese import main  # noqa: F401  pylint: disable=unused-import
from bert_flow_tf.cli.run_siamese import run

if __name__ == "__main__":
  run()
