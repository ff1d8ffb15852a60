"""`python -m bert_flow_tf.beam ...`: the Beam command (installed: `bert-flow-beam`).

The flags and `main` live in bert_flow_tf/cli/beam.py; this module imports nothing of apache_beam, so --help and
the one-line "not installed" error work without it.
"""
from bert_flow_tf.cli.beam import run

if __name__ == "__main__":
  run()
