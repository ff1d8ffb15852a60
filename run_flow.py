"""BERT-flow, unsupervised, from a clone: `python run_flow.py --flagfile=...` (installed: `bert-flow-run`).

The flags and the run live in bert_flow_tf/cli/run_flow.py.
"""
from bert_flow_tf.cli import run_flow

if __name__ == "__main__":
  run_flow.run()
