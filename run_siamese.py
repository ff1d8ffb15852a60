"""Siamese fine-tuning, from a clone: `python run_siamese.py --flagfile=...` (installed: `bert-flow-siamese`).

The flags and the run live in bert_flow_tf/cli/run_siamese.py.
"""
from bert_flow_tf.cli import run_siamese

if __name__ == "__main__":
  run_siamese.run()
